"""``haytham``: the command line. Every error is one clear sentence and a non-zero exit."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.config import Settings, load_settings
from haytham.errors import HaythamError, InputError, ProviderError, StageFailed, StorageError
from haytham.evals.cli import add_parser as add_eval_parser
from haytham.idea.checks import read_idea_file
from haytham.reports.blockers import target_name
from haytham.reports.export import BINARY, FORMATS, json_text, write_export
from haytham.runs.transfer import SESSION_FORMAT
from haytham.safety.redact import redact
from haytham.safety.sanitize import terminal_safe
from haytham.stages.mvp_scope import APPETITES
from haytham.storage.backends import team_packages_missing
from haytham.storage.folder import read_capped

if TYPE_CHECKING:
    from haytham.runs.service import Haytham

GATE_CHOICES = ("gate-1", "gate-2", "gate-3", "gate-4")
DEBUG_HELP = "show library logs and the traceback behind an error"
# Loggers of the libraries underneath; by default they print nothing below CRITICAL.
LIBRARY_LOGGERS = (
    "burr",
    "strands",
    "httpx",
    "httpcore",
    "botocore",
    "boto3",
    "urllib3",
    "openai",
    "anthropic",
    "ollama",
    "sentence_transformers",
    "opentelemetry",
    "asyncio",
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sessions-dir", type=Path, help="where sessions live (default ./sessions)")
    p.add_argument("--provider", help="local|anthropic|bedrock|openai|ollama|llamacpp|replay")
    p.add_argument("--cassette", type=Path, help="replay provider: cassette file or folder")
    # SUPPRESS: when absent here it leaves the top-level flag's value alone
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)


def _progress_flags(p: argparse.ArgumentParser, *, json_flag: bool) -> None:
    p.add_argument("--quiet", action="store_true", help="show no progress while stages run")
    if json_flag:
        p.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per line on stdout for each event, then the outcome",
        )


def _intake_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--answers",
        type=Path,
        help="answers to the intake questions: a UTF-8 file, one answer per line (an empty "
        "line skips a question) or a JSON list",
    )
    p.add_argument(
        "--skip-intake",
        action="store_true",
        help="start at stage 1 without classifying the idea or asking about its gaps",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``haytham`` parser: every subcommand with its flags (``eval`` from the evals CLI)."""
    parser = argparse.ArgumentParser(
        prog="haytham",
        description="Turn a startup idea into a validated specification that "
        "stays faithful to the idea.",
    )
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _common(p)
        return p

    p = add("run", "start a session from an idea and run to the first gate that needs a person")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--idea", help="the idea text")
    src.add_argument("--idea-file", type=Path, help="a UTF-8 text file with the idea")
    p.add_argument("--session-id")
    p.add_argument("--until", choices=GATE_CHOICES, help="stop at this gate")
    p.add_argument(
        "--auto-approve",
        action="store_true",
        help="approve every gate unattended (ambiguities take their first option)",
    )
    p.add_argument("--appetite", choices=tuple(APPETITES))
    _intake_flags(p)
    _progress_flags(p, json_flag=True)
    p = add("resume", "continue a session at its next step")
    p.add_argument("session_id")
    p.add_argument("--until", choices=GATE_CHOICES)
    p.add_argument("--auto-approve", action="store_true")
    _intake_flags(p)
    _progress_flags(p, json_flag=True)
    p = add("status", "where a session stands")
    p.add_argument("session_id")
    p.add_argument("--json", action="store_true")
    add("sessions", "list sessions")
    p = add("show", "print a stage's output (markdown)")
    p.add_argument("session_id")
    p.add_argument("stage", help="stage slug, or 'anchor'")
    for name, help_ in (("approve", "approve a gate"), ("reject", "reject a gate")):
        p = add(name, help_)
        p.add_argument("session_id")
        p.add_argument("--gate", type=int, required=True)
        p.add_argument("--note", default="")
        if name == "approve":
            p.add_argument(
                "--override-stale",
                default="",
                metavar="REASON",
                help="approve although the gate's checks are stale (logged with this reason)",
            )
        _progress_flags(p, json_flag=False)
    p = add(
        "recheck",
        "run a phase's verifier and validators again against the current anchor (no stage re-runs)",
    )
    p.add_argument("session_id")
    p.add_argument("--gate", type=int, help="the gate's phase (default: every stale phase)")
    p = add("rework", "send a stage back with feedback")
    p.add_argument("session_id")
    p.add_argument("--stage", required=True)
    p.add_argument("--feedback", required=True)
    _progress_flags(p, json_flag=False)
    p = add("override", "override what blocks a gate, with a reason")
    p.add_argument("session_id")
    p.add_argument("--gate", type=int, required=True)
    p.add_argument("--reason", required=True)
    p.add_argument("--target", help="one blocking item id (default: all open ones)")
    _progress_flags(p, json_flag=False)
    p = add("clarify", "resolve an ambiguous invariant at Gate 1")
    p.add_argument("session_id")
    p.add_argument("--invariant", required=True)
    p.add_argument("--choice", required=True, help="an option's text or its number")
    _progress_flags(p, json_flag=False)
    p = add("clear-from", "discard a stage and everything after it")
    p.add_argument("session_id")
    p.add_argument("stage")
    p = add("revise", "ask for a change to a stage after Gate 1; later stages re-run")
    p.add_argument("session_id")
    p.add_argument("stage")
    p.add_argument("request", help="what should change, in your words")
    p.add_argument("--yes", action="store_true", help="apply the proposed change without asking")
    _progress_flags(p, json_flag=False)
    p = add("fork", "start a new session from a stage of an existing one")
    p.add_argument("session_id")
    p.add_argument("--from", dest="stage", required=True)
    p.add_argument("--session-id", dest="new_id")
    p = add("export", "export a session")
    p.add_argument("session_id")
    p.add_argument(
        "--format",
        default="markdown",
        choices=(*FORMATS, SESSION_FORMAT),
        help="pdf: the whole specification (after Gate 4); validation-pdf: the validation "
        "report (once the WHY phase has run); both need --output. competitors: the market's "
        "competitor map as CSV. linear: stories for Linear's CSV import, dependencies as a "
        "'Blocked by' line in each description. session: the whole session "
        "as one file, for `haytham import` into this or another store",
    )
    p.add_argument("--output", type=Path, help="write to a file instead of stdout")
    p = add("import", "create a session from a `--format session` export (either store)")
    p.add_argument("file", type=Path)
    p = add("worker", "take queued runs from the shared database (team deployment)")
    p.add_argument("--concurrency", type=int, help="sessions at once (HAYTHAM_WORKER_CONCURRENCY)")
    p.add_argument("--name", help="this worker's name in the logs and the jobs table")
    add("migrate", "create or update the shared database's tables (team deployment)")
    p = add("audit", "the record of every decision: who did what, when, where (admins)")
    p.add_argument("--session", dest="audit_session", metavar="ID", help="one session's record")
    p.add_argument("--user", dest="audit_user", metavar="U", help="one user's decisions")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p = add("validate", "run the deterministic drift validators over a saved session")
    p.add_argument("target", help="session id or path to a session folder")
    p.add_argument("--json", action="store_true")
    add_eval_parser(sub)
    add("stages", "list the ten stages in order")
    add("providers", "which model providers are usable here, and why not")
    add("doctor", "check the installation")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(
        provider=args.provider, sessions_dir=args.sessions_dir, cassette=args.cassette
    )


