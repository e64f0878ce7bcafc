"""Agent evaluation suite (issue 7, ADR-022 Part 7): ``haytham eval`` / ``make test-agents``.

Modules: :mod:`~haytham.evals.ideas` (test ideas and their deterministic checks),
:mod:`~haytham.evals.rubrics` (``prompts/rubrics``), :mod:`~haytham.evals.judge` (judge agents,
replicas, referee, cache), :mod:`~haytham.evals.aggregate` (trimmed mean, agreement, band),
:mod:`~haytham.evals.budget`, :mod:`~haytham.evals.pipeline` (running ideas through the service),
:mod:`~haytham.evals.chaos` (7d), :mod:`~haytham.evals.divergence` (7e),
:mod:`~haytham.evals.calibration` (7c), :mod:`~haytham.evals.report` and
:mod:`~haytham.evals.suite`; :mod:`~haytham.evals.cli` is the command. Importing this package
is cheap; the heavy parts are imported by the modules that need them.
"""
