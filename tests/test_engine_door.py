"""The app's one door to its database (annotate/engine.py): every command, web process, test and
benchmark opens its engine with `annotate.engine.get_engine`, which hands PostgreSQL's submit
function to the schema explicitly; the storage layer's own `open_engine` cannot be called
without saying what to generate."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

from annotate.queue import sql
from annotate.store import db

ROOT = Path(__file__).resolve().parents[1]

# The storage layer's engine and schema calls: only the door (and the store itself) use them.
_STORE_DOORS = {"open_engine", "ensure_schema"}
# Tests of the schema itself (migrations, the generated function) call ensure_schema directly.
_SCHEMA_TESTS = {"tests/test_migrations.py", "tests/test_submit_function.py"}


def _names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Name):
            used.add(node.id)
    return used


def test_nothing_but_the_door_opens_an_engine_with_a_schema() -> None:
    files = [
        *ROOT.glob("annotate/**/*.py"),
        *ROOT.glob("benchmarks/*.py"),
        *ROOT.glob("tests/*.py"),
    ]
    allowed = {"annotate/engine.py", "annotate/store/db.py", "annotate/store/schema.py"}
    allowed |= _SCHEMA_TESTS | {"tests/test_engine_door.py"}
    found = {
        f"{path.relative_to(ROOT)} uses {name}"
        for path in files
        if path.relative_to(ROOT).as_posix() not in allowed
        for name in _names_used(path) & _STORE_DOORS
    }
    assert found == set()


def test_the_store_must_be_told_what_to_generate() -> None:
    """`generated` is keyword-only and has no default: a caller cannot forget it."""
    parameter = inspect.signature(db.open_engine).parameters["generated"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is inspect.Parameter.empty


def test_the_door_hands_over_the_submit_function() -> None:
    from annotate.engine import GENERATED

    assert sql.SUBMIT_FUNCTION in GENERATED


def test_the_door_alone_makes_a_database_with_the_submit_function(pg_url: str) -> None:
    """A process that imports nothing but the door creates a PostgreSQL schema that holds the
    submit function (nothing depends on some other module having been imported first)."""
    code = (
        "import sys\n"
        "from annotate.engine import get_engine\n"
        f"engine = get_engine({pg_url!r})\n"
        "with engine.connect() as conn:\n"
        "    print(conn.exec_driver_sql(\n"
        "        \"SELECT count(*) FROM pg_proc WHERE proname = 'annotate_submit_and_next'\"\n"
        "    ).scalar())\n"
        "engine.dispose()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
