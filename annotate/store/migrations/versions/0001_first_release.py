"""First release: study, annotator, pair, annotation, assignment.

Written out explicitly (not metadata.create_all) so that this revision stays the first
release's schema whatever annotate/store/models.py becomes later. Timestamps are stored with a time
zone (sqlmodel's UTCDateTime is a DateTime(timezone=True) underneath).

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("overlap_target", sa.Integer(), nullable=False),
        sa.Column("allow_ties", sa.Boolean(), nullable=False),
        sa.Column("scale_min", sa.Integer(), nullable=False),
        sa.Column("scale_max", sa.Integer(), nullable=False),
        sa.Column("scale_min_label", sa.String(), nullable=False),
        sa.Column("scale_max_label", sa.String(), nullable=False),
        sa.Column("dimensions", sa.JSON(), nullable=True),
        sa.Column("reasons", sa.JSON(), nullable=True),
        sa.Column("show_narrative", sa.Boolean(), nullable=False),
        sa.Column("show_profile", sa.Boolean(), nullable=False),
        sa.Column("guidelines", sa.Text(), nullable=False),
        sa.Column("qualification_gold", sa.Integer(), nullable=False),
        sa.Column("allow_prolific", sa.Boolean(), nullable=False),
        sa.Column("prolific_completion_code", sa.String(), nullable=True),
        sa.Column("items_per_annotator", sa.Integer(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_study_name"), "study", ["name"], unique=True)

    op.create_table(
        "annotator",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=True),
        sa.Column("email", sa.String(), nullable=True),
        sa.Column("external_id", sa.String(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("guidelines_seen", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_annotator_email"), "annotator", ["email"], unique=False)
    op.create_index(op.f("ix_annotator_external_id"), "annotator", ["external_id"], unique=False)
    op.create_index(op.f("ix_annotator_name"), "annotator", ["name"], unique=True)
    op.create_index(op.f("ix_annotator_token_hash"), "annotator", ["token_hash"], unique=True)

    op.create_table(
        "pair",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_key", sa.String(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=True),
        sa.Column("rubric_aspects", sa.JSON(), nullable=True),
        sa.Column("narrative", sa.Text(), nullable=False),
        sa.Column("category", sa.String(), nullable=False),
        sa.Column("chosen", sa.Text(), nullable=False),
        sa.Column("rejected", sa.Text(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.Column("record_hash", sa.String(), nullable=False),
        sa.Column("n_assigned", sa.Integer(), nullable=False),
        sa.Column("is_gold", sa.Boolean(), nullable=False),
        sa.Column("gold_answer", sa.String(), nullable=True),
        sa.Column("imported_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "pair_key", name="uq_pair_study_key"),
    )
    op.create_index(
        "ix_pair_queue", "pair", ["study_id", "is_gold", "n_assigned", "position"], unique=False
    )

    op.create_table(
        "annotation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("preference", sa.String(), nullable=False),
        sa.Column("chosen_position", sa.String(), nullable=True),
        sa.Column("correctness_chosen", sa.Integer(), nullable=True),
        sa.Column("relevance_chosen", sa.Integer(), nullable=True),
        sa.Column("helpfulness_chosen", sa.Integer(), nullable=True),
        sa.Column("correctness_rejected", sa.Integer(), nullable=True),
        sa.Column("relevance_rejected", sa.Integer(), nullable=True),
        sa.Column("helpfulness_rejected", sa.Integer(), nullable=True),
        sa.Column("main_reason", sa.String(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("submitted_at", TIMESTAMP, nullable=True),
        sa.Column("source", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotator.id"],
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"],
            ["pair.id"],
        ),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "pair_id", "annotator_id", name="uq_annotation"),
    )
    op.create_index(
        op.f("ix_annotation_annotator_id"), "annotation", ["annotator_id"], unique=False
    )
    op.create_index(op.f("ix_annotation_pair_id"), "annotation", ["pair_id"], unique=False)
    op.create_index(op.f("ix_annotation_study_id"), "annotation", ["study_id"], unique=False)

    op.create_table(
        "assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("chosen_position", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("assigned_at", TIMESTAMP, nullable=False),
        sa.Column("completed_at", TIMESTAMP, nullable=True),
        sa.Column("draft", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotator.id"],
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"],
            ["pair.id"],
        ),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "pair_id", "annotator_id", name="uq_assignment"),
    )
    op.create_index(
        "ix_assignment_annotator",
        "assignment",
        ["annotator_id", "status", "assigned_at"],
        unique=False,
    )


def downgrade() -> None:
    for table in ("assignment", "annotation", "pair", "annotator", "study"):
        op.drop_table(table)
