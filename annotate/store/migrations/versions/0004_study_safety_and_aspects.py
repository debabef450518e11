"""Study options for expiring reservations, the per-aspect rubric check and a secret A/B coin;
per-aspect scores on annotations.

- study.reservation_timeout: seconds a shown pair stays reserved for an annotator who does not
  answer it (then it goes back to the pool).
- study.aspect_check: the labelling page also asks a 0-2 match score per rubric aspect and response.
- study.coin_secret: the key of the A/B (and gold) coin, so that the order shown cannot be
  predicted from pair and annotator ids; filled with a random value for existing studies.
- annotation.aspects: the per-aspect scores, a JSON list of {"chosen": 0-2, "rejected": 0-2}.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it): a batch copy of `study` would trip the foreign keys.
    op.add_column(
        "study",
        sa.Column("reservation_timeout", sa.Integer(), nullable=False, server_default="1800"),
    )
    op.add_column(
        "study", sa.Column("aspect_check", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("study", sa.Column("coin_secret", sa.String(), nullable=True))
    op.add_column("annotation", sa.Column("aspects", sa.JSON(), nullable=True))
    bind = op.get_bind()
    study = sa.table("study", sa.column("id", sa.Integer), sa.column("coin_secret", sa.String))
    for (study_id,) in bind.execute(sa.select(study.c.id)).all():
        bind.execute(
            study.update().where(study.c.id == study_id).values(coin_secret=secrets.token_hex(16))
        )


def downgrade() -> None:
    with op.batch_alter_table("annotation") as batch:
        batch.drop_column("aspects")
    with op.batch_alter_table("study") as batch:
        batch.drop_column("coin_secret")
        batch.drop_column("aspect_check")
        batch.drop_column("reservation_timeout")
