"""The data the page gives the labelling form, checked against the one typed description of it
(annotate/web/static/form_contract.d.ts) that label_form.js is type-checked against too: real
`form_data` outputs (new pair, refused Submit with the history open, an edit, the aspect check, an
answer saved in another tab) are written as TypeScript `FormData` values and given to `tsc`, so
a key missing, added or of another type on the Python side fails here.

Needs the npm tools (`npm ci` at the repository root, as .ci/run does); without them this skips
saying so, unless ANNOTATE_TEST_JS=require (set by .ci/run), where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import streamlit as st

from annotate.engine import get_engine
from annotate.store.db import ENV_VAR
from tests.factories import make_study
from tests.test_label_app import data, full_form, send, signed_in, submit_form

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "annotate" / "web" / "static" / "form_contract"
TSC = ROOT / "node_modules" / ".bin" / "tsc"


def tsc_or_skip() -> Path:
    if TSC.exists() and shutil.which("node"):
        return TSC
    reason = "the npm tools are not installed (run `npm ci` at the repository root)"
    if os.environ.get("ANNOTATE_TEST_JS", "").lower() == "require":
        pytest.fail(reason)
    pytest.skip(reason)


def type_errors(samples: list[dict], folder: Path) -> str:
    """tsc's complaints about `samples` as FormData values ("" when there are none)."""
    source = folder / "samples.ts"
    source.write_text(
        f'import type {{ FormData }} from "{CONTRACT}";\n'
        f"export const samples: FormData[] = {json.dumps(samples, indent=1)};\n",
        encoding="utf-8",
    )
    flags = ["--noEmit", "--strict", "--target", "ES2022", "--module", "ES2022"]
    flags += ["--moduleResolution", "bundler", "--lib", "ES2022,DOM", "--skipLibCheck"]
    done = subprocess.run(
        [str(tsc_or_skip()), *flags, str(source)], capture_output=True, text=True, timeout=120
    )
    if done.returncode == 0:
        return ""
    # each complaint with the line of samples.ts it points at (a wrong type names only the line)
    lines = source.read_text(encoding="utf-8").splitlines()
    found = re.findall(r"samples\.ts\((\d+),\d+\): (.*)", done.stdout + done.stderr)
    return "\n".join(f"{message} [{lines[int(n) - 1].strip()}]" for n, message in found)


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv(ENV_VAR, url)
    st.cache_resource.clear()
    yield get_engine(url)
    st.cache_resource.clear()


@pytest.fixture
def samples(engine, tmp_path) -> list[dict]:
    tsc_or_skip()  # before the slow part
    _, [(_, token)] = make_study(engine, tmp_path, n_pairs=3, annotators=1)
    _, [(_, aspects_token)] = make_study(
        engine, tmp_path, n_pairs=1, annotators=1, study="aspects", aspect_check=True
    )
    at = signed_in(token)
    shown = [data(at)]
    submit_form(at, full_form("A"))
    send(at, "history", True)
    send(at, "posts", True)
    send(at, "submit", {"form": {"slot": "B"}, "seconds": 1, "seq": 2})  # refused
    shown.append(data(at))
    send(at, "back", {"form": {}, "seconds": 0, "seq": 3})  # an edit
    other = signed_in(token)
    send(other, "back", {"form": {}, "seconds": 0, "seq": 1})
    submit_form(at, full_form("B"))
    send(other, "submit", {"form": full_form("tie"), "seconds": 1, "seq": 2})  # stale: reset
    shown.append(data(other))
    shown.append(data(signed_in(aspects_token)))
    return shown


def test_every_form_data_the_page_gives_matches_the_typed_contract(samples, tmp_path):
    assert samples[1]["refused"] and samples[1]["history"]  # the variants are really there
    assert samples[0]["posts"] is None and samples[1]["posts"] is not None
    assert samples[2]["reset"] and samples[2]["editing"] and samples[3]["aspect_check"]
    assert type_errors(samples, tmp_path) == ""


def test_the_check_catches_a_key_of_the_wrong_type_missing_or_unknown(samples, tmp_path):
    wrong = [{**samples[0], "answered": "7"}]
    assert "answered" in type_errors(wrong, tmp_path)
    missing = [{k: v for k, v in samples[0].items() if k != "can_go_back"}]
    assert "can_go_back" in type_errors(missing, tmp_path)
    unknown = [{**samples[0], "chosen_position": "A"}]
    assert "chosen_position" in type_errors(unknown, tmp_path)
