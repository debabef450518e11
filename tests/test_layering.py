"""Dependencies between the packages and modules, and the vocabulary defined once.

`analysis/` is pure functions on tables: it must run where `annotate` (the app, its database
and its UI libraries) is not importable at all."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from analysis import vocabulary
from annotate import wording
from annotate.store.models import Annotation

ROOT = Path(__file__).resolve().parents[1]


def test_analysis_imports_and_reports_with_annotate_unimportable(tmp_path):
    code = f"""
import sys
sys.modules["annotate"] = None  # any import of annotate or annotate.x now fails
import pkgutil, importlib
import analysis
for info in pkgutil.iter_modules(analysis.__path__):
    importlib.import_module("analysis." + info.name)
import pandas as pd
from analysis.report import ReportOptions, build_report, write_report
from analysis.tables import load_annotations, write_table
from tests.report_fixtures import synthetic
table = {str(tmp_path / "a.csv")!r}
write_table(synthetic(30, 3, confounded=False), table)
pairs = pd.DataFrame({{"pair_id": [f"p{{i}}" for i in range(30)], "category": "c", "is_gold": False}})
annotations = load_annotations(table, scale=(1, 5), pair_ids=set(pairs["pair_id"]))
report = build_report(annotations, pairs, options=ReportOptions(bootstrap=20))
write_report(report, {str(tmp_path)!r}, pairs=pairs)
print(sorted(m for m in sys.modules if m == "annotate" or m.startswith("annotate.")))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['annotate']"  # only the blocker itself
    assert (tmp_path / "report.json").is_file()


def _imports(path: Path) -> set[str]:
    """Modules `path` imports at its top level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_analysis_module_names_annotate():
    for path in sorted((ROOT / "analysis").glob("*.py")):
        named = {m for m in _imports(path) if m == "annotate" or m.startswith("annotate.")}
        assert not named, f"{path.name} imports {sorted(named)}"


def test_schema_does_not_import_db():
    """db imports schema (get_engine checks the schema); schema must not import db back."""
    assert not {
        m for m in _imports(ROOT / "annotate" / "store" / "schema.py") if "annotate.store.db" in m
    }


def test_the_vocabulary_is_the_one_every_layer_uses():
    # the models' rating columns are the vocabulary's
    columns = set(Annotation.model_fields)
    assert set(vocabulary.RATING_COLUMNS) <= columns
    assert {c for c in columns if c.endswith(("_chosen", "_rejected"))} == set(
        vocabulary.RATING_COLUMNS
    )
    # the words shown to annotators cover exactly the vocabulary's values
    assert tuple(wording.DIMENSION_HELP) == vocabulary.DIMENSIONS
    assert tuple(wording.REASON_LABELS) == vocabulary.REASONS


def test_no_second_definition_of_the_vocabulary():
    """The lists themselves are written only in analysis/vocabulary.py."""
    literals = {
        "PREFERENCES": "('chosen', 'rejected', 'tie')",
        "DIMENSIONS": "('correctness', 'relevance', 'helpfulness')",
        "REASONS": "('personal_fit', 'general_quality', 'both', 'unsure')",
    }
    files = [
        *ROOT.glob("annotate/**/*.py"),
        *ROOT.glob("analysis/*.py"),
        *ROOT.glob("benchmarks/*.py"),
    ]
    for path in files:
        if path.name == "vocabulary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List) and all(
                isinstance(e, ast.Constant) for e in node.elts
            ):
                values = tuple(e.value for e in node.elts)
                for name, literal in literals.items():
                    assert repr(values) != literal, f"{path.relative_to(ROOT)} repeats {name}"
