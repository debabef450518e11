"""Dependencies between the packages and modules, and the vocabulary defined once.

The layers, what each owns and what each may import are the table of docs/layout.md: these
tests read it from there. Every import counts, at the top of a file, inside a function or under
`if TYPE_CHECKING`. Also checked: no module is on no row of the table, no modules import each
other in a circle, and no module imports another module's private name (`_name`)."""

from __future__ import annotations

import ast
import functools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
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


# --- the layout page's table -------------------------------------------------------------------

LAYOUT = Path("docs") / "layout.md"


@dataclass(frozen=True)
class Layer:
    name: str
    paths: tuple[str, ...]  # files, or folders ending in "/", relative to the repository
    may_import: frozenset[str]


def layers_of_page(text: str) -> list[Layer]:
    """The rows of the table under "## Layers" in docs/layout.md, bottom to top."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert header == ["Layer", "Paths", "Owns", "May import"], header
    layers = []
    for row in rows[2:]:  # after the header and its --- line
        name, paths, _, may_import = (cell.strip() for cell in row.strip().strip("|").split("|"))
        layers.append(
            Layer(
                name=name,
                paths=tuple(re.findall(r"`([^`]+)`", paths)),
                may_import=frozenset(
                    () if may_import == "nothing" else (n.strip() for n in may_import.split(","))
                ),
            )
        )
    return layers


def analysis_packages_of_page(text: str) -> set[str]:
    section = text.split("\n## Inside `analysis/`\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M))


# --- the import graph --------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    module: str  # what is imported, resolved to a module of the tree
    name: str | None  # the name taken from it (`from module import name`), if not a module


def _module_name(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    """Every module of annotate/ and analysis/ by dotted name, its file relative to `root`."""
    files = [*root.glob("annotate/**/*.py"), *root.glob("analysis/**/*.py")]
    return {_module_name(p.relative_to(root)): p.relative_to(root) for p in files}


@functools.cache  # the planted tests re-check copies of the tree: one file differs
def _imports_of(source: str, modules: frozenset[str]) -> tuple[Import, ...]:
    """The imports of annotate and analysis in `source`, anywhere in it, each resolved to the
    module it loads: `from a.b import c` is the module a.b.c when there is one, else a.b."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in modules:
                    found.append(Import(full, None))
                elif node.module.split(".")[0] in ("annotate", "analysis"):
                    found.append(Import(node.module, alias.name))
        elif isinstance(node, ast.Import):
            found.extend(
                Import(alias.name, None)
                for alias in node.names
                if alias.name.split(".")[0] in ("annotate", "analysis")
            )
    return tuple(found)


def _graph(root: Path) -> dict[str, tuple[Import, ...]]:
    modules = _modules(root)
    names = frozenset(modules)
    return {
        module: _imports_of((root / path).read_text(encoding="utf-8"), names)
        for module, path in modules.items()
    }


def _layer_of(path: Path, layers: list[Layer]) -> Layer | None:
    """The layer whose path is the longest one naming `path` (a file, or a folder above it)."""
    text = path.as_posix()
    matches = [
        (len(p), layer)
        for layer in layers
        for p in layer.paths
        if text == p or (p.endswith("/") and text.startswith(p))
    ]
    return max(matches, key=lambda m: m[0])[1] if matches else None


def layering_violations(root: Path, layers: list[Layer] | None = None) -> list[str]:
    """Every import in `root`'s annotate/ and analysis/ of a layer that its layer's row does not
    list, as 'path imports module (layer -> layer)', and every module on no row."""
    if layers is None:
        layers = layers_of_page((ROOT / LAYOUT).read_text(encoding="utf-8"))
    modules = _modules(root)
    found = []
    for module, imports in sorted(_graph(root).items()):
        path = modules[module]
        layer = _layer_of(path, layers)
        if layer is None:
            found.append(f"{path} is on no row of {LAYOUT}")
            continue
        for imported in imports:
            if imported.module not in modules:
                found.append(f"{path} imports {imported.module}, which does not exist")
                continue
            target = _layer_of(modules[imported.module], layers)
            if target is None:
                continue  # reported for its own file
            if target.name != layer.name and target.name not in layer.may_import:
                found.append(f"{path} imports {imported.module} ({layer.name} -> {target.name})")
    return sorted(set(found))


