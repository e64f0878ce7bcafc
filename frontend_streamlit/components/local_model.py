"""The local model's startup in the Run page's words (issue 28): from the first second of a
run on the bundled model, the page says which startup step is under way, for how long, and how
long the last start took on this machine."""

from __future__ import annotations

from typing import Any


def local_model_step(server: Any) -> str | None:
    """ "starting the local model: loading the model into memory (45 s of about 60 s)", or
    ``None`` when no local server is starting (ready, or another provider)."""
    step = server.preparing() if server is not None else None
    if step is None:
        return None
    if step.last_startup_s:
        took = f"{step.elapsed_s:.0f} s of about {step.last_startup_s:.0f} s last time"
    else:
        took = f"{step.elapsed_s:.0f} s; no estimate before its first start here"
    return f"starting the local model: {step.step} ({took})"
