"""Live progress of ``haytham run`` / ``resume``, read from the session's ``events.jsonl``.

The pipeline already appends every step to the session's event log, so progress needs no hook
into the service: :class:`EventFollower` tails the log from its end in a background thread while
the command runs, :class:`Tracker` folds the events into one :class:`StageProgress` per stage row
(elapsed time, model calls, tokens, retries, status), and a :class:`Renderer` shows them:

* :class:`PlainRenderer`: one line when a stage starts and one when it ends (logs, pipes, CI);
* :class:`RichRenderer`: a live spinner line for the running stage on a terminal;
* :class:`JsonRenderer`: one JSON object per event on stdout, for scripts;
* :class:`Renderer` itself shows nothing (``--quiet``).

Everything here is per command: no module-level mutable state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TextIO, TypeGuard

from haytham.errors import HaythamError
from haytham.schemas.events import INPUTS_PREFIX
from haytham.stages import ANCHOR_AGENT, BY_SLUG, STAGES
from haytham.stages.base import Phase
from haytham.storage.folder import SessionStore
from haytham.storage.protocol import Session, Store

VERIFY_PREFIX = "verify-"
Event = dict[str, Any]
Mode = Literal["auto", "plain", "rich", "json", "quiet"]
DETAIL_CHARS = 160


@dataclasses.dataclass(frozen=True)
class StageProgress:
    """One stage row's progress: a snapshot, safe to hand to another thread."""

    stage: str
    tag: str  # "[ 3/10]", "[anchor]", "[gate 2]"
    name: str  # what the row does: a stage's slug, or e.g. "verifying WHAT (swarm)"
    started_at: float  # time.monotonic() when the start was seen
    status: str = "running"
    elapsed_s: float = 0.0
    model_calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0  # re-asks after failed checks plus transient model-call retries
    detail: str = ""

    @property
    def tokens(self) -> int:
        """Input and output tokens of the row's model calls so far."""
        return self.input_tokens + self.output_tokens

    @property
    def title(self) -> str:
        """The row as shown: its tag and name."""
        return f"{self.tag} {self.name}"

    def counters(self) -> str:
        """``3 model calls (1 failed), 1,234 tokens, 0 retries``: the row's counters in words."""
        calls = _plural(self.model_calls, "model call")
        if self.failed_calls:
            calls += f" ({self.failed_calls} failed)"
        return f"{calls}, {self.tokens:,} tokens, {_plural(self.retries, 'retry', 'retries')}"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _short(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (the full cause is in the session's
    events and in the command's own error line)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def describe(stage: str, data: dict[str, Any]) -> tuple[str, str]:
    """(tag, name) of a stage row as events name it."""
    spec = BY_SLUG.get(stage)
    rework = " (rework)" if data.get("rework") else ""
    if spec is not None:
        return f"[{spec.number:>2}/{len(STAGES)}]", stage + rework
    if stage == ANCHOR_AGENT:
        return "[anchor]", "concept anchor" + rework
    if stage.startswith(INPUTS_PREFIX):
        consumer = stage.removeprefix(INPUTS_PREFIX)
        spec = BY_SLUG.get(consumer)
        tag = f"[{spec.number:>2}/{len(STAGES)}]" if spec else "[inputs]"
        return tag, f"checking the inputs of {consumer}"
    if stage.startswith(VERIFY_PREFIX):
        phase = stage.removeprefix(VERIFY_PREFIX).upper()
        gate = Phase(phase).gate if phase in Phase.__members__ else "?"
        strategy = f" ({data['strategy']})" if data.get("strategy") else ""
        return f"[gate {gate}]", f"verifying {phase}{strategy}"
    return "[stage]", stage + rework


def _gate_of_row(stage: str | None, data: dict[str, Any]) -> str:
    phase = str(data.get("phase") or (stage or "").removeprefix(VERIFY_PREFIX)).upper()
    return str(Phase(phase).gate) if phase in Phase.__members__ else "?"


def milestone_text(event: Event) -> str | None:
    """One line for a gate or verifier milestone; ``None`` for events that are not one."""
    kind, data = event.get("type"), event.get("data") or {}
    if kind == "gate_command":
        # the service logs a reviewer's command as "command", an auto-approval's as "kind"
        command = str(data.get("command") or data.get("kind") or "decision")
        gate, auto = data.get("gate", "?"), " (auto-approve)" if data.get("auto") else ""
        if data.get("note") == "auto-approve":
            auto = " (auto-approve)"
        what = {
            "approve": "approved",
            "reject": "rejected",
            "override": "blocking items overridden",
            "rework": f"rework of {data.get('stage', 'a stage')} requested",
            "clarify": f"{data.get('invariant', 'an invariant')} clarified",
            "clarify_all": f"{_plural(len(data.get('choices') or {}), 'ambiguity', 'ambiguities')}"
            " clarified with their first option",
        }.get(command, command)
        return f"[gate {gate}] {what}{auto}"
    if kind == "rework_requested":
        return (
            f"[gate {_gate_of_row(event.get('stage'), data)}] the verifier sends "
            f"{data.get('stage', 'a stage')} back for rework (round {data.get('round', '?')})"
        )
    if kind == "rework_stopped":
        note = f": {data['note']}" if data.get("note") else ""
        return (
            f"[gate {_gate_of_row(event.get('stage'), data)}] automatic rework stopped "
            f"({data.get('outcome', 'stopped')}){note}"
        )
    if kind == "rework_cleared":
        return f"[gate {_gate_of_row(event.get('stage'), data)}] rework cleared the findings"
    return None


def _end_status(kind: str, stage: str, data: dict[str, Any]) -> tuple[str, str]:
    """(status, detail) of a row from its stage_completed / stage_failed event."""
    if kind == "stage_failed":
        return "failed", str((data.get("error") or {}).get("message") or "")
    status = str(data.get("status") or "completed")
    if stage.startswith(VERIFY_PREFIX):
        blocking = int(data.get("blocking") or 0)
        if blocking:
            return status, f"{_plural(blocking, 'blocking problem')} for the gate"
        return status, str(data.get("reason") or "") if status != "passed" else ""
    problems = data.get("problems") or []
    if status == "needs_attention" and problems:
        return status, f"{_plural(len(problems), 'problem')} for review: {problems[0]}"
    return status, ""


class Renderer:
    """Shows progress; this base shows nothing (``--quiet``). Called from one thread at a time."""

    def event(self, event: Event, row: StageProgress | None) -> None:
        """Every event as it is read; ``row`` is its stage row after the event, if any."""

    def stage_started(self, row: StageProgress) -> None:
        """A row started running."""

    def stage_changed(self, row: StageProgress) -> None:
        """A running row's counters moved (a model call, a re-ask)."""

    def stage_ended(self, row: StageProgress) -> None:
        """A row finished (completed, failed or needs attention)."""

    def milestone(self, text: str) -> None:
        """A gate or verifier milestone, as one line (see :func:`milestone_text`)."""

    def open(self) -> None:
        """Called before the first event (a live display starts here)."""

    def close(self) -> None:
        """Called after the last event, also when the command fails or is interrupted."""


class PlainRenderer(Renderer):
    """One line when a stage starts and one when it ends: for logs, pipes and CI."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def stage_started(self, row: StageProgress) -> None:
        """Print that the row started."""
        self._line(f"{row.title}: started")

    def stage_ended(self, row: StageProgress) -> None:
        """Print the row's end line (see :func:`end_line`)."""
        self._line(end_line(row))

    def milestone(self, text: str) -> None:
        """Print the milestone as its own line."""
        self._line(text)


def end_line(row: StageProgress) -> str:
    """How a finished row reads: status, seconds, counters and any detail."""
    detail = f" - {row.detail}" if row.detail else ""
    return f"{row.title}: {row.status} in {row.elapsed_s:.1f}s ({row.counters()}){detail}"


class JsonRenderer(Renderer):
    """One JSON object per event on ``stream``: the event as logged, plus ``progress`` (the
    row's counters) on the events that end a stage. The command's outcome follows them."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def event(self, event: Event, row: StageProgress | None) -> None:
        """Print ``event`` as one JSON line (with the row's progress, when it belongs to one)."""
        out: dict[str, Any] = {
            "event": event.get("type"),
            "stage": event.get("stage"),
            "ts": event.get("ts"),
            "data": event.get("data") or {},
        }
        if row is not None and event.get("type") in ("stage_completed", "stage_failed"):
            out["progress"] = {
                "status": row.status,
                "elapsed_s": round(row.elapsed_s, 3),
                "model_calls": row.model_calls,
                "input_tokens": row.input_tokens,
                "output_tokens": row.output_tokens,
                "retries": row.retries,
            }
        self.stream.write(json.dumps(out) + "\n")
        self.stream.flush()


STATUS_STYLE = {
    "completed": ("✓", "green"),
    "passed": ("✓", "green"),
    "needs_attention": ("!", "yellow"),
    "inconclusive": ("?", "yellow"),
    "off": ("-", "dim"),
    "failed": ("✗", "red"),
}


class RichRenderer(Renderer):
    """A live line with a spinner and the elapsed seconds for each running stage; finished
    stages and milestones are printed above it. Needs ``rich`` and a terminal."""

    def __init__(self, console: Any, clock: Callable[[], float] = time.monotonic) -> None:
        from rich.live import Live

        self.console = console
        self.clock = clock
        self._lock = threading.Lock()  # the follower writes, Live's refresh thread reads
        self._running: dict[str, tuple[StageProgress, Any]] = {}
        self._since = clock()
        self._idle = self._spinner()
        self._live = Live(
            self,
            console=console,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,
        )

    def open(self) -> None:
        """Start the live display."""
        self._live.start()

    def _spinner(self) -> Any:
        from rich.spinner import Spinner

        return Spinner("dots", style="cyan")

    def __rich__(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        now = self.clock()
        with self._lock:
            rows = list(self._running.values())
        grid = Table.grid(padding=(0, 1))
        if not rows:
            grid.add_row(self._idle, Text(f"working… {now - self._since:.0f}s", "dim"))
        for row, spinner in rows:
            grid.add_row(
                spinner,
                Text.assemble(
                    (row.title, "bold"),
                    f"  {now - row.started_at:.0f}s  ",
                    (row.counters(), "dim"),
                ),
            )
        return grid

    def stage_started(self, row: StageProgress) -> None:
        """Show the row as running, with a spinner."""
        with self._lock:
            self._running[row.stage] = (row, self._spinner())

    def stage_changed(self, row: StageProgress) -> None:
        """Refresh a running row's counters (it keeps its spinner)."""
        with self._lock:
            if row.stage in self._running:
                self._running[row.stage] = (row, self._running[row.stage][1])

    def stage_ended(self, row: StageProgress) -> None:
        """Print the row's end line above the live display and stop showing it as running."""
        from rich.text import Text

        with self._lock:
            self._running.pop(row.stage, None)
            self._since = self.clock()
        mark, style = STATUS_STYLE.get(row.status, ("·", ""))
        detail = f" - {row.detail}" if row.detail else ""
        self.console.print(
            Text.assemble(
                (f"{mark} ", style),
                (row.title, "bold"),
                (f": {row.status}", style),
                f" in {row.elapsed_s:.1f}s ",
                (f"({row.counters()}){detail}", "dim"),
            )
        )

    def milestone(self, text: str) -> None:
        """Print the milestone above the live display."""
        from rich.text import Text

        self.console.print(Text(f"» {text}", "cyan"))

    def close(self) -> None:
        """Stop the live display."""
        self._live.stop()


class Tracker:
    """Folds events into per-row progress and tells the renderer what changed."""

    def __init__(self, renderer: Renderer, clock: Callable[[], float] = time.monotonic) -> None:
        self.renderer = renderer
        self.clock = clock
        self.rows: dict[str, StageProgress] = {}

    def feed(self, event: Event) -> None:
        """Fold one event into its row's progress and tell the renderer (the event, then what
        changed: a row started, moved or ended, or a milestone)."""
        kind = str(event.get("type") or "")
        stage = event.get("stage")
        row = self._update(kind, stage, event.get("data") or {}) if isinstance(stage, str) else None
        self.renderer.event(event, row)
        if row is not None:
            if kind == "stage_started":
                self.renderer.stage_started(row)
            elif kind in ("stage_completed", "stage_failed"):
                self.renderer.stage_ended(row)
            elif kind in ("model_call", "stage_reask") and row.status == "running":
                self.renderer.stage_changed(row)
        text = milestone_text(event)
        if text:
            self.renderer.milestone(text)

    def _update(self, kind: str, stage: str, data: dict[str, Any]) -> StageProgress | None:
        row = self.rows.get(stage)
        if kind == "stage_started" or (row is None and kind == "model_call"):
            tag, name = describe(stage, data)
            row = StageProgress(stage, tag, name, started_at=self.clock())
        elif row is None:
            return None
        if kind == "model_call":
            row = dataclasses.replace(
                row,
                model_calls=row.model_calls + 1,
                failed_calls=row.failed_calls + (0 if data.get("ok", True) else 1),
                input_tokens=row.input_tokens + int(data.get("input_tokens") or 0),
                output_tokens=row.output_tokens + int(data.get("output_tokens") or 0),
                retries=row.retries + int(data.get("retries") or 0),
            )
        elif kind == "stage_reask":
            row = dataclasses.replace(row, retries=row.retries + 1)
        elif kind in ("stage_completed", "stage_failed"):
            status, detail = _end_status(kind, stage, data)
            wall_ms = data.get("wall_ms")
            elapsed = (
                float(wall_ms) / 1000
                if isinstance(wall_ms, int | float)
                else self.clock() - row.started_at
            )
            row = dataclasses.replace(row, status=status, detail=_short(detail), elapsed_s=elapsed)
        self.rows[stage] = row
        return row


class _FileTail:
    """New complete lines of a growing file (``events.jsonl``), from where :meth:`mark` was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._buffer = b""

    def mark(self) -> None:
        try:
            self._offset = self.path.stat().st_size
        except OSError:
            self._offset = 0

    def new_lines(self) -> list[bytes]:
        try:
            with self.path.open("rb") as fh:
                size = fh.seek(0, 2)
                if size < self._offset:  # rewritten under us: follow from its new end
                    self._offset, self._buffer = size, b""
                    return []
                fh.seek(self._offset)
                chunk = fh.read(size - self._offset)
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")  # a torn last line waits for its end
        return lines


class _RowTail:
    """New event lines of a session in the shared database (team mode), from :meth:`mark`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._seen = 0

    def mark(self) -> None:
        self._seen = len(self.session.event_lines())

    def new_lines(self) -> list[str]:
        lines = self.session.event_lines()
        fresh, self._seen = lines[self._seen :], len(lines)
        return fresh


class EventFollower:
    """Follows a session's event log (the ``events.jsonl`` at ``source``, or a session of the
    shared database) from its end at :meth:`start` in a background thread and hands each
    complete line to ``on_event``; :meth:`stop` reads what is left, then returns.

    A problem while following (an unreadable line, a renderer that raises, a closed pipe) stops
    the progress display, never the command: ``error`` keeps it for ``--debug``."""

    def __init__(
        self, source: Path | Session, on_event: Callable[[Event], None], interval: float = 0.1
    ) -> None:
        self.tail = _FileTail(source) if isinstance(source, Path) else _RowTail(source)
        self.on_event = on_event
        self.interval = interval
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Follow the events appended from now on, in a background thread."""
        self.tail.mark()
        self._thread = threading.Thread(target=self._loop, name="haytham-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following and deliver what was appended after the thread's last look."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll()  # what was appended after the thread's last look

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Deliver the events appended since the last look (after a read error, nothing more)."""
        if self.error is not None:
            return
        try:
            for event in self._read():
                self.on_event(event)
        except Exception as exc:  # noqa: BLE001 - progress must never break the run
            self.error = exc

    def _read(self) -> Iterator[Event]:
        for line in self.tail.new_lines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    yield event


def make_renderer(mode: Mode, *, stdout: TextIO, stderr: TextIO) -> Renderer:
    """The renderer for ``mode``; ``auto`` is ``rich`` on a terminal and ``plain`` otherwise."""
    if mode == "quiet":
        return Renderer()
    if mode == "json":
        return JsonRenderer(stdout)
    if mode in ("auto", "rich"):
        try:
            from rich.console import Console
        except ImportError:  # rich is optional: plain lines work everywhere
            return PlainRenderer(stderr)
        console = Console(file=stderr, force_terminal=True if mode == "rich" else None)
        if mode == "rich" or (console.is_terminal and not console.is_dumb_terminal):
            return RichRenderer(console)
    return PlainRenderer(stderr)


def events_path(sessions_dir: Path, session_id: str) -> Path | None:
    """The session's ``events.jsonl``; ``None`` when there is no such (safe) session, so the
    command itself reports that in its own words."""
    try:
        return SessionStore(sessions_dir).open(session_id).root / "events.jsonl"
    except HaythamError:
        return None


@contextlib.contextmanager
def showing_progress(
    path: Path | Session | None, renderer: Renderer, *, interval: float = 0.1
) -> Iterator[EventFollower | None]:
    """Show the events appended to ``path`` (or to a session of the shared database) while the
    block runs; stop and drain when it returns or raises (Ctrl-C included)."""
    if path is None or type(renderer) is Renderer:
        yield None
        return
    try:
        renderer.open()
    except Exception:  # noqa: BLE001 - no display (an odd terminal) is no reason to fail
        yield None
        return
    follower = EventFollower(path, Tracker(renderer).feed, interval)
    follower.start()
    try:
        yield follower
    finally:
        try:
            follower.stop()
        finally:
            with contextlib.suppress(Exception):
                renderer.close()


# -- estimates from this machine's past runs -----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Estimate:
    """How long a stage row usually takes here: the median of its finished runs in other
    sessions run with the same provider (``runs`` of them)."""

    seconds: float
    runs: int


def session_provider(events: list[Event]) -> str | None:
    """The provider that answered a session's model calls (else the one it was created with)."""
    for ev in events:
        if ev.get("type") == "model_call":
            return str((ev.get("data") or {}).get("provider") or "") or None
    for ev in events:
        if ev.get("type") == "session_created":
            return str((ev.get("data") or {}).get("provider") or "") or None
    return None


def stage_estimates(
    store: Store, provider: str, *, exclude: str | None = None
) -> dict[str, Estimate]:
    """Per stage row (stages, anchor, verifiers, input checks): the median wall time of its
    completed runs in the sessions under ``store`` that ran on ``provider``, except ``exclude``.
    Sessions that can't be read are skipped: an estimate never fails a page."""
    walls: dict[str, list[float]] = {}
    for sid in store.list_ids():
        if sid == exclude:
            continue
        try:
            events = store.open(sid).events()
        except HaythamError:
            continue
        if session_provider(events) != provider:
            continue
        for ev in events:
            wall = (ev.get("data") or {}).get("wall_ms")
            if ev.get("type") == "stage_completed" and ev.get("stage") and _number(wall):
                walls.setdefault(str(ev["stage"]), []).append(float(wall) / 1000)
    return {
        stage: Estimate(round(statistics.median(values), 3), len(values))
        for stage, values in walls.items()
    }


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


@dataclasses.dataclass(frozen=True)
class LiveCall:
    """The model call in progress for a session: its row and the output tokens received so far
    (estimated from the streamed text; the accounted count comes when the call returns)."""

    row: str
    tokens: int
    since: float
    text: str = ""  # the tail of what the call has generated so far


class LiveCalls:
    """Calls in progress, per session, in this process (one per service; the UI reads it while
    a background run streams). Thread-safe."""

    def __init__(self) -> None:
        self._calls: dict[str, LiveCall] = {}
        self._lock = threading.Lock()

    def reporter(self, session_id: str) -> Callable[[str, int | None], None]:
        """``(row, tokens)`` while a call of ``session_id`` streams; ``(row, None)`` when it ends."""

        def report(row: str, tokens: int | None) -> None:
            with self._lock:
                if tokens is None:
                    self._calls.pop(session_id, None)
                    return
                held = self._calls.get(session_id)
                since, text = (held.since, held.text) if held is not None else (0.0, "")
                self._calls[session_id] = LiveCall(row, tokens, since or time.monotonic(), text)

        return report

    def text_sink(self, session_id: str) -> Callable[[str, str], None]:
        """``(row, text)``: the tail of the text the session's current call has streamed so
        far (or what the model is doing before its first token)."""

        def keep(row: str, text: str) -> None:
            with self._lock:
                held = self._calls.get(session_id) or LiveCall(row, 0, time.monotonic())
                self._calls[session_id] = dataclasses.replace(held, text=text)

        return keep

    def get(self, session_id: str) -> LiveCall | None:
        """The call of ``session_id`` streaming now, if one is."""
        with self._lock:
            return self._calls.get(session_id)
