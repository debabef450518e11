"""Prolific's "screened out" code per study (study.prolific_screened_out_code): a participant
who fails the qualification is shown it instead of the completion code.

Revision ID: 0008_security
Revises: 0007_adaptive
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_security"
down_revision = "0007_adaptive"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy of `study` would trip the foreign keys.
    op.add_column("study", sa.Column("prolific_screened_out_code", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("study", "prolific_screened_out_code")
