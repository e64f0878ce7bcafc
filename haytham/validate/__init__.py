"""Deterministic drift detectors (ADR-022 Parts 2, 3, 4, 7c, 7e): no LLM, run after every stage.

Public API::

    report = run_validators(load_snapshot(path), stages={spec.slug}, embedder=emb)
    report.findings      # list[Finding]: validator, severity, stage, invariant, message, evidence
    report.divergence    # slug -> {"idea": cosine, "anchor": cosine}

Validators (one module each; docstrings say what each catches and cannot): trait_propagation,
invariant_coverage, claim_consistency (``claims``), appetite, framework_coherence
(``frameworks``), embedding_divergence (``divergence``), embedding_contradiction
(``contradiction``). All start in warning mode; ``HAYTHAM_BLOCKING_VALIDATORS`` makes some
blocking and ``HAYTHAM_EMBEDDINGS=off`` skips the two embedding validators.
"""

from __future__ import annotations

from haytham.validate.cli import cli_main
from haytham.validate.embeddings import Embedder, Encoder
from haytham.validate.loader import load_snapshot
from haytham.validate.model import (
    VALIDATOR_NAMES,
    Finding,
    Snapshot,
    ValidationReport,
    ValidatorSettings,
)
from haytham.validate.runner import run_validators

__all__ = [
    "VALIDATOR_NAMES",
    "Embedder",
    "Encoder",
    "Finding",
    "Snapshot",
    "ValidationReport",
    "ValidatorSettings",
    "cli_main",
    "load_snapshot",
    "run_validators",
]
