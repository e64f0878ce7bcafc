"""Wires the service with what the product runs on every session: phase verifiers and the
deterministic post-validators (one embedding model per process, loaded on first use)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haytham.config import Settings
from haytham.models.factory import ModelRuntime
from haytham.runs.service import Haytham
from haytham.runs.worker import RunWorker
from haytham.state import SessionState
from haytham.storage.backends import team_packages_missing
from haytham.validate import Embedder, Finding, Snapshot, ValidatorSettings, run_validators
from haytham.verify.factory import make_verifier


class PostValidation:
    """Runs the validators concerned with the stage that just ran (no LLM).

    Returns the findings (warnings unless made blocking by ``HAYTHAM_BLOCKING_VALIDATORS``) and
    that stage's similarity to the idea and the anchor (the divergence curve in summary.json).
    """

    def __init__(self, settings: ValidatorSettings | None = None) -> None:
        self.settings = settings or ValidatorSettings()
        self.embedder = Embedder() if self.settings.embeddings else None

    def start_loading(self) -> None:
        """Load the embedding model in the background (a run calls this as it starts, so the
        load overlaps the first model call)."""
        if self.embedder is not None:
            self.embedder.start_loading()

    def __call__(
        self, slug: str, state: SessionState, tool_calls: Sequence[Mapping[str, Any]]
    ) -> tuple[list[Finding], dict[str, float]]:
        """Run the validators of stage ``slug`` on ``state`` (with the run's logged
        ``tool_calls``): its findings and its output's similarity to the idea and the anchor."""
        snap = Snapshot(
            idea=state.idea, anchor=state.anchor, outputs=state.outputs, tool_calls=tool_calls
        )
        report = run_validators(snap, stages={slug}, settings=self.settings, embedder=self.embedder)
        return list(report.findings), report.divergence.get(slug, {})


def make_service(
    settings: Settings,
    *,
    models: ModelRuntime | None = None,
    tracking: bool = True,
    verifiers: bool = True,
    validation: PostValidation | None = None,
) -> Haytham:
    """The service as the product runs it: the phase verifiers (each phase's strategy from
    ``settings.verify``; ``verifiers=False`` only for a measured "without verifiers" run) and the
    post-validators after every stage (``validation`` shares one, and its embedding model,
    between services of one process)."""
    return Haytham(
        settings,
        models=models,
        tracking=tracking,
        verifier_factory=make_verifier if verifiers else None,
        post_validator=validation or PostValidation(settings.validators),
    )


def make_runs(service: Haytham) -> RunWorker:
    """Who runs sessions for the UI: threads of this process on one machine, or the job queue
    (:class:`haytham.runs.queue.QueuedRuns`) when the sessions are in the shared database."""
    if service.settings.secret("database_url"):
        try:
            from haytham.runs.queue import QueuedRuns  # procrastinate only where a database is used
        except ImportError as exc:
            raise team_packages_missing(exc) from None
        return QueuedRuns(service)
    return RunWorker(service)
