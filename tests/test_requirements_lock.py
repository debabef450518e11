"""requirements.lock (the versions the suite passed with, for deployments) satisfies every
requirement pyproject.toml declares, so installing from it gives what the code asks for."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_the_lock_pins_every_declared_requirement_within_its_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    pins = locked()
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock does not pin {requirement.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {requirement.name}=={pins[name]}, outside {text!r}"
        )