def _service(settings: Settings) -> Haytham:
    from haytham.app import make_service  # heavy imports only for commands that need them

    return make_service(settings)


def gate_of(value: str | None) -> int | None:
    """``--until gate-N`` as the gate number N; None when the flag is absent (no early stop)."""
    return int(value.split("-")[1]) if value else None


def _print_outcome(outcome: Any, as_json: bool = False) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    "session_id": outcome.session_id,
                    "status": outcome.status,
                    "gate": outcome.gate,
                    "next_action": outcome.next_action,
                }
            )
        )
        return
    print(terminal_safe(f"session: {outcome.session_id}"))
    if outcome.gate:
        print(
            terminal_safe(
                f"waiting at Gate {outcome.gate}: review it with `haytham status "
                f"{outcome.session_id}`, then approve, rework, override or clarify."
            )
        )
    else:
        print(terminal_safe(f"status: {outcome.status}"))


def _caveat(settings: Settings) -> None:
    if settings.spec.caveat:
        print(f"note: {settings.spec.caveat}", file=sys.stderr)


def strict_arguments(args: argparse.Namespace) -> None:
    """Refuse any text argument that is not valid UTF-8, before anything is read or created.

    Python hands undecodable argv bytes over as lone surrogates (``surrogateescape``); text with
    them would be stored half-broken (an idea that later reads as empty). File and folder paths
    (``Path`` values) keep their bytes: they are valid names on POSIX.
    """
    for name, value in sorted(vars(args).items()):
        if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
            label = name.replace("_", "-")
            raise InputError(
                f"The {label} argument is not valid UTF-8 text; pass it as UTF-8 "
                "(check the terminal's encoding); nothing was changed."
            )