def import_circles(root: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (each group once,
    its modules sorted): the strongly connected components of the import graph with more than
    one module."""
    graph = {
        module: sorted({i.module for i in imports} - {module})
        for module, imports in _graph(root).items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iteratively (no recursion limit)
        work = [(start, iter(graph.get(start, [])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(circles)


def private_imports(root: Path) -> list[str]:
    """Every private name (`_name`, not a module) that a module of annotate/ or analysis/ takes
    from another one: `from module import _name`, or `module._name` on an imported module."""
    modules = _modules(root)
    names = frozenset(modules)
    found = []
    for module, path in sorted(modules.items()):
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # local name -> the module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in names:
                        bound[alias.asname or alias.name] = full
                    elif node.module in names and _private(alias.name):
                        found.append(f"{path} imports {alias.name} from {node.module}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in names and alias.asname:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and bound.get(node.value.id, module) != module
                and _private(node.attr)
            ):
                found.append(f"{path} uses {node.attr} of {bound[node.value.id]}")
    return sorted(set(found))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


# --- the checks --------------------------------------------------------------------------------


def test_every_import_points_down() -> None:
    assert layering_violations(ROOT) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert import_circles(ROOT) == []


def test_no_module_takes_another_ones_private_names() -> None:
    assert private_imports(ROOT) == []


def test_the_page_names_every_package_and_only_real_paths() -> None:
    text = (ROOT / LAYOUT).read_text(encoding="utf-8")
    layers = layers_of_page(text)
    names = [layer.name for layer in layers]
    assert len(set(names)) == len(names)
    for layer in layers:
        assert layer.may_import <= set(names[: names.index(layer.name)]), layer  # only below
        for path in layer.paths:
            assert (ROOT / path).exists(), path
    listed = analysis_packages_of_page(text)
    actual = {
        p.relative_to(ROOT).as_posix() + ("/" if p.is_dir() else "")
        for p in (ROOT / "analysis").iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert listed == actual


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "annotate", tmp_path / "annotate")
    shutil.copytree(ROOT / "analysis", tmp_path / "analysis")
    return tmp_path


def _plant(tree: Path, module: str, statement: str) -> None:
    """Append a function holding `statement` (an import inside a function, where it would be
    easiest to miss) to `module` in the copied tree."""
    with (tree / module).open("a", encoding="utf-8") as out:
        out.write(f"\n\ndef _planted():\n    {statement}\n")


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("annotate/store/schema.py", "from annotate.queue import sql"),
        ("annotate/store/db.py", "import annotate.web.guard"),
        ("annotate/store/models.py", "from annotate import studies"),
        ("annotate/queue/rules.py", "from annotate.web.paths import is_under"),
        ("annotate/queue/sql.py", "from annotate.engine import get_engine"),
        ("annotate/queue/assignment.py", "from annotate.labelling import next_item"),
        ("annotate/labelling/step.py", "from annotate.people import auth"),
        ("annotate/people/accounts.py", "from annotate.studies.catalog import find_study"),
        ("annotate/studies/catalog.py", "from annotate.results import monitoring"),
        ("annotate/results/exports.py", "from annotate.web import identity"),
        ("annotate/results/frames.py", "from annotate.engine import get_engine"),
        ("annotate/labelling/step.py", "from annotate.commands import _common"),
        ("annotate/web/login.py", "from annotate.commands._common import engine_from"),
        ("annotate/errors.py", "from annotate.store import db"),
        ("analysis/report/build.py", "from annotate.errors import UserError"),
        ("analysis/files/annotations_table.py", "import annotate"),
    ],
)
def test_an_import_pointing_up_is_found(tmp_path: Path, module: str, planted: str) -> None:
    """The check fails, on a copy of the tree, for one upward import planted in one module,
    with the layers read from docs/layout.md."""
    tree = _copy(tmp_path)
    assert layering_violations(tree) == []
    _plant(tree, module, planted)
    found = layering_violations(tree)
    assert found and all(v.startswith(f"{module} imports ") for v in found), found


def test_a_module_on_no_row_of_the_page_is_found(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "annotate" / "helpers.py").write_text("X = 1\n", encoding="utf-8")
    assert layering_violations(tree) == [f"annotate/helpers.py is on no row of {LAYOUT}"]


def test_the_page_decides_what_a_layer_may_import(tmp_path: Path) -> None:
    """The table is what the check reads: without 'queue' in the labelling row, the labelling
    step's imports of the queue are upward."""
    layers = layers_of_page((ROOT / LAYOUT).read_text(encoding="utf-8"))
    changed = [
        replace(layer, may_import=layer.may_import - {"queue"})
        if layer.name == "labelling"
        else layer
        for layer in layers
    ]
    found = layering_violations(ROOT, changed)
    assert found and all(
        v.startswith("annotate/labelling/") and "(labelling -> queue)" in v for v in found
    )


@pytest.mark.parametrize(
    ("module", "planted", "circle"),
    [
        # slots <- answers <- step: the labelling layer's own modules
        (
            "annotate/labelling/slots.py",
            "from annotate.labelling import step",
            {"annotate.labelling.slots", "annotate.labelling.answers", "annotate.labelling.step"},
        ),
        (
            "annotate/web/proofs.py",
            "from annotate.web.identity import current_user",
            {"annotate.web.proofs", "annotate.web.identity"},
        ),
        (
            "analysis/agreement/panel.py",
            "from analysis.agreement.intervals import MIN_ANNOTATORS",
            {"analysis.agreement.panel", "analysis.agreement.intervals"},
        ),
        (
            "analysis/report/numbers.py",
            "from analysis.report import summary",
            {"analysis.report.numbers", "analysis.report.summary"},
        ),
    ],
)
def test_a_circle_inside_a_layer_is_found(
    tmp_path: Path, module: str, planted: str, circle: set[str]
) -> None:
    tree = _copy(tmp_path)
    assert import_circles(tree) == []
    _plant(tree, module, planted)
    assert layering_violations(tree) == []  # every import still points down or sideways
    [found] = import_circles(tree)
    assert circle <= set(found)


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("annotate/web/drafts.py", "from annotate.web.login import _secure"),
        ("annotate/labelling/step.py", "from annotate.queue import sql; sql._translate"),
        ("analysis/aspects/check.py", "import analysis.verdicts.pairs as p; p._flag"),
    ],
)
def test_a_private_name_taken_from_another_module_is_found(
    tmp_path: Path, module: str, planted: str
) -> None:
    tree = _copy(tmp_path)
    assert private_imports(tree) == []
    _plant(tree, module, planted)
    found = private_imports(tree)
    assert found and all(v.startswith(f"{module} ") for v in found), found


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
