"""Verification: phase-boundary verifiers, the rework loop and receiving-stage validation.

- :mod:`~haytham.verify.factory` — :func:`make_verifier`, what the service calls per session.
- :mod:`~haytham.verify.config` — strategy per phase (``single|swarm|off``), swarm limits, agent
  names (a verifier is never a producing agent).
- :mod:`~haytham.verify.single` / :mod:`~haytham.verify.swarm` — the two verifier strategies.
- :mod:`~haytham.verify.verdict` — what a verifier sees (context, rubric) and how its answer
  becomes the final :class:`~haytham.schemas.verification.PhaseVerification`.
- :mod:`~haytham.verify.rework` — the automatic rework policy (bounded rounds, stall detection).
- :mod:`~haytham.verify.receiving` — ``validate_input`` / ``revise_rejected`` at item boundaries.

This package imports nothing from :mod:`haytham.pipeline.runner` at import time except in
:mod:`~haytham.verify.factory`, so the runner can import :mod:`~haytham.verify.receiving`.
"""