def _cmd(args: argparse.Namespace) -> int:  # noqa: C901 - a flat dispatch table reads best
    strict_arguments(args)
    if args.command == "eval":
        from haytham.evals.cli import main as eval_main

        return eval_main(args)
    if args.command == "stages":
        from haytham.stages import STAGES

        for s in STAGES:
            print(f"{s.number:>2}  {s.phase:<8} {s.slug}")
        return 0
    settings = _settings(args)
    if args.command == "providers":
        from haytham.models.providers import provider_report

        for p in provider_report(settings):
            print(terminal_safe(f"{'✓' if p.usable else '✗'} {p.name:<10} {p.reason}"))
        return 0
    if args.command == "doctor":
        from haytham.doctor import run_checks

        checks = run_checks(settings)
        for c in checks:
            print(terminal_safe(f"{'ok ' if c.ok else 'BAD'} {c.name}: {c.detail}"))
        return 0 if all(c.ok for c in checks) else 1
    if args.command == "validate":
        from haytham.validate import cli_main

        if settings.secret("database_url") and not Path(args.target).exists():
            from haytham.people.access import Action

            with _service(settings) as svc:  # the shared session: only for who may open it
                _acting(args, settings, svc).allow(Action.READ, args.target)
        with _validation_folder(args.target, settings) as (target, sessions_dir):
            return cli_main(
                target,
                as_json=args.json,
                sessions_dir=sessions_dir,
                validators=settings.validators,
            )
    with _service(settings) as svc:
        return _session_cmd(args, settings, _acting(args, settings, svc))


def _acting(args: argparse.Namespace, settings: Settings, svc: Any) -> Any:
    """The service acting as this command's user: the local user on one machine; in team mode
    the user of ``HAYTHAM_TOKEN`` (or ``HAYTHAM_USER`` on a trusted network), refused in one
    sentence without either. The operator's commands (migrate, worker) act as the system."""
    from haytham.people.access import SYSTEM, cli_actor, local_actor

    if not settings.secret("database_url"):
        return svc
    if args.command in ("migrate", "worker"):
        return svc.acting_as(SYSTEM)
    policy = svc.policy.current()
    user = settings.user or (local_actor().id if policy.trusted_network else None)
    return svc.acting_as(cli_actor(policy, token=settings.secret("token"), user=user, team=True))


