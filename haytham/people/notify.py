"""Reviewers learn that a gate waits: when a session stops at a gate or its run fails, the
reviewers assigned to its founder (:mod:`haytham.people.access`) are told through the channels the
operator configured: e-mail (``HAYTHAM_NOTIFY_SMTP_URL``) and a generic JSON webhook
(``HAYTHAM_NOTIFY_WEBHOOK_URL``, Slack- and Teams-compatible: a ``text`` field).

Delivery happens in a background thread: a run never waits for it and never fails because of
it. A failed delivery is logged and retried (``ATTEMPTS`` tries, the waits doubling from the
retry delay); the last failure is logged as a warning and the notice is dropped.
"""

from __future__ import annotations

import json
import logging
import smtplib
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from haytham.safety.redact import redact

log = logging.getLogger(__name__)
ATTEMPTS = 4
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Notice:
    """What happened to which session, and who should hear of it (e-mail addresses)."""

    event: Literal["gate", "failed"]
    session_id: str
    text: str  # one sentence, no idea text (an idea is the founder's secret)
    gate: int | None = None
    owner: str | None = None
    recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class Notifier:
    """The configured channels; :meth:`send` returns at once."""

    smtp_url: str | None = None
    sender: str = "haytham@localhost"
    webhook_url: str | None = None
    delay: float = 1.0  # the first retry's wait (seconds); each next one doubles

    @classmethod
    def from_settings(cls, settings: Any) -> Notifier | None:
        """The notifier the settings configure, or ``None`` when no channel is set."""
        smtp = settings.secret("notify_smtp_url")
        if not smtp and not settings.notify_webhook_url:
            return None
        return cls(
            smtp_url=smtp,
            sender=settings.notify_from,
            webhook_url=settings.notify_webhook_url,
            delay=max(settings.retry_base_delay, 0.05),
        )

    def send(self, notice: Notice) -> threading.Thread:
        """Deliver ``notice`` on every channel in a daemon thread (returned, for tests)."""
        worker = threading.Thread(
            target=self._deliver, args=(notice,), name="haytham-notify", daemon=True
        )
        worker.start()
        return worker

    def _deliver(self, notice: Notice) -> None:
        if self.smtp_url and notice.recipients:
            self._retry("e-mail", notice, self._mail)
        if self.webhook_url:
            self._retry("webhook", notice, self._post)

    def _retry(self, channel: str, notice: Notice, how: Any) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                how(notice)
                return
            except Exception as exc:  # any failure: logged, retried, never raised into a run
                why = redact(f"{type(exc).__name__}: {exc}")
                if attempt == ATTEMPTS:
                    log.warning(
                        "could not deliver the %s notice about %s by %s after %d tries: %s",
                        notice.event,
                        notice.session_id,
                        channel,
                        attempt,
                        why,
                    )
                    return
                log.info(
                    "%s notice about %s: try %d failed (%s)",
                    channel,
                    notice.session_id,
                    attempt,
                    why,
                )
                time.sleep(self.delay * 2 ** (attempt - 1))

    def _mail(self, notice: Notice) -> None:
        url = urlsplit(self.smtp_url or "")
        kind = SMTP_SSL if url.scheme == "smtps" else smtplib.SMTP
        msg = EmailMessage()
        msg["From"] = self.sender
        msg["To"] = ", ".join(notice.recipients)
        msg["Subject"] = f"Haytham: {notice.text}"
        msg.set_content(notice.text + "\n")
        with kind(url.hostname or "localhost", url.port or 25, timeout=TIMEOUT_S) as smtp:
            if url.username:
                if url.scheme == "smtp":
                    smtp.starttls()
                smtp.login(unquote(url.username), unquote(url.password or ""))
            smtp.send_message(msg)

    def _post(self, notice: Notice) -> None:
        body = {
            "text": notice.text,
            "event": notice.event,
            "session_id": notice.session_id,
            "gate": notice.gate,
            "owner": notice.owner,
            "reviewers": list(notice.recipients),
        }
        request = urllib.request.Request(
            self.webhook_url or "",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310
            answer.read()


SMTP_SSL = smtplib.SMTP_SSL
