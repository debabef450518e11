"""The demo's aspect-check study and the report guide's aspect section (docs/report.md): the
section there is what the documented commands produce, byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

from sqlmodel import select

from annotate.cli import main
from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Pair, Study
from annotate.studies.demo import DEMO_ASPECT_PAIRS, DEMO_ASPECT_STUDY, build_demo
from annotate.studies.demo_answers import write_simulation

REPORT_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "report.md"
MARKERS = re.compile(
    r"<!-- aspect-demo:start -->\n```markdown\n(.*?)```\n<!-- aspect-demo:end -->", re.DOTALL
)


def test_the_demo_has_a_small_study_with_the_aspect_check(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'demo.db'}")
    accounts = build_demo(engine).accounts
    build_demo(engine)  # a second run changes nothing
    with session(engine) as s:
        study = s.exec(select(Study).where(Study.name == DEMO_ASPECT_STUDY)).one()
        assert study.aspect_check
        keys = s.exec(select(Pair.pair_key).where(Pair.study_id == study.id)).all()
        demo = s.exec(select(Study).where(Study.name == "demo")).one()
        assert not demo.aspect_check
    assert sorted(keys) == sorted(DEMO_ASPECT_PAIRS)
    assert "demo-aspects-1" in [name for name, _, _ in accounts]


def test_the_report_guide_shows_the_section_the_demo_produces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["--db", db, "demo", "--no-serve"]) == 0
    annotations, scorer = write_simulation(tmp_path / "sim")
    assert (
        main(["--db", db, "import-annotations", str(annotations), "--study", "demo-aspects"]) == 0
    )
    out = tmp_path / "report"
    args = ["--db", db, "report", "--study", "demo-aspects", "--aspect-scores", str(scorer)]
    assert main([*args, "--out", str(out)]) == 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    section = summary[summary.index("## Rubric aspects") :]
    shown = MARKERS.search(REPORT_GUIDE.read_text(encoding="utf-8"))
    assert shown is not None, "docs/report.md lacks the aspect-demo section"
    assert shown.group(1) == section
