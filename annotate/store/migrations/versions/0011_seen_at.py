"""assignment.seen_at: when the page showing an open reservation last said it is there (a
draft, a heartbeat, its return); a reservation whose page stopped talking (crashed, killed,
cut off) is released after annotate/queue/rules.py's GONE_HOLD seconds instead of the study's
reservation timeout.

Revision ID: 0011_seen_at
Revises: 0010_pair_versions
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_seen_at"
down_revision = "0010_pair_versions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy would trip the foreign keys.
    op.add_column("assignment", sa.Column("seen_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignment") as batch:
        batch.drop_column("seen_at")
