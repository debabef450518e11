"""assignment.away_since: when the page showing an open reservation went away (closed or
hidden, as the page says with its draft); such a reservation is released after
annotate/queue/rules.py's AWAY_HOLD seconds instead of the study's reservation timeout.

Revision ID: 0009_lease
Revises: 0008_security
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_lease"
down_revision = "0008_security"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy would trip the foreign keys.
    op.add_column("assignment", sa.Column("away_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignment") as batch:
        batch.drop_column("away_since")
