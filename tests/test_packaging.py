"""The package installs from a wheel and runs a session outside the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from pipeline_helpers import POWER8_RUN
from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_in_pyproject() -> None:
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {p for p in find_packages(str(ROOT), include=["haytham*"])}
    assert set(listed["packages"]) == found | {"haytham.prompts"}
    assert listed["package-dir"] == {"haytham.prompts": "prompts"}


def test_a_wheel_install_runs_a_replay_session_outside_the_repository(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a clean copy: no stale build/ folder can leak into the wheel
    for name in ("pyproject.toml", "README.md"):
        source.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for name in ("haytham", "prompts"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation"]
        + ["-q", "-w", str(wheels)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("haytham-*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
        + [str(wheel)],
        check=True,
        cwd=tmp_path,
    )
    assert (site / "haytham" / "prompts" / "stages" / "mvp-scope.md").is_file()
    idea = tmp_path / "idea.md"
    idea.write_text((ROOT / "tests/fixtures/ideas/power_of_8.md").read_text())
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "HAYTHAM_EMBEDDINGS": "off"}
    where = subprocess.run(
        [sys.executable, "-c", "import haytham; print(haytham.__file__)"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site))
    run = subprocess.run(
        [sys.executable, "-m", "haytham.cli", "run", "--idea-file", str(idea), "--auto-approve"]
        + ["--provider", "replay", "--cassette", str(POWER8_RUN), "--session-id", "wheel"]
        + ["--sessions-dir", str(work / "sessions"), "--quiet", "--json"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "done"
    assert len(list((work / "sessions" / "wheel" / "stages").glob("*/output.json"))) == 10
    assert (site / "haytham" / "fonts" / "DejaVuSans.ttf").is_file()
    assert (site / "haytham" / "fonts" / "NotoSansDevanagari-Regular.ttf").is_file()
    assert (site / "haytham" / "fonts" / "LICENSE-Noto").is_file()  # the fonts' OFL ships too
    pdf = work / "spec.pdf"
    export = subprocess.run(
        [sys.executable, "-m", "haytham.cli", "export", "wheel", "--format", "pdf"]
        + ["--output", str(pdf), "--sessions-dir", str(work / "sessions")]
        + ["--provider", "replay", "--cassette", str(POWER8_RUN)],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert export.returncode == 0, export.stderr[-2000:]
    assert pdf.read_bytes().startswith(b"%PDF")  # the bundled fonts load from the install
