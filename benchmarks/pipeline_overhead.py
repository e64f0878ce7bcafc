"""Pipeline overhead: how much of a run is Haytham rather than the model.

Runs the Power of 8 replay pipeline end to end (--auto-approve, default settings: verifiers,
input validation and embedding validators on; the cassette covers every verifier turn) twice:
  1. plain replay — the absolute run time, excluding imports (target < 5 s);
  2. replay with a simulated model latency per call (default 5 s; hosted models take 5–60 s
     for a structured stage answer, the bundled local model ~30 s)
     — overhead share = (wall − model time) / wall (target < 2 %).
Model time is the sum of ``latency_ms`` over the session's ``model_call`` events. Of the plain
run's time, the share spent loading the sentence model and embedding (the embedding validators)
is printed too.

    .venv/bin/python benchmarks/pipeline_overhead.py [--latency 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import_started = time.perf_counter()
import haytham.models.factory as factory  # noqa: E402
from haytham.app import make_service  # noqa: E402
from haytham.config import load_settings  # noqa: E402
from haytham.validate.embeddings import Embedder  # noqa: E402

IMPORT_S = time.perf_counter() - import_started
# the stages and the turns of every verifier and input validator: no cassette misses
CASSETTE = ROOT / "tests/fixtures/cassettes/power_of_8/full"
IDEA = (ROOT / "tests/fixtures/ideas/power_of_8.md").read_text()


class Timed:
    """Adds up the seconds spent in the embedder's load and encode while installed."""

    def __init__(self) -> None:
        self.load_s = self.encode_s = 0.0

    def __enter__(self) -> Timed:
        self.saved = Embedder._load, Embedder.encode
        load, encode = self.saved

        def timed_load(emb):
            started = time.perf_counter()
            try:
                return load(emb)
            finally:
                self.load_s += time.perf_counter() - started

        def timed_encode(emb, texts):
            started = time.perf_counter()
            try:
                return encode(emb, texts)
            finally:
                self.encode_s += time.perf_counter() - started

        Embedder._load, Embedder.encode = timed_load, timed_encode
        return self

    def __exit__(self, *exc: object) -> None:
        Embedder._load, Embedder.encode = self.saved


class Delayed:
    """Wraps a model so each call takes ``delay`` seconds more (simulated provider latency)."""

    def __init__(self, inner, delay: float) -> None:
        self.inner, self.delay = inner, delay

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def stream(self, *args, **kwargs):
        await asyncio.sleep(self.delay)
        async for event in self.inner.stream(*args, **kwargs):
            yield event


def one_run(sessions: Path, latency: float) -> dict:
    real = factory._provider_model  # the raw provider, inside the accounting wrapper
    if latency:
        factory._provider_model = lambda *a, **kw: Delayed(real(*a, **kw), latency)
    try:
        settings = load_settings(
            env={}, dotenv=None, provider="replay", cassette=CASSETTE, sessions_dir=sessions
        )
        started = time.perf_counter()
        with Timed() as embedding, make_service(settings) as svc:
            sid = svc.create_session(IDEA, skip_intake=True)
            outcome = svc.run(sid, auto_approve=True)
        wall = time.perf_counter() - started
    finally:
        factory._provider_model = real
    events = [json.loads(x) for x in (sessions / sid / "events.jsonl").read_text().splitlines()]
    calls = [e["data"] for e in events if e["type"] == "model_call"]
    misses = sum("No recorded turn" in str(c.get("error") or "") for c in calls)
    model_s = sum(c["latency_ms"] for c in calls) / 1000
    return {
        "status": outcome.status,
        "wall_s": wall,
        "model_s": model_s,
        "calls": len(calls),
        "misses": misses,
        "overhead_s": wall - model_s,
        "embed_load_s": embedding.load_s,
        "embed_s": embedding.encode_s,  # includes the load (the first encode loads the model)
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain = [one_run(Path(tmp) / f"plain{i}", 0.0) for i in range(args.runs)]
        delayed = [one_run(Path(tmp) / "delayed", args.latency)]
    best = min(plain, key=lambda r: r["wall_s"])
    print(f"imports: {IMPORT_S:.2f} s (not counted)")
    print(
        f"plain replay run: best {best['wall_s']:.2f} s of {args.runs} "
        f"({best['calls']} model calls, {best['misses']} cassette misses, status "
        f"{best['status']}) — target < 5 s"
    )
    print(
        f"  of which embedding validators: {best['embed_s']:.2f} s in Embedder.encode "
        f"(model load {best['embed_load_s']:.2f} s of it); the rest (stages, checks, verifiers, "
        f"state and session files) {best['wall_s'] - best['embed_s']:.2f} s"
    )
    share = min(r["overhead_s"] / r["wall_s"] for r in delayed)
    slow = min(delayed, key=lambda r: r["overhead_s"])
    print(
        f"with {args.latency:.2f} s simulated latency per call: wall {slow['wall_s']:.2f} s, "
        f"model {slow['model_s']:.2f} s, overhead {slow['overhead_s']:.2f} s = "
        f"{share:.1%} of wall — target < 2 %"
    )
    return 0 if best["wall_s"] < 5 and share < 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
