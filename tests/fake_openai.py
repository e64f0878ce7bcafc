"""A fake OpenAI-compatible server on a free localhost port (no network): it rejects every
request with HTTP 401 and, like real providers do, echoes the key it was sent in its error, so
tests can see the key reach the provider and be redacted everywhere after."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FakeOpenAI:
    url: str
    authorizations: list[str] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list)  # the JSON requests


@contextlib.contextmanager
def fake_openai() -> Iterator[FakeOpenAI]:
    """A server answering ``POST …/chat/completions`` with a 401 that quotes the key."""
    seen: list[str] = []
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 — the http.server API
            length = int(self.headers.get("Content-Length") or 0)
            bodies.append(json.loads(self.rfile.read(length) or b"{}"))
            auth = self.headers.get("Authorization", "")
            seen.append(auth)
            key = auth.removeprefix("Bearer ")
            body = json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key}.",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                }
            ).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeOpenAI(f"http://127.0.0.1:{server.server_address[1]}/v1", seen, bodies)
    finally:
        server.shutdown()
        server.server_close()
