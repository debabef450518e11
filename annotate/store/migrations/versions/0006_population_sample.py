"""Sampled studies: the whole benchmark imported, only a sample queued for labelling.

- pair.queued: whether the labelling queue serves the pair (true for every existing pair, so
  studies imported before this release behave as before);
- pair.inclusion_probability, pair.stratum: the sample design of import-pairs --sample
  (analysis/population/sampling.py), read by the report's population estimates; null when not sampled.

Revision ID: 0006
Revises: 0005_storage
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005_storage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy of `pair` would trip the foreign keys.
    op.add_column(
        "pair", sa.Column("queued", sa.Boolean(), nullable=False, server_default=sa.true())
    )
    op.add_column("pair", sa.Column("inclusion_probability", sa.Float(), nullable=True))
    op.add_column("pair", sa.Column("stratum", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pair") as batch:
        batch.drop_column("stratum")
        batch.drop_column("inclusion_probability")
        batch.drop_column("queued")
