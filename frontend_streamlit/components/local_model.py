"""The local model's startup in the Run page's words (issue 28): from the first second of a
run on the bundled model, the page says which startup step is under way, for how long, how
much of the model file it has written or read (and, once bytes move, how long that has left),
and how long the last start took on this machine."""

from __future__ import annotations

from typing import Any

MB = 1_000_000


def megabytes(count: int) -> str:
    """``253 MB`` (``0.4 MB`` below one, ``0 MB`` for none)."""
    if count == 0:
        return "0 MB"
    return f"{count / MB:.1f} MB" if count < MB else f"{count / MB:,.0f} MB"


def local_model_step(server: Any) -> str | None:
    """ "starting the local model: loading the model into memory (45 s of about 60 s)", or
    ``None`` when no local server is starting (ready, or another provider). A step that moves
    the model file's bytes says how many: "preparing the model file: 120 of 253 MB (12 s, about
    13 s left)"."""
    step = server.preparing() if server is not None else None
    if step is None:
        return None
    words = step.step
    if step.total_bytes:
        done = step.done_bytes or 0
        words += f": {megabytes(done).removesuffix(' MB')} of {megabytes(step.total_bytes)}"
        left = step.left_s()
        took = f"{step.elapsed_s:.0f} s" + (
            f", about {left:.0f} s left" if left is not None else ", no estimate yet"
        )
    elif step.last_startup_s:
        took = f"{step.elapsed_s:.0f} s of about {step.last_startup_s:.0f} s last time"
    else:
        took = f"{step.elapsed_s:.0f} s; no estimate before its first start here"
    return f"starting the local model: {words} ({took})"