@contextlib.contextmanager
def _validation_folder(target: str, settings: Settings) -> Iterator[tuple[str, Path]]:
    """What ``haytham validate`` reads: a folder as given, or a session id of the sessions
    folder; with the shared database, that session copied whole into a temporary folder (the
    validators read the folder contract, which both stores keep)."""
    if not settings.secret("database_url") or Path(target).exists():
        yield target, settings.sessions_dir
        return
    from haytham.runs.transfer import dump_session, load_session
    from haytham.storage.backends import open_store
    from haytham.storage.folder import SessionStore

    store = open_store(settings)
    try:
        with tempfile.TemporaryDirectory(prefix="haytham-validate-") as tmp:
            copy = SessionStore(Path(tmp))
            sid = load_session(copy, dump_session(store.open(target)))
            yield sid, copy.root
    finally:
        store.close()


def _progressing(
    args: argparse.Namespace, svc: Any, session_id: str
) -> contextlib.AbstractContextManager[Any]:
    """Show the session's stages on stderr while the block runs (``--json``: as JSON lines
    on stdout; ``--quiet``: nothing)."""
    from haytham.runs.progress import Mode, events_path, make_renderer, showing_progress

    if getattr(args, "quiet", False):
        return contextlib.nullcontext()
    mode: Mode = "json" if getattr(args, "json", False) else "auto"
    renderer = make_renderer(mode, stdout=sys.stdout, stderr=sys.stderr)
    if svc.settings.secret("database_url"):  # team mode: the events are rows, not a file
        try:
            source = svc.store.open(session_id)
        except HaythamError:
            source = None  # the command itself reports that, in its own words
        return showing_progress(source, renderer)
    return showing_progress(events_path(svc.settings.sessions_dir, session_id), renderer)


AT_INTAKE = ("waiting_intake", "unrelated")  # a run that stopped at intake, for the founder


def _team_runs(svc: Any) -> Any | None:
    """On a team's shared database, the job queue that runs sessions (``haytham worker``);
    ``None`` on one machine, where this command runs the session itself."""
    if not svc.settings.secret("database_url"):
        return None
    from haytham.app import make_runs

    return make_runs(svc)


def _moves_on(outcome: Any) -> bool:
    """Whether a gate decision sent the session on (approve, rework, reject)."""
    from haytham.state import is_gate

    return bool(outcome.next_action) and not is_gate(outcome.next_action)


def _on_queue(runs: Any, svc: Any, session_id: str, label: str) -> Any:
    """The run to the next gate as a job for the team's workers; this command waits for it and
    shows its progress (Ctrl-C stops the waiting, not the run), then says where it stands."""
    runs.run(session_id, label)
    print(f"queued for a worker: {session_id}", file=sys.stderr)
    try:
        job = runs.wait(session_id)
    except KeyboardInterrupt:
        print(
            f"Stopped waiting; the run goes on in a worker (`haytham status {session_id}`).",
            file=sys.stderr,
        )
        raise
    finally:
        runs.close()
    if job is not None and job.state == "failed":
        raise HaythamError(job.error or "The run stopped in a worker; resume to try again.")
    from haytham.runs.service import Outcome

    standing = svc.status(session_id)
    return Outcome(session_id, standing["status"], gate=standing["gate"])


