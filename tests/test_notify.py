"""Reviewers hear that a gate waits or a run failed: a real SMTP server on loopback (aiosmtpd)
and a local webhook receiver; failed deliveries are retried and never block the run."""

from __future__ import annotations

import json
import socket
import threading
import time
from email import message_from_bytes
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pipeline_helpers import POWER8_IDEA, cassette_with, replay_settings

from haytham.app import make_service
from haytham.errors import HaythamError
from haytham.people.access import person

aiosmtpd = pytest.importorskip("aiosmtpd.controller")

POLICY = """
founders = ["ada@example.org"]
[cohorts.spring]
founders = ["ada@example.org"]
reviewers = ["rita@example.org", "ray@example.org"]
"""


class Inbox:
    """aiosmtpd's handler: keeps every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Any]] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 - aiosmtpd's name
        self.messages.append(
            (list(envelope.rcpt_tos), message_from_bytes(envelope.content, policy=default))
        )
        return "250 OK"


class Receiver(BaseHTTPRequestHandler):
    """A webhook that fails its first ``fail`` requests with 500, then accepts."""

    bodies: list[dict[str, Any]]
    fail: list[int]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.fail[0] > 0:
            self.fail[0] -= 1
            self.send_response(500)
        else:
            self.bodies.append(body)
            self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def channels():
    inbox = Inbox()
    with socket.socket() as probe:  # a free port (aiosmtpd's controller needs it named)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    smtp = aiosmtpd.Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    bodies: list[dict[str, Any]] = []
    handler = type("H", (Receiver,), {"bodies": bodies, "fail": [1]})
    web = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    yield inbox, bodies, f"smtp://127.0.0.1:{port}", f"http://127.0.0.1:{web.server_port}/hook"
    web.shutdown()
    smtp.stop()


def _wait(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not delivered in time"
        time.sleep(0.05)


def _service(tmp_path, smtp: str, hook: str, **kw: Any):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "access.toml").write_text(POLICY)
    settings = replay_settings(
        tmp_path,
        env={"HAYTHAM_NOTIFY_SMTP_URL": smtp, "HAYTHAM_NOTIFY_WEBHOOK_URL": hook},
        access_file=tmp_path / "access.toml",
        **kw,
    )
    return make_service(settings).acting_as(person("ada@example.org"))


def test_the_assigned_reviewers_hear_that_gate_1_waits(tmp_path, channels) -> None:
    inbox, bodies, smtp, hook = channels
    svc = _service(tmp_path, smtp, hook)
    sid = svc.create_session(POWER8_IDEA)
    assert svc.run(sid).gate == 1
    _wait(lambda: inbox.messages and bodies)
    rcpts, mail = inbox.messages[0]
    assert sorted(rcpts) == ["ray@example.org", "rita@example.org"]
    assert (
        " ".join(mail["Subject"].split())
        == f"Haytham: Session {sid} waits at Gate 1 · WHY for a decision."
    )
    assert "McTaggart" not in mail.get_content()  # the idea stays the founder's
    # the webhook failed once (500) and the retry delivered it
    assert bodies == [
        {
            "text": f"Session {sid} waits at Gate 1 · WHY for a decision.",
            "event": "gate",
            "session_id": sid,
            "gate": 1,
            "owner": "ada@example.org",
            "reviewers": ["ray@example.org", "rita@example.org"],
        }
    ]


def test_a_failed_run_is_told_and_dead_channels_never_block_it(tmp_path, channels, caplog) -> None:
    inbox, bodies, smtp, hook = channels
    cassette = cassette_with(tmp_path, drop_agents={"risk-assessment"})
    svc = _service(tmp_path, smtp, hook, cassette=cassette)
    sid = svc.create_session(POWER8_IDEA)
    with pytest.raises(HaythamError):
        svc.run(sid)
    _wait(lambda: bodies)
    assert bodies[0]["event"] == "failed" and bodies[0]["text"].startswith(
        f"The run of session {sid} failed"
    )
    _wait(lambda: inbox.messages)

    # nothing listens on these ports: the run reaches its gate all the same, the failures
    # are logged and retried
    dead = _service(tmp_path / "dead", "smtp://127.0.0.1:9", "http://127.0.0.1:9/hook")
    other = dead.create_session(POWER8_IDEA)
    started = time.monotonic()
    with caplog.at_level("INFO", logger="haytham.people.notify"):
        assert dead.run(other).gate == 1
        assert time.monotonic() - started < 30
        _wait(lambda: "after 4 tries" in caplog.text)
    assert "try 1 failed" in caplog.text
