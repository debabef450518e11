"""Versions of a pair, and review decisions.

- pair.version: the version of the pair's content (1 first; every existing pair is at 1).
- pair_version: the earlier versions of a pair's content, each kept whole when a later one
  replaced it (import-pairs --update, or a reviewer's revision).
- assignment.pair_version, annotation.pair_version: the version that was shown (1 for every
  existing row). An annotator may answer each version of a pair once: the unique keys of both
  tables take the version.
- review_decision: maintainers' decisions (keep, drop, revise) on a version of a pair.

Revision ID: 0010_pair_versions
Revises: 0009_lease
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_pair_versions"
down_revision = "0009_lease"
branch_labels = None
depends_on = None

_KEY = ["study_id", "pair_id", "annotator_id"]


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy of `pair` would trip the foreign keys.
    op.add_column("pair", sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
    op.create_table(
        "pair_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=True),
        sa.Column("rubric_aspects", sa.JSON(), nullable=True),
        sa.Column("narrative", sa.Text(), nullable=False),
        sa.Column("category", sa.String(), nullable=False),
        sa.Column("chosen", sa.Text(), nullable=False),
        sa.Column("rejected", sa.Text(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.Column("record_hash", sa.String(), nullable=False),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("replaced_by", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["pair_id"], ["pair.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pair_id", "version", name="uq_pair_version"),
    )
    # annotation and assignment are referenced by no other table: SQLite's batch copy of them
    # (the only way it changes a unique key) trips no foreign key.
    for table, constraint in (("annotation", "uq_annotation"), ("assignment", "uq_assignment")):
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("pair_version", sa.Integer(), nullable=False, server_default="1")
            )
            batch.drop_constraint(constraint, type_="unique")
            batch.create_unique_constraint(constraint, [*_KEY, "pair_version"])
    op.create_table(
        "review_decision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("pair_version", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("category", sa.String(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["pair_id"], ["pair.id"]),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_review_decision_pair", "review_decision", ["study_id", "pair_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_review_decision_pair", table_name="review_decision")
    op.drop_table("review_decision")
    for table, constraint in (("assignment", "uq_assignment"), ("annotation", "uq_annotation")):
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(constraint, type_="unique")
            batch.create_unique_constraint(constraint, _KEY)
            batch.drop_column("pair_version")
    op.drop_table("pair_version")
    with op.batch_alter_table("pair") as batch:
        batch.drop_column("version")