def _session_cmd(args: argparse.Namespace, settings: Settings, svc: Any) -> int:
    if args.command in ("run", "resume"):
        answers = read_answers_file(args.answers) if args.answers else None
        if args.command == "run":
            idea = read_idea_file(args.idea_file) if args.idea_file else args.idea
            from haytham.models.providers import check_provider

            check_provider(settings)
            sid = svc.create_session(
                idea,
                appetite=args.appetite,
                session_id=args.session_id,
                skip_intake=args.skip_intake,
            )
            args.session_id = sid  # named in the hint if the run fails
            print(f"session: {sid}", file=sys.stderr)
        elif args.skip_intake and answers is None:
            answers = []  # a session waiting at intake goes on without answers
        _caveat(settings)
        # on a team's database the run is a job for the workers, unless this command itself
        # decides the gates (--auto-approve) or stops early (--until)
        runs = None if args.until or args.auto_approve else _team_runs(svc)
        with _progressing(args, svc, args.session_id):
            if runs is None:
                outcome = svc.run(
                    args.session_id, until=gate_of(args.until), auto_approve=args.auto_approve
                )
            else:
                outcome = svc.classify(args.session_id)  # intake here, as an app instance does
                if outcome.status not in AT_INTAKE:
                    outcome = _on_queue(runs, svc, args.session_id, args.command)
        outcome = _intake(args, svc, outcome, answers, runs)
        _print_outcome(outcome, args.json)
        if outcome.status == AT_INTAKE[0]:
            print(
                f"To go on, put one answer per line in a file and run `haytham resume "
                f"{outcome.session_id} --answers FILE` (or `--skip-intake` to go on without "
                "answers).",
                file=sys.stderr if args.json else sys.stdout,
            )
    elif args.command in ("approve", "reject", "rework", "override", "clarify"):
        runs = _team_runs(svc)
        with _progressing(args, svc, args.session_id):
            outcome = _decide(args, svc, continue_run=runs is None)
            if runs is not None and _moves_on(outcome):
                outcome = _on_queue(runs, svc, args.session_id, f"{args.command} (CLI)")
        _print_outcome(outcome)
    elif args.command == "status":
        _print_status(svc.status(args.session_id), args.json)
    elif args.command == "sessions":
        for sid in svc.list_sessions():
            print(terminal_safe(sid))
    elif args.command == "show":
        print(terminal_safe(svc.show(args.session_id, args.stage)))
    elif args.command == "clear-from":
        _print_outcome(svc.clear_from(args.session_id, args.stage))
    elif args.command == "recheck":
        outcome = svc.recheck(args.session_id, args.gate)
        for line in outcome.messages:
            print(terminal_safe(line))
        _print_outcome(outcome)
    elif args.command == "fork":
        print(terminal_safe(svc.fork(args.session_id, args.stage, args.new_id)))
    elif args.command == "revise":
        return _revise(args, settings, svc)
    elif args.command == "import":
        print(terminal_safe(f"imported session {svc.import_session(args.file)}"))
    elif args.command == "migrate":
        print(terminal_safe(svc.migrate()))
    elif args.command == "audit":
        for d in svc.decisions(args.audit_session, args.audit_user):
            print(terminal_safe(d.model_dump_json() if args.json else _audit_line(d)))
    elif args.command == "worker":
        try:
            from haytham.runs.queue import run_worker
        except ImportError as exc:
            raise team_packages_missing(exc) from None
        run_worker(svc, concurrency=args.concurrency or settings.worker_concurrency, name=args.name)
    elif args.command == "export":
        if args.format in BINARY and not args.output:
            raise InputError(f"A {args.format} export is a PDF file: name it with --output FILE.")
        text = svc.export(args.session_id, args.format)
        if args.output:
            write_export(args.output, text)
        else:
            sys.stdout.write(terminal_safe(str(text)))
    return 0


def _audit_line(d: Any) -> str:
    """One decision as a line: when, who, what, which session and gate round, why."""
    where = f"{d.session_id}" + (f" gate {d.gate} round {d.round}" if d.gate else "")
    detail = "; ".join(f"{k}: {v}" for k, v in d.detail.items())
    return f"{d.at}  {d.actor_label}  {d.action}  {where}  [{d.instance}]" + (
        f"  {detail}" if detail else ""
    )


