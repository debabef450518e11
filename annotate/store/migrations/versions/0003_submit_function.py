"""PostgreSQL's submit function, annotate_submit_and_next: installed after the migrations.

This revision first created the function with a frozen copy of the labelling step's rules.
The function is a replaceable object, not a table: it is now generated from the rules' one home
(annotate/queue/sql.py, `submit_function_sql`) and installed by `queue_sql.install_functions`
under the migration lock after every upgrade (annotate/store/schema.py), which drops every earlier
version and overload first. A copy here could only drift from the rules, so this revision
installs nothing; it is kept so that revision numbers, and databases stamped with them, stay.

SQLite has no server-side functions: nothing changes there.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing: the function is installed after the migrations (see the module docstring)."""


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS annotate_submit_and_next")
