"""Dependencies between the packages and modules, and the vocabulary defined once.

The layers, bottom to top, each importing only from the layers below it (and itself):
- `analysis/`: pure functions on tables; it must run where `annotate` (the app, its database
  and its UI libraries) is not importable at all;
- `annotate/store/`: engine, schema, models, migrations (and `annotate.errors`);
- `annotate/queue/`: the labelling step (rules, full rules, SQL, gold);
- the domain: `annotate/labelling/`, `people/`, `studies/`, `results/` and `annotate/*.py`;
- `annotate/web/`: the server, guard, login and pages;
- `annotate/commands/` and `annotate/cli.py`: the entry points, which may import anything."""

from __future__ import annotations

import ast
import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
for info in pkgutil.walk_packages(analysis.__path__, "analysis."):
    importlib.import_module(info.name)
import pandas as pd
from analysis.report.build import ReportOptions, build_report
from analysis.report.files import write_report
from analysis.files.annotations_table import load_annotations, write_table
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


def _imports(path: Path) -> frozenset[str]:
    """Modules `path` imports at its top level or inside functions."""
    return _imports_of(path.read_text(encoding="utf-8"))


@functools.cache  # the planted-import tests re-check copies of the tree: one file differs
def _imports_of(source: str) -> frozenset[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return frozenset(found)


# What each layer may import of `annotate` (module-name prefixes); `analysis` is below them all.
_ENTRY = ("annotate",)  # anything
_BELOW_WEB = ("annotate.errors", "annotate.store", "annotate.queue", "annotate.<domain>")
ALLOWED = {
    "analysis": (),
    "store": ("annotate.errors", "annotate.store"),
    "queue": ("annotate.errors", "annotate.store", "annotate.queue"),
    "domain": _BELOW_WEB,
    "web": (*_BELOW_WEB, "annotate.web"),
    "entry": _ENTRY,
}


def _layer(relative: Path) -> str:
    parts = relative.parts
    if parts[0] == "analysis":
        return "analysis"
    if parts[1] in ("store", "queue", "web"):
        return parts[1]
    if parts[1] == "commands" or parts[1] == "cli.py":
        return "entry"
    return "domain"


def _allowed(name: str, prefixes: tuple[str, ...], domain: set[str]) -> bool:
    if not (name == "annotate" or name.startswith("annotate.")):
        return True  # third-party, the standard library, or analysis (the bottom layer)
    if name == "annotate":  # the root package itself (`from annotate import x` names x too)
        return bool(prefixes)
    for prefix in prefixes:
        if prefix == "annotate.<domain>":
            if name.split(".")[1:2] and name.split(".")[1] in domain:
                return True
        elif name == prefix or name.startswith(prefix + "."):
            return True
    return prefixes == _ENTRY


def layering_violations(root: Path) -> list[str]:
    """Every import in `root`'s `annotate/` and `analysis/` that points up (or sideways into a
    layer it must not know), as 'path imports module (layer)'."""
    domain = {p.stem for p in (root / "annotate").glob("*.py")} - {"cli", "__init__"}
    domain |= {"labelling", "people", "studies", "results"}  # the domain's packages
    found = []
    for path in sorted([*root.glob("annotate/**/*.py"), *root.glob("analysis/**/*.py")]):
        relative = path.relative_to(root)
        layer = _layer(relative)
        for name in sorted(_imports(path)):
            if name.startswith("annotate.") and name.split(".")[1] == "commands":
                ok = layer == "entry"
            else:
                ok = _allowed(name, ALLOWED[layer], domain)
            if not ok:
                found.append(f"{relative} imports {name} ({layer})")
    return found


def test_every_import_points_down():
    assert layering_violations(ROOT) == []


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("annotate/store/schema.py", "from annotate.queue import sql"),
        ("annotate/store/db.py", "import annotate.web.guard"),
        ("annotate/store/models.py", "from annotate import studies"),
        ("annotate/queue/rules.py", "from annotate.web.paths import is_under"),
        ("annotate/queue/assignment.py", "from annotate.labelling import next_item"),
        ("annotate/studies/catalog.py", "from annotate.web import identity"),
        ("annotate/labelling/step.py", "from annotate.commands import _common"),
        ("annotate/web/login.py", "from annotate.commands._common import open_engine"),
        ("analysis/report/build.py", "from annotate.errors import UserError"),
        ("analysis/files/annotations_table.py", "import annotate"),
    ],
)
def test_an_import_pointing_up_is_found(tmp_path, module, planted):
    """The check above fails on a copy of the tree with one upward import planted (inside a
    function, where it would be easiest to miss)."""
    shutil.copytree(ROOT / "annotate", tmp_path / "annotate")
    shutil.copytree(ROOT / "analysis", tmp_path / "analysis")
    assert layering_violations(tmp_path) == []
    with (tmp_path / module).open("a", encoding="utf-8") as out:
        out.write(f"\n\ndef _planted():\n    {planted}\n")
    found = layering_violations(tmp_path)
    assert found and all(v.startswith(f"{module} imports ") for v in found), found


def test_the_storage_layer_loads_without_the_layers_above():
    """Importing the engine loads no module of queue/, web/, the domain or the entry points."""
    code = (
        "import sys, annotate.store.db, annotate.store.schema, annotate.store.models\n"
        "print([m for m in sys.modules if m.startswith('annotate.') and "
        "not m.startswith(('annotate.store', 'annotate.errors'))])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


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
        *ROOT.glob("analysis/**/*.py"),
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