def read_answers_file(path: Path) -> list[str]:
    """Answers to the intake questions from a UTF-8 file (one a line, or a JSON list)."""
    from haytham.idea.intake import parse_answers_text

    try:
        raw = read_capped(path, 64 * 1024)
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if raw is None:
        raise InputError(f"{path} is larger than answers can be (64 KiB); shorten it.")
    try:
        return parse_answers_text(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; save it as UTF-8 and try again.") from None


def _intake(
    args: argparse.Namespace,
    svc: Any,
    outcome: Any,
    answers: list[str] | None,
    runs: Any | None,
) -> Any:
    """At intake: show the questions (or, for an unrelated text, why and some example ideas);
    answer them from ``--answers``, or on a terminal by asking; without either, stay there."""
    if outcome.status not in ("waiting_intake", "unrelated"):
        if answers and outcome.status != "waiting_intake":
            print("note: intake asked no questions; --answers was not used.", file=sys.stderr)
        return outcome
    intake = svc.status(outcome.session_id).get("intake") or {}
    out = sys.stderr if args.json else sys.stdout
    if outcome.status == "unrelated":
        print(terminal_safe(f"Not a startup idea: {intake.get('explanation', '')}"), file=out)
        for example in intake.get("examples", []):
            print(terminal_safe(f"  e.g. {example}"), file=out)
        print(
            "Start over with a new idea: `haytham run --idea-file FILE`; if this one is an "
            "idea the model misread, run it again with `--skip-intake`.",
            file=out,
        )
        return outcome
    questions = intake.get("questions", [])
    if answers is None:
        why = intake.get("reasoning", "")
        print(terminal_safe(f"The idea needs a few details first: {why}"), file=out)
    if answers is None and not args.json and sys.stdin.isatty():
        answers = []
        for n, q in enumerate(questions, 1):
            label = q["dimension"].replace("_", " ")
            answers.append(input(terminal_safe(f"{n}. ({label}) {q['question']}\n> ")))
    elif answers is None:
        for n, q in enumerate(questions, 1):
            label = q["dimension"].replace("_", " ")
            print(terminal_safe(f"{n}. ({label}) {q['question']}"), file=out)
        return outcome
    with _progressing(args, svc, outcome.session_id):
        if runs is None:
            return svc.answer_intake(outcome.session_id, answers)
        svc.answer_intake(outcome.session_id, answers, continue_run=False)
        return _on_queue(runs, svc, outcome.session_id, "answers (CLI)")


def _revise(args: argparse.Namespace, settings: Settings, svc: Any) -> int:
    """Show the proposed change, code's impact on the invariants and the agent's answer; apply
    it with --yes or a "y" on a terminal, unless it breaks an invariant."""
    from haytham.changes.impact import impact_lines
    from haytham.changes.request import refusal

    proposal = svc.propose_change(args.session_id, args.stage, args.request)
    print(terminal_safe(f"Proposed change to {proposal.stage}: {proposal.why}"))
    for c in proposal.changes:
        before = f" {c.before!r} →" if c.before else ""
        print(terminal_safe(f"  {c.kind:8} {c.where}:{before} {c.after!r}".rstrip()))
    if not proposal.changes:
        print("  (no change to the stage's data)")
    impact = proposal.impact
    touched = impact.touched
    print(terminal_safe(f"Invariants it touches (code's check): {', '.join(touched) or 'none'}"))
    for line in impact_lines(impact):
        print(terminal_safe(f"  {line}"))
    agent = ", ".join(proposal.invariants_touched) or "none"
    breaks = ", ".join(proposal.breaks) or "none"
    print(terminal_safe(f"The agent's answer: touches {agent}; breaks {breaks}."))
    for line in impact.disagreements():
        print(terminal_safe(f"  Disagreement: {line}"))
    refused = refusal(proposal)
    if refused:
        raise InputError(refused)
    if not args.yes:
        if not sys.stdin.isatty():
            print("Nothing applied: rerun with --yes to apply a change.")
            return 0
        if input("Apply it and re-run the later stages? [y/N] ").strip().lower() not in (
            "y",
            "yes",
        ):
            print("Nothing applied.")
            return 0
    runs = _team_runs(svc)
    with _progressing(args, svc, args.session_id):
        outcome = svc.apply_change(args.session_id, proposal, continue_run=runs is None)
        if runs is not None:
            outcome = _on_queue(runs, svc, args.session_id, f"change request to {args.stage}")
    _print_outcome(outcome)
    return 0


def _decide(args: argparse.Namespace, svc: Any, *, continue_run: bool) -> Any:
    """A reviewer's command at a gate; approve and rework run on to the next gate (here, with
    ``continue_run``)."""
    if args.command == "approve":
        return svc.approve(
            args.session_id,
            args.gate,
            args.note,
            override_stale=args.override_stale,
            continue_run=continue_run,
        )
    if args.command == "reject":
        return svc.reject(args.session_id, args.gate, args.note, continue_run=continue_run)
    if args.command == "rework":
        return svc.rework(args.session_id, args.stage, args.feedback, continue_run=continue_run)
    if args.command == "override":
        return svc.override(args.session_id, args.gate, args.reason, args.target)
    return svc.clarify(args.session_id, args.invariant, args.choice)


def _print_status(st: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json_text(st))  # C0 escaped by json, C1 by json_text: nothing raw, nothing lost
        return
    lines: list[str] = []
    say = lines.append
    where = {
        "running": "running (a process is working on it)",
        "waiting": f"waiting at Gate {st['gate']}",
        "failed": "failed",
        "stopped": "stopped before finishing; `haytham resume` continues it",
    }.get(st["state"], st["state"])
    if st["status"] == "waiting_intake":
        where = "waiting for answers to the intake questions"
    say(f"session {st['session_id']}: {where}")
    intake = st.get("intake") or {}
    if st["status"] in ("waiting_intake", "unrelated") and intake.get("reasoning"):
        say(f"intake: {intake['reasoning']}")
    for n, q in enumerate(intake.get("questions") or [], 1):
        answer = f" — answered: {q['answer']}" if q.get("answer") else ""
        say(f"  {n}. ({q['dimension'].replace('_', ' ')}) {q['question']}{answer}")
    if st["status"] == "unrelated":
        say(f"not a startup idea: {intake.get('explanation', '')}")
        say("example ideas: " + " | ".join(intake.get("examples") or []))
    if st["verdict"]:
        say(f"verdict: {st['verdict']}")
    for slug, row in st["summary"]["stages"].items():
        if row["status"] != "pending":
            say(
                f"  {slug:<24} {row['status']:<16} calls={row['model_calls']} "
                f"tokens={row['input_tokens'] + row['output_tokens']} "
                f"{row['wall_ms'] / 1000:.1f}s"
            )
    for amb in st["open_ambiguities"]:
        opts = "; ".join(f"{n}. {o}" for n, o in enumerate(amb["options"], 1))
        say(
            f"clarify {amb['invariant']} ({round(amb['confidence'] * 100)}% confident): "
            f"{amb['ambiguity']} Options: {opts}"
        )
    if st["ungrounded"]:
        say(f"not found in your idea (check at Gate 1): {', '.join(st['ungrounded'])}")
    if st.get("stale_summary"):
        first = st["stale"][0] if st["stale"] else None
        rerun = f" or `haytham clear-from {st['session_id']} {first}`" if first else ""
        say(
            f"stale checks: {st['stale_summary']}; re-check them with `haytham recheck "
            f"{st['session_id']}`{rerun}."
        )
    for inv in st.get("open_invariants") or []:
        say(f"open (the founder has not decided): {inv['id']} {inv['invariant']}")
    for b in st["blocking"]:
        say(f"blocking [{b['id']}]: {b['message']}")
    for n, g in sorted(st["gates"].items()):
        if g.get("rework_stage"):
            say(f"rework at Gate {n} of {g['rework_stage']}: {g.get('feedback', '')}")
    for o in st["overrides"]:
        say(f"override at Gate {o['gate']} ({target_name(o['target'])}): {o['reason']}")
    if st["last_error"]:
        say(
            f"last error: {st['last_error']} — fix the cause, then `haytham resume "
            f"{st['session_id']}`."
        )
    for f in st["broken_files"]:
        say(f"broken file: {f}")
    print(terminal_safe("\n".join(lines)))


class _OneLineLogs(logging.Handler):
    """Log records on the current ``sys.stderr``. By default: Haytham's own warnings and any
    library's CRITICAL records, one line each, never a traceback. With ``--debug``: everything
    that reaches the handler, with tracebacks."""

    def __init__(self, debug: bool) -> None:
        super().__init__(logging.DEBUG if debug else logging.WARNING)
        self.debug = debug
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # logging must never break or trace the command
            if self.debug:
                text = self.format(record)
            else:
                own = record.name == "haytham" or record.name.startswith("haytham.")
                if not own and record.levelno < logging.CRITICAL:
                    return
                text = f"{record.levelname.lower()}: {record.getMessage()}"
            sys.stderr.write(terminal_safe(redact(text)) + "\n")


@contextlib.contextmanager
def _quiet_libraries(debug: bool) -> Iterator[None]:
    """For one command: library loggers print nothing below CRITICAL and nothing with a
    traceback (a failed swarm node's model call makes Strands log two); ``--debug`` shows
    Haytham's logs at DEBUG and the libraries' at WARNING, tracebacks included. Levels, the
    handler and the thread hook are put back afterwards (tests call ``main`` in-process)."""
    names = ("", "haytham", *LIBRARY_LOGGERS)
    saved = {name: logging.getLogger(name).level for name in names}
    root = logging.getLogger()
    handler = _OneLineLogs(debug)
    hook = threading.excepthook
    root.setLevel(logging.WARNING if debug else logging.CRITICAL)
    logging.getLogger("haytham").setLevel(logging.DEBUG if debug else logging.WARNING)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.CRITICAL)
    if not debug:

        def one_line(info: threading.ExceptHookArgs) -> None:
            print(
                f"error in thread {info.thread.name if info.thread else '?'}: "
                f"{info.exc_type.__name__}: {redact(str(info.exc_value))}",
                file=sys.stderr,
            )

        threading.excepthook = one_line
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        threading.excepthook = hook
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """The console entry point: run one command and return its exit code (0, or the
    :class:`HaythamError`'s ``exit_code`` after printing its one sentence)."""
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    with _quiet_libraries(debug):
        return _main(args, debug)


