"""The local model's server process: llama.cpp's own HTTP server, embedded by ``xllamacpp``.

Run as ``python -m haytham.models.llama_child --model M --port P`` by
:class:`~haytham.models.llama_server.LocalServer`. It serves ``/health`` and
``/v1/chat/completions`` (with ``json_schema``) like a source-built ``llama-server``, from a
prebuilt wheel, so no compiler is needed. It stops on SIGTERM/SIGINT, and by itself within a
second of its parent process ending (``--parent-pid``), so a killed CLI or UI leaves no orphan.
While the model loads, SIGTERM and SIGINT end it at once (issue 28: Stop and Ctrl-C used to wait
for the load to finish).

(Not Linux's PR_SET_PDEATHSIG: that signal follows the *thread* that started the child, and the
server is started from whichever worker thread makes the first model call; when that thread
ended, the server was stopped after every call and restarted by the next one.)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence


def watch_parent(parent: int, stop: threading.Event, every: float = 1.0) -> None:
    """Set ``stop`` once the process that started us is gone (we are re-parented)."""
    while not stop.wait(every):
        if os.getppid() != parent:
            stop.set()


def serve(model: str, port: int, context_size: int, threads: int, parent: int | None) -> None:
    """Serve ``model`` on loopback ``port`` until stopped, or until the parent process ``parent``
    is gone."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = context_size
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    stop = threading.Event()
    # while the model loads, the main thread is inside llama.cpp, where a Python handler would
    # only run once loading ends (minutes on a busy machine): a stop ends the process at once
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    if parent is not None:
        threading.Thread(target=watch_parent, args=(parent, stop, 0.5), daemon=True).start()
    server = xllamacpp.Server(params)  # loads the model and starts listening
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"listening on {server.listening_address}", flush=True)
    stop.wait()
    os._exit(0)  # no teardown of llama.cpp's threads: the operating system frees it all


def main(argv: Sequence[str] | None = None) -> int:
    """Run the model server child process (``python -m haytham.models.llama_child``); the exit
    status."""
    parser = argparse.ArgumentParser(prog="python -m haytham.models.llama_child")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        serve(args.model, args.port, args.ctx, args.threads, args.parent_pid)
    except Exception as exc:  # the parent reads the log tail; one line says why
        print(f"error: the local model server stopped: {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
