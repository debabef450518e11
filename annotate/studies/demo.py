"""The demo study: the project's own sample pairs, three annotators and a maintainer."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotate.errors import UserError
from annotate.people.auth import create_annotator, reissue_token
from annotate.store.db import write
from annotate.store.models import Annotator
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.pair_import import import_pairs

DEMO_STUDY = "demo"
DEMO_ANNOTATORS = ["demo-annotator-1", "demo-annotator-2", "demo-annotator-3"]
DEMO_MAINTAINER = "demo-maintainer"
SAMPLE_NAME = "sample_pairs.jsonl"
# A second, small study with the aspect check on: a few of the sample pairs, where the page
# also asks how well each response covers each of the user's rubric aspects (0-2).
DEMO_ASPECT_STUDY = "demo-aspects"
DEMO_ASPECT_ANNOTATOR = "demo-aspects-1"
DEMO_ASPECT_PAIRS = (
    "demo-art-01",
    "demo-art-02",
    "demo-life-01",
    "demo-life-02",
    "demo-soc-01",
    "demo-soc-02",
)
GUIDELINES = """\
You will see a question a real person asked, what we know about that person (their rubric,
their own words and some of their past posts), and two answers.

1. **Which response would this user prefer?** Put yourself in *this* user's shoes: the one
   that fits their stated preferences best, not the one you would prefer.
2. **General quality**: rate each answer on its own merits, ignoring the user's preferences:
   is it correct, relevant and helpful for anyone asking this?
3. **What mainly decided your choice?** Be honest: "general quality" is a useful answer too.

Keys: **A** or **B** to choose (**N** for no preference), **S** to submit.
Your answers are saved as you go; you can come back to an earlier pair and change it.
"""


def sample_pairs_path() -> Path:
    """data/sample_pairs.jsonl of a source checkout, else the copy in the working directory."""
    candidates = [
        Path(__file__).resolve().parents[2] / "data" / SAMPLE_NAME,
        Path.cwd() / "data" / SAMPLE_NAME,
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UserError(
        f"cannot find the sample pairs ({SAMPLE_NAME}); run `annotate demo` from the project's folder"
    )


@dataclass(frozen=True)
class Demo:
    accounts: list[tuple[str, bool, str]]  # (name, is_admin, token) for each demo account
    reissued: bool  # some accounts existed: their earlier links stopped working


def aspect_pair_records() -> list[dict[str, Any]]:
    """The sample pairs of the aspect-check demo study, in their file order."""
    with sample_pairs_path().open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [r for r in records if r["id"] in DEMO_ASPECT_PAIRS]


def _import_aspect_pairs(engine: Engine) -> None:
    with tempfile.TemporaryDirectory(prefix="annotate-demo-") as tmp:
        path = Path(tmp) / "aspect_pairs.jsonl"
        path.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in aspect_pair_records()),
            encoding="utf-8",
        )
        import_pairs(engine, path, study_name=DEMO_ASPECT_STUDY)


def build_demo(engine: Engine) -> Demo:
    """Import the sample pairs (a no-op the second time) and (re)issue the demo links; also
    the small aspect-check study (DEMO_ASPECT_STUDY) and its annotator."""
    import_pairs(engine, sample_pairs_path(), study_name=DEMO_STUDY)
    _import_aspect_pairs(engine)

    def work(s: Session) -> Demo:
        accounts = []
        reissued = False
        study = get_or_create_study(s, DEMO_STUDY)
        if not study.guidelines:
            study.guidelines = GUIDELINES
            s.add(study)
        aspect_study = get_or_create_study(s, DEMO_ASPECT_STUDY)
        if not aspect_study.aspect_check:
            update_study_options(s, aspect_study, aspect_check=True)
        if not aspect_study.guidelines:
            aspect_study.guidelines = GUIDELINES
            s.add(aspect_study)
        people = [(name, study.id, False) for name in DEMO_ANNOTATORS]
        people += [
            (DEMO_MAINTAINER, study.id, True),
            (DEMO_ASPECT_ANNOTATOR, aspect_study.id, False),
        ]
        for name, study_id, is_admin in people:
            existing = s.exec(select(Annotator).where(Annotator.name == name)).first()
            if existing is None:
                _, token = create_annotator(s, name=name, study_id=study_id, is_admin=is_admin)
            else:
                token = reissue_token(s, existing)
                reissued = True
            accounts.append((name, is_admin, token))
        return Demo(accounts=accounts, reissued=reissued)

    return write(engine, work)