def _main(args: argparse.Namespace, debug: bool) -> int:
    try:
        return _cmd(args)
    except HaythamError as exc:
        if debug:
            sys.stderr.write(redact(traceback.format_exc()))
        print(f"error: {terminal_safe(redact(str(exc)))}", file=sys.stderr)
        sid = getattr(args, "session_id", None)
        if (
            sid
            and args.command
            in ("run", "resume", "approve", "reject", "rework", "override")
            + ("clarify", "clear-from", "revise")
            and isinstance(exc, StageFailed | ProviderError | StorageError)
            and "haytham resume" not in str(exc)
        ):
            print(
                f"completed stages are saved; fix the cause, then `haytham resume {sid}`.",
                file=sys.stderr,
            )
        return exc.exit_code
    except BrokenPipeError:  # `haytham status … | head`: the reader left; nothing to report
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except KeyboardInterrupt:
        print(
            "interrupted; completed stages are saved — `haytham resume` continues.", file=sys.stderr
        )
        return 130
    except ValueError as exc:  # bad settings values from env / flags
        if debug:
            sys.stderr.write(redact(traceback.format_exc()))
        print(f"error: {InputError(redact(str(exc)))}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one sentence here, the traceback with --debug
        if debug:
            raise
        print(
            f"error: unexpected {type(exc).__name__}: {terminal_safe(redact(str(exc)))} (a bug "
            "in haytham; rerun with "
            "--debug for the traceback and report it).",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
