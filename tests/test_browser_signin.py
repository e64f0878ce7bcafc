"""Sign-in in a real browser through a real OpenID Connect provider on loopback (panva's
oidc-provider under Node, tests/oidc/), team mode on PostgreSQL: two founders and a reviewer.
Each founder sees only their sessions and is refused the other's by URL; the founder's own
approval is refused under four eyes; the reviewer approves; the gate history and the PDF name
the reviewer. Skipped, with the reason, without Chromium, Node's provider or PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import ARGS, CHROMIUM, IDEA, WAIT_MS, _free_port, served
from team_helpers import Workers, database, team_env

pytestmark = [pytest.mark.team, pytest.mark.browser]
OIDC = Path(__file__).parent / "oidc"
USERS = {
    "ada": {"email": "ada@example.org", "name": "Ada Founder", "groups": ["founders"]},
    "bob": {"email": "bob@example.org", "name": "Bob Founder", "groups": ["founders"]},
    "rita": {"email": "rita@example.org", "name": "Rita Reviewer", "groups": ["spring-reviewers"]},
}
POLICY = """
founders = ["group:founders"]
four_eyes = true
[cohorts.spring]
founders = ["ada@example.org"]
reviewers = ["group:spring-reviewers"]
"""


def _needs() -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (make browser)")
    if shutil.which("node") is None or not (OIDC / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("the loopback identity provider is not installed (make browser: npm ci)")


@contextmanager
def provider(tmp_path: Path, app_port: int) -> Iterator[str]:
    """oidc-provider on a free loopback port; its issuer URL."""
    port = _free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "OIDC_USERS": json.dumps(USERS),
        "OIDC_REDIRECT_URIS": f"http://127.0.0.1:{app_port}/oauth2callback",
    }
    log = (tmp_path / "oidc.log").open("w")
    proc = subprocess.Popen(
        ["node", str(OIDC / "provider.mjs")], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration") as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the provider did not start: {(tmp_path / 'oidc.log').read_text()}")
            time.sleep(0.2)
        yield issuer
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def _secrets(folder: Path, app_port: int, issuer: str) -> None:
    (folder / ".streamlit").mkdir(parents=True)
    (folder / ".streamlit" / "secrets.toml").write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{app_port}/oauth2callback"\n'
        'cookie_secret = "a-long-random-cookie-secret-for-the-test-only-0123456789"\n'
        'client_id = "haytham"\n'
        'client_secret = "haytham-local-secret"\n'
        f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n'
        'client_kwargs = { scope = "openid email profile groups", prompt = "login" }\n'
    )


def _sign_in(browser: Any, app: str, login: str) -> Any:
    """A browser context of its own, signed in as ``login`` through the provider's form."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(app)
    page.get_by_role("button", name="Sign in").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text(f"Signed in as {USERS[login]['name']}")).to_be_visible()
    return page


def _start(page: Any, app: str) -> str:
    from playwright.sync_api import expect

    page.goto(app)
    box = page.get_by_label("Your idea")
    box.fill(IDEA)
    box.press("Control+Enter")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_role("heading", name="Run")).to_be_visible()
    deadline = time.monotonic() + 30
    while "session=" not in page.url:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return page.url.split("session=", 1)[1].split("&", 1)[0]


