"""Crowd platforms: a study's Prolific study id, and the Prolific session an annotator came from.

- study.prolific_study_id: Prolific's STUDY_ID for this study (entry links name it); empty =
  accept any STUDY_ID when this is the only study that allows Prolific.
- annotator.external_session: Prolific's SESSION_ID of the participant's submission; coming back
  with the same participant id needs the same session id.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("study") as batch:
        batch.add_column(sa.Column("prolific_study_id", sa.String(), nullable=True))
    with op.batch_alter_table("annotator") as batch:
        batch.add_column(sa.Column("external_session", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("annotator") as batch:
        batch.drop_column("external_session")
    with op.batch_alter_table("study") as batch:
        batch.drop_column("prolific_study_id")
