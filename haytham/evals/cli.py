"""``haytham eval``: the agent regression suite (``make test-agents``).

Wiring (in :mod:`haytham.cli`)::

    add_eval_parser(sub)                                  # in build_parser()
    if args.command == "eval": return eval_main(args)     # first line of _cmd()

Exit status: 0 when no regression against the previous comparable report (or none exists),
1 on a regression beyond ``--tolerance``, 2 for bad flags or an unusable provider.
With no provider configured (no ``--provider``, no ``HAYTHAM_PROVIDER`` in the environment or
``.env``) it says how to configure one and replays the bundled cassettes. Settings are read once
(:func:`~haytham.config.load_settings`); ``--reports-dir`` defaults to ``HAYTHAM_REPORTS_DIR``
(``settings.evals.reports_dir``) and ``HAYTHAM_EMBEDDINGS`` (``settings.validators``) can turn the
embedding analysis off like ``--no-embeddings``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haytham.errors import HaythamError, InputError

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
BUNDLED = REPO_ROOT / "tests" / "fixtures" / "cassettes" / "evals" / "baseline"
MANIFEST = "manifest.json"
NO_PROVIDER = (
    "No model provider is configured, so `haytham eval` replays the bundled cassettes in "
    "{bundled} (offline, deterministic; this is what CI runs).\n"
    "To evaluate a real model, configure a provider and run again, e.g.:\n"
    "  export HAYTHAM_PROVIDER=anthropic ANTHROPIC_API_KEY=...   (or bedrock, openai, ollama; "
    "see docs/providers.md and docs/evals.md)\n"
    "  make test-agents PROVIDER=anthropic IDEAS=power-of-8,changelog-cli K=2\n"
    "or try the bundled local model (slow, low scores): make test-agents PROVIDER=local "
    "IDEAS=power-of-8 K=1"
)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def configure(p: argparse.ArgumentParser) -> None:
    """Add the ``haytham evals`` options to ``p``."""
    p.add_argument(
        "--provider",
        help="local|anthropic|bedrock|openai|ollama|llamacpp "
        "(default: HAYTHAM_PROVIDER; none set = replay the bundled cassettes)",
    )
    p.add_argument(
        "--ideas",
        help="comma-separated idea ids from tests/fixtures/ideas.json "
        "(default: all; in replay: the cassette's ideas)",
    )
    p.add_argument("--rubrics", help="comma-separated rubric ids (default: all)")
    p.add_argument("--k", type=_positive_int, help="judge replicas per rubric (default 2)")
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="temperature 0 and fixed seeds for judges; cache judgements and sessions",
    )
    p.add_argument("--budget", help="tokens=N,ms=M: stop cleanly with a partial report")
    p.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="record every model turn as cassettes in DIR (one file per idea)",
    )
    p.add_argument(
        "--replay",
        type=Path,
        metavar="DIR",
        help="replay a recorded suite from DIR, offline and deterministic",
    )
    p.add_argument(
        "--pipeline-replay",
        type=Path,
        metavar="DIR",
        help="replay the pipeline from DIR but judge with --provider",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.5,
        help="score drop (1-5 scale) that counts as a regression (default 0.5)",
    )
    p.add_argument(
        "--reports-dir",
        type=Path,
        help="where reports go (default: HAYTHAM_REPORTS_DIR, else reports/test-agents)",
    )
    p.add_argument("--baseline", type=Path, help="compare with this report instead of the last one")
    p.add_argument(
        "--chaos",
        help="inject errors: all, or competitor,statistic,invariant "
        "(kind@stage-slug to choose the stage)",
    )
    p.add_argument(
        "--agree-within",
        type=float,
        default=1.0,
        help="replicas within this many points agree (early exit; default 1)",
    )
    p.add_argument("--no-referee", action="store_true", help="never run a referee replica")
    p.add_argument("--no-cache", action="store_true", help="ignore cached judgements/sessions")
    p.add_argument(
        "--no-embeddings",
        action="store_true",
        help="skip embedding-based divergence (also HAYTHAM_EMBEDDINGS=off)",
    )
    p.add_argument("--ideas-file", type=Path, help="another ideas.json")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to ``haytham``'s subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="run the agent evaluation suite (LLM-as-judge regression tests)",
        description="Run test ideas through the pipeline, score them with judge agents against "
        "the rubrics in prompts/rubrics/, write reports/test-agents/<timestamp>/ and compare "
        "with the previous report.",
    )
    configure(p)
    return p


def _split(text: str | None) -> tuple[str, ...] | None:
    items = tuple(x.strip() for x in (text or "").split(",") if x.strip())
    return items or None


def _provider_configured(settings: Any) -> bool:
    """Whether ``HAYTHAM_PROVIDER`` (environment or ``.env``) chose a provider."""
    return "provider" in settings.model_fields_set


def _manifest(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _embeddings_on(args: argparse.Namespace, settings: Any) -> bool:
    return not args.no_embeddings and settings.validators.embeddings


def build_config(args: argparse.Namespace, err: Any = None, settings: Any = None) -> Any:
    """The :class:`~haytham.evals.suite.SuiteConfig` for parsed ``args`` (may print a notice).

    ``settings`` (default: :func:`~haytham.config.load_settings`, read once here) gives the
    judge's and the pipeline's settings, with ``--provider`` / ``--replay`` /
    ``--pipeline-replay`` applied over them."""
    from haytham.config import load_settings
    from haytham.evals.budget import Budget
    from haytham.evals.chaos import ChaosSpec
    from haytham.evals.suite import SuiteConfig
    from haytham.models.providers import check_provider

    if args.replay and args.record:
        raise InputError("Use --record or --replay, not both.")
    base = settings if settings is not None else load_settings()
    replay = args.replay
    notes: list[str] = []
    if (
        replay is None
        and args.provider is None
        and args.pipeline_replay is None
        and not _provider_configured(base)
    ):
        print(NO_PROVIDER.format(bundled=BUNDLED), file=err or sys.stderr)
        replay = BUNDLED
        notes.append("no provider configured: replayed the bundled cassettes")
    manifest = _manifest(replay) if replay is not None else {}
    pipeline_settings = None
    if replay is not None:
        settings = base.updated(provider="replay", cassette=replay)
        mode = "replay"
    else:
        settings = base.updated(provider=args.provider)
        mode = "record" if args.record else "live"
        if args.pipeline_replay is not None:
            pipeline_settings = base.updated(provider="replay", cassette=args.pipeline_replay)
            mode = "judge-only"
            check_provider(pipeline_settings)
    check_provider(settings)
    ideas = _split(args.ideas) or (tuple(manifest["ideas"]) if manifest.get("ideas") else None)
    k = args.k or int(manifest.get("k") or 2)
    chaos_text = (
        args.chaos
        if args.chaos is not None
        else (",".join(manifest.get("chaos") or []) if replay is not None else None)
    )
    kwargs: dict[str, Any] = {}
    if args.ideas_file is not None:
        kwargs["ideas_file"] = args.ideas_file
    return SuiteConfig(
        settings=settings,
        pipeline_settings=pipeline_settings,
        mode=mode,
        reports_dir=args.reports_dir or base.evals.reports_dir,
        ideas=ideas,
        rubrics=_split(args.rubrics)
        or (tuple(manifest["rubrics"]) if manifest.get("rubrics") else None),
        k=k,
        agree_within=args.agree_within,
        referee=not args.no_referee,
        deterministic=args.deterministic or bool(manifest.get("deterministic")),
        budget=Budget.parse(args.budget),
        tolerance=args.tolerance,
        chaos=tuple(ChaosSpec.parse_list(chaos_text)),
        embeddings=_embeddings_on(args, base),
        record_dir=args.record,
        baseline=args.baseline,
        cache=not args.no_cache,
        notes=tuple(notes),
        **kwargs,
    )


def _write_manifest(config: Any, report: dict[str, Any]) -> None:
    if config.record_dir is None:
        return
    config.record_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "ideas": report["config"]["ideas"],
        "rubrics": report["config"]["rubrics"],
        "k": config.k,
        "deterministic": config.deterministic,
        "chaos": report["config"]["chaos"],
        "provider": config.settings.provider,
        "models": report["config"]["models"],
        "recorded_from_report": report["run_id"],
    }
    (config.record_dir / MANIFEST).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _print_result(run_dir: Path, report: dict[str, Any], out: Any) -> None:
    print(f"report: {run_dir / 'report.json'}", file=out)
    print(f"summary: {run_dir / 'summary.md'}", file=out)
    for idea in report["ideas"]:
        usage = idea["usage"]
        mean = idea["mean_score"] if idea["mean_score"] is not None else "–"
        print(
            f"  {idea['id']:<24} mean {mean}"
            f"  pipeline {idea['pipeline']['status']:<8} {usage['calls']} calls "
            f"{usage['input_tokens'] + usage['output_tokens']} tokens "
            f"{usage['wall_ms'] / 1000:.1f}s",
            file=out,
        )
    print(
        f"overall {report['overall']} / 5 in {report['totals']['wall_ms'] / 1000:.1f}s"
        + (f"; PARTIAL: {report['stopped_reason']}" if report["partial"] else ""),
        file=out,
    )
    comp = report["comparison"]
    if comp["previous"] is None:
        print("no earlier comparable report: nothing to compare", file=out)
    elif comp["passed"]:
        print(f"no regression against {comp['previous']} (tolerance {comp['tolerance']})", file=out)
    else:
        print(f"REGRESSION against {comp['previous']} (tolerance {comp['tolerance']}):", file=out)
        for r in comp["regressions"]:
            print(
                f"  {r['idea']} / {r['rubric']}: {r['previous']} -> {r['current']} ({r['reason']})",
                file=out,
            )


def main(args: argparse.Namespace) -> int:
    """Run ``haytham eval`` for parsed ``args``; returns the exit status."""
    # A failing stage is reported in one line and in the report; Burr's multi-line banner for
    # the same exception is only noise here (restored afterwards).
    burr_log = logging.getLogger("burr.core.application")
    level = burr_log.level
    burr_log.setLevel(logging.CRITICAL)
    try:
        from haytham.evals.suite import run_suite

        config = build_config(args)
        run_dir, report = run_suite(config, log=lambda m: print(m, file=sys.stderr, flush=True))
        _write_manifest(config, report)
    except HaythamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        burr_log.setLevel(level)
    _print_result(run_dir, report, sys.stdout)
    return 0 if report["comparison"]["passed"] else 1


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point (``python -m haytham.evals.cli``), same flags as ``haytham eval``."""
    parser = argparse.ArgumentParser(prog="haytham eval")
    configure(parser)
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(run_cli())
