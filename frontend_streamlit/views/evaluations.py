"""Evaluations: the `haytham eval` reports (reports/test-agents) and their scores over time.

Read-only: lists the reports written by ``make test-agents`` / ``haytham eval``; it never runs
the suite. The folder is the settings' ``evals.reports_dir`` (``HAYTHAM_REPORTS_DIR``, default
``reports/test-agents``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import settings
from frontend_streamlit.components.safe_text import code, md, no_paths, safe_markdown
from haytham.errors import HaythamError
from haytham.evals.report import list_reports

try:
    root = settings().evals.reports_dir
except HaythamError as exc:
    st.error(f"Haytham is not configured correctly: {md(no_paths(str(exc)))}")
    st.stop()
st.title("Evaluations")
st.caption(f"Agent evaluation reports in {code(root)} (written by `make test-agents`).")

reports = list_reports(root)
if not reports:
    st.info(
        f"No evaluation reports in {code(root)} yet. Run `make test-agents` (with no provider "
        "configured it replays the bundled cassettes).",
        icon=":material/info:",
    )
    st.stop()

rows = []
for path, data in reports:
    cfg, comp = data.get("config", {}), data.get("comparison", {})
    rows.append(
        {
            "run": data.get("run_id", path.name),
            "series": cfg.get("comparable", ""),
            "provider": f"{cfg.get('provider')} ({cfg.get('mode')})",
            "ideas": ", ".join(cfg.get("ideas", [])),
            "K": cfg.get("k"),
            "overall": data.get("overall"),
            "regression": None if comp.get("previous") is None else not comp.get("passed", True),
            "partial": bool(data.get("partial")),
            "wall s": round(float((data.get("totals") or {}).get("wall_ms", 0)) / 1000, 1),
            "tokens": int((data.get("totals") or {}).get("input_tokens", 0))
            + int((data.get("totals") or {}).get("output_tokens", 0)),
        }
    )
table = pd.DataFrame(rows)

series = list(dict.fromkeys(table["series"]))
chosen = st.selectbox(
    "Series (provider and models; only like is compared with like)",
    series,
    index=len(series) - 1,
    key="eval_series",
)
mine = [(p, d) for p, d in reports if d.get("config", {}).get("comparable", "") == chosen]

st.subheader("Scores over time")
scores = pd.DataFrame(
    [
        {"run": d.get("run_id", p.name), "overall": d.get("overall"), **(d.get("scores") or {})}
        for p, d in mine
    ]
).set_index("run")
st.line_chart(scores, y_label="score (1-5)")
st.caption(
    "Mean judge score per rubric across the run's ideas; `overall` is the mean over "
    "ideas. Deterministic checks and chaos results are in each report."
)

st.subheader("Reports")
st.dataframe(table[table["series"] == chosen].drop(columns=["series"]), hide_index=True)

runs = [d.get("run_id", p.name) for p, d in mine]
picked = st.selectbox("Report", runs, index=len(runs) - 1, key="eval_report")
folder = next(p for p, d in mine if d.get("run_id", p.name) == picked)
summary = folder / "summary.md"
if summary.is_file():
    st.markdown(safe_markdown(summary.read_text(encoding="utf-8")))
else:
    st.warning(f"{md(picked)}: summary.md is missing; the report.json is still there.")
