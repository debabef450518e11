"""Adaptive overlap: study options and each pair's own reservation target.

- study.adaptive_min, study.adaptive_max: both null (fixed overlap, as before) or both set.
- study.agreement_sample (share of pairs, default 0.2) and study.agreement_overlap (default 3):
  the keyed random share of pairs that always gets exactly that many answers.
- pair.target: how many reservations the pair may have in an adaptive study; null means the
  study's overlap_target, so every existing pair keeps its meaning without a data update.

Revision ID: 0007_adaptive
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_adaptive"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy of `study` would trip the foreign keys.
    op.add_column("study", sa.Column("adaptive_min", sa.Integer(), nullable=True))
    op.add_column("study", sa.Column("adaptive_max", sa.Integer(), nullable=True))
    op.add_column(
        "study", sa.Column("agreement_sample", sa.Float(), nullable=False, server_default="0.2")
    )
    op.add_column(
        "study", sa.Column("agreement_overlap", sa.Integer(), nullable=False, server_default="3")
    )
    op.add_column("pair", sa.Column("target", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pair") as batch:
        batch.drop_column("target")
    with op.batch_alter_table("study") as batch:
        batch.drop_column("agreement_overlap")
        batch.drop_column("agreement_sample")
        batch.drop_column("adaptive_max")
        batch.drop_column("adaptive_min")