def test_founders_see_their_own_a_reviewer_decides_and_is_named(tmp_path) -> None:
    _needs()
    from playwright.sync_api import expect, sync_playwright

    from haytham.app import make_service
    from haytham.config import load_settings
    from haytham.people.access import person

    with database() as db:
        (tmp_path / "access.toml").write_text(POLICY)
        env = team_env(
            db,
            tmp_path,
            HAYTHAM_ACCESS_FILE=str(tmp_path / "access.toml"),
            HAYTHAM_TRUSTED_NETWORK="off",
        )
        extra = {k: v for k, v in env.items() if k.startswith("HAYTHAM_")}
        extra.pop("HAYTHAM_SESSIONS_DIR")
        app_port = _free_port()
        site = tmp_path / "site"
        with provider(tmp_path, app_port) as issuer:
            _secrets(site, app_port, issuer)
            with (
                Workers(db, tmp_path, HAYTHAM_ACCESS_FILE=str(tmp_path / "access.toml")) as w,
                served(site, port=app_port, **extra) as app,
                sync_playwright() as pw,
            ):
                w.start(1)
                browser = pw.chromium.launch(
                    executable_path=str(CHROMIUM), headless=True, args=ARGS
                )
                expect.set_options(timeout=WAIT_MS)
                ada, bob = _sign_in(browser, app, "ada"), _sign_in(browser, app, "bob")
                mine, theirs = _start(ada, app), _start(bob, app)
                expect(ada.get_by_text("Waiting at Gate 1: review")).to_be_visible(timeout=120_000)
                expect(bob.get_by_text("Waiting at Gate 1: review")).to_be_visible(timeout=120_000)

                # each founder lists only their own session, and the other's URL is refused
                for page, own, other in ((ada, mine, theirs), (bob, theirs, mine)):
                    page.goto(f"{app}/sessions")
                    expect(page.locator(f'a[href*="session={own}"]')).to_have_count(1)
                    cells = page.locator("[role=gridcell]")  # the table's (hidden) a11y cells
                    expect(cells.first).to_be_attached()
                    listed = cells.all_text_contents()
                    assert own in listed and other not in listed, listed
                    page.goto(f"{app}/gate_1?session={other}")
                    expect(page.get_by_text("may not open this session")).to_be_visible()

                # Ada clarifies her anchor, but may not approve her own gate (four eyes)
                ada.goto(f"{app}/gate_1?session={mine}")
                ada.get_by_text("Synchronous live sessions - all eight present at once").click()
                ada.get_by_text("Video/audio call (like Zoom)").click()
                ada.get_by_role("button", name="Confirm clarifications").click()
                expect(ada.get_by_text("Clarified 2 invariant(s)").first).to_be_visible()
                ada.get_by_role("button", name="Approve Gate 1").click()
                expect(ada.get_by_text("four-eyes rule")).to_be_visible()

                # the assigned reviewer approves; the history names her
                rita = _sign_in(browser, app, "rita")
                rita.goto(f"{app}/gate_1?session={mine}")
                rita.get_by_role("button", name="Approve Gate 1").click()
                expect(rita.get_by_role("heading", name="Run")).to_be_visible()
                ada.goto(f"{app}/gate_1?session={mine}")
                expect(ada.get_by_text("approved by Rita Reviewer")).to_be_visible()
                # the founder's validation report (the Verdict page's download) names her too
                ada.goto(f"{app}/verdict?session={mine}")
                with ada.expect_download() as got:
                    ada.get_by_role("button", name="Validation report (PDF)").click()
                got.value.save_as(tmp_path / "downloaded.pdf")
                browser.close()
        shown = subprocess.run(
            ["pdftotext", str(tmp_path / "downloaded.pdf"), "-"], capture_output=True, text=True
        )
        assert "approved by Rita Reviewer" in " ".join(shown.stdout.split())

        settings = load_settings(
            env={k: v for k, v in env.items() if k.startswith("HAYTHAM_")}, dotenv=None
        )
        with make_service(settings, tracking=False) as base:
            svc = base.acting_as(person("rita@example.org", "Rita", ["spring-reviewers"]))
            approvals = [d for d in svc.decisions(mine) if d.action == "approve"]
            assert [(d.actor, d.gate, d.round) for d in approvals] == [("rita@example.org", 1, 1)]
            pdf = tmp_path / "validation.pdf"
            pdf.write_bytes(bytes(svc.export(mine, "validation-pdf")))  # type: ignore[arg-type]
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True)
        assert "approved by Rita Reviewer <rita@example.org>" in " ".join(text.stdout.split())
