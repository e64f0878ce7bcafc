"""Every word a person reads is in their language (issue 28): every page and every human export
of the replay scenarios (:mod:`replay_scenarios`) is rendered, and its visible text must hold no
Python repr (``None``, ``['…']``, ``{'…': …}``), no class name (CamelCase ending in Output,
Model or Error), no internal file name (gates.json, state.db…) and no internal key.

Pages through AppTest (every element's text, labels, options and table cells); exports through
:func:`haytham.reports.export.export` (Markdown, CSV) and the PDFs through Poppler's ``pdftotext``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import replay_settings
from replay_scenarios import SCENARIOS, build_scenarios
from test_ui_support import app, ui_env

from haytham.app import make_service
from haytham.errors import HaythamError
from haytham.reports.export import export

PAGES = ["run", "gate_1", "verdict", "gate_2", "gate_3", "gate_4", "stories", "fidelity"]
GLOBAL_PAGES = ["sessions", "new_idea", "providers"]
HUMAN_EXPORTS = ["markdown", "csv"]
PDFS = ["validation-pdf", "pdf"]

DEVELOPER_WORDS: dict[str, re.Pattern[str]] = {
    # "None of them", "None is proven" are English; "gate None", "None)" or a cell are not
    "a Python None": re.compile(r"(?<![\w-])None(?![\w-]| [a-z])"),
    "a Python list": re.compile(r"\[\s*'[^'\n]*'(?:\s*,\s*'[^'\n]*')*\s*\]"),
    "a Python dict": re.compile(r"\{\s*'[^'\n]*'\s*:"),
    "a class name": re.compile(r"\b(?:[A-Z][a-z0-9]+){2,}(?:Output|Model|Error)\b"),
    "an internal file": re.compile(
        r"\b(?:gates|revisions|summary|session|concept_anchor|output|state)\.(?:json|db)\b"
        r"|\bevents\.jsonl\b|\bstate\.db\b"
    ),
    "an internal key": re.compile(
        r"\b(?:elapsed_s|input_tokens|output_tokens|needs_attention|verdict:NO-GO|"
        r"check:[a-z-]+:\d+)\b"
    ),
    "a cut-off word": re.compile(r"\bneeds attentio\b(?!n)"),
}
_ESCAPE = re.compile(r"\\(.)")
_SKIP_PROTO = {"id", "form_id", "icon", "url", "page_script_hash", "key", "type", "help"}


def problems(text: str) -> list[str]:
    """What in ``text`` a person should not read: ``kind: the excerpt``."""
    plain = _ESCAPE.sub(r"\1", text.replace("\u200b", ""))
    out = []
    for kind, pattern in DEVELOPER_WORDS.items():
        for m in pattern.finditer(plain):
            start, end = max(0, m.start() - 50), m.end() + 50
            out.append(f"{kind}: …{plain[start:end]}…".replace("\n", " "))
    return out


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in _SKIP_PROTO:
                yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def visible_texts(node: Any) -> Iterator[str]:
    """Every text an element of the page tree shows: values, labels, options, table cells."""
    from google.protobuf.json_format import MessageToDict

    name = type(node).__name__
    if name == "Dataframe":  # the column headers a person sees, and every cell
        frame = node.value
        config = json.loads(node.proto.columns or "{}")
        for column in frame.columns:
            shown = config.get(str(column)) or {}
            if not shown.get("hidden"):
                yield str(shown.get("label") or column)
        yield from (str(v) for v in frame.astype(str).to_numpy().ravel())
    elif name in ("Json", "Code"):  # a deliberate raw view (none is expected on these pages)
        pass
    elif hasattr(node, "proto") and name not in ("Block", "ElementTree", "SpecialBlock"):
        proto = node.proto
        yield from _strings(MessageToDict(proto, preserving_proto_field_name=True))
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from visible_texts(child)


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    build_scenarios(root)
    return root


def _listed(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{where}: {p}" for where, ps in found.items() for p in ps)


def _page_problems(sid: str | None, page: str) -> list[str]:
    at = app(sid, f"views/{page}.py")
    assert not at.exception, (sid, page, at.exception)
    found = []
    for text in visible_texts(at._tree):
        found += problems(text)
    return sorted(set(found))


@pytest.mark.parametrize("sid", SCENARIOS)
def test_every_page_of_every_scenario_is_plain_language(
    scenarios: Path, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, scenarios / "sessions", cassette=scenarios / "cassette.jsonl")
    found = {page: _page_problems(sid, page) for page in PAGES}
    assert not any(found.values()), _listed(found)


def test_the_pages_without_a_session_are_plain_language(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, scenarios / "sessions", cassette=scenarios / "cassette.jsonl")
    found = {page: _page_problems(None, page) for page in GLOBAL_PAGES}
    assert not any(found.values()), _listed(found)


def _pdf_text(data: bytes, tmp: Path) -> str:
    pdf = tmp / "report.pdf"
    pdf.write_bytes(data)
    return subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("sid", SCENARIOS)
def test_every_export_of_every_scenario_is_plain_language(
    scenarios: Path, sid: str, tmp_path: Path
) -> None:
    if not shutil.which("pdftotext"):
        pytest.skip("Debian's poppler-utils (pdftotext) is not installed")
    found: dict[str, list[str]] = {}
    with make_service(replay_settings(scenarios, cassette=scenarios / "cassette.jsonl")) as svc:
        state = svc.load_state(sid)
        for fmt in [*HUMAN_EXPORTS, *PDFS]:
            try:
                data = export(state, fmt)
            except HaythamError as exc:  # an export not ready yet says why, in words
                found[fmt] = problems(str(exc))
                continue
            text = _pdf_text(data, tmp_path) if isinstance(data, bytes) else data
            found[fmt] = problems(text)
    assert not any(found.values()), _listed(found)


def test_the_check_sees_what_it_should() -> None:
    """The patterns catch each kind the issue names, and pass the page's own words."""
    for bad in [
        "Verification passed · gate None",
        "IN-scope items no capability serves: ['SCOPE-99']",
        "did not produce a IdeaAnalysisOutput after one repair request",
        "the edit is logged in gates.json",
        "columns elapsed_s and input_tokens",
        "verdict:NO-GO and check:capability-model:1",
        "{'kind': 'x'}",
    ]:
        assert problems(bad), bad
    for good in [
        "Stage 5 · MVP scope: SCOPE-1 Circle booking",
        "not measured",
        "Nonetheless the None-free text",
        "An [link] and ['a'",
    ]:
        assert not problems(good), (good, problems(good))
