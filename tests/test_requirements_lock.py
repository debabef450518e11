"""requirements.lock is what CI installs and tests (.ci/run: the lock, then the project without
dependencies), so it must be complete, consistent and inside pyproject.toml's bounds: the
versions users deploy from it are the ones the suite passed with.

Every check here is offline and deterministic: it reads the lock, pyproject.toml and the
installed distributions' own metadata (pip's dry run uses no index)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
# Installed beside the lock without being pinned in it: the installer and the project itself.
NOT_PINNED = {"pip", "setuptools", "wheel", "prefpair-annotate"}


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [
        Requirement(text)
        for text in (
            *project["dependencies"],
            *project["optional-dependencies"]["test"],
            *project["optional-dependencies"]["docs"],
        )
    ]


def test_the_lock_pins_every_declared_requirement_within_its_bounds() -> None:
    pins = locked()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock does not pin {requirement.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {requirement.name}=={pins[name]}, outside {requirement}"
        )


def test_the_environment_is_the_lock() -> None:
    """What the suite runs with is exactly the lock (so CI tests what users install)."""
    pins = locked()
    installed: dict[str, str] = {
        str(canonicalize_name(d.metadata["Name"])): d.version for d in metadata.distributions()
    }
    differs = {
        name: (pins[name], installed.get(name))
        for name in pins
        if installed.get(name) != pins[name]
    }
    extra = sorted(set(installed) - set(pins) - NOT_PINNED)
    assert not differs and not extra, (
        f"this environment is not requirements.lock (pinned, installed: {differs}; not pinned: "
        f"{extra}): pip install -r requirements.lock && pip install --no-deps -e ."
    )


def test_the_lock_is_complete_every_dependency_pinned_within_its_range() -> None:
    """Every requirement of every pinned distribution (with the extras asked for, the
    markers of this Python) is pinned too, at a version it accepts: installing the lock
    alone gives a consistent environment."""
    pins = locked()
    environment: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    wanted: list[tuple[Requirement, str]] = [(r, "pyproject.toml") for r in declared()]
    seen: set[tuple[NormalizedName, str]] = set()
    problems = []
    while wanted:
        requirement, by = wanted.pop()
        name = canonicalize_name(requirement.name)
        extras = requirement.extras or {""}
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({**environment, "extra": e}) for e in {"", *extras}
        ):
            continue
        if name not in pins:
            problems.append(f"{requirement} (needed by {by}) is not pinned")
            continue
        if not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{name}=={pins[name]} is outside {requirement} (needed by {by})")
        for extra in {"", *requirement.extras}:
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            for text in metadata.requires(name) or []:
                child = Requirement(text)
                if child.marker is None or child.marker.evaluate({**environment, "extra": extra}):
                    child.marker = None
                    wanted.append((child, f"{name}=={pins[name]}"))
    assert problems == []


def test_pip_installs_the_lock_without_an_index() -> None:
    """pip's own resolver, offline: every pin and its dependencies are satisfied here."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "-q", "-r", str(LOCK)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
