"""Every page in a real browser, on sessions whose every string field holds an image, a link
and HTML (issue 29): the browser makes no request to any host but the app's, and no link on
the page leads anywhere else.

Chromium records every request (``page.on("request")``) while each page of the app loads with
a poisoned session at Gate 1 and a poisoned finished one, every expander opened; the page's
anchors, images, frames and scripts are read from the DOM. Replay provider, localhost only.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_helpers import BROWSER, CASSETTE, IDEA, browser_page, served
from pipeline_helpers import replay_settings
from untrusted_helpers import EVIL, poison_session

from haytham.app import make_service

pytestmark = BROWSER
ROOT = Path(__file__).resolve().parent.parent
PAGES = ["", *sorted(p.stem for p in (ROOT / "frontend_streamlit" / "views").glob("[!_]*.py"))]
PAGES.remove("new_idea")  # the default page, at ""
ELSEWHERE = """() => {
  const out = [];
  for (const el of document.querySelectorAll('a[href], area[href]')) out.push(['link', el.href]);
  for (const el of document.querySelectorAll('img[src], iframe[src], script[src], source[src],'
      + ' video[src], audio[src], embed[src], object[data], link[href]'))
    out.push([el.tagName.toLowerCase(), el.src || el.href || el.data]);
  return out;
}"""


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("untrusted-browser")
    with make_service(replay_settings(root, cassette=CASSETTE)) as svc:
        gate = svc.create_session(IDEA, session_id="at-gate-1")
        svc.run(gate)
        done = svc.create_session(IDEA, session_id="finished")
        svc.run(done, auto_approve=True)
        for sid in (gate, done):
            poison_session(svc.store.open(sid))
    return root, [gate, done]


def _foreign(url: str, app: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return False
    return f"{parts.scheme}://{parts.netloc}" != app


def test_no_page_fetches_or_links_outside_the_app(poisoned) -> None:
    from playwright.sync_api import expect

    root, sids = poisoned
    with served(root) as server, browser_page(root) as page:
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        shown_payload = False
        bad: list[tuple[str, str, str]] = []
        for sid in sids:
            for name in PAGES:
                page.goto(f"{server}/{name}?session={sid}")
                expect(page.get_by_test_id("stMain")).to_be_visible()
                page.wait_for_load_state("networkidle")
                expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)  # rendered
                for summary in page.locator("[data-testid='stExpander'] summary").all():
                    summary.click()
                page.wait_for_load_state("networkidle")
                shown_payload |= EVIL in page.locator("body").inner_text()
                bad += [
                    (name, kind, url)
                    for kind, url in page.evaluate(ELSEWHERE)
                    if _foreign(url, server)
                ]
        outside = sorted({u for u in requests if _foreign(u, server)})
    assert requests, "no request was recorded"
    assert not outside, outside
    assert not bad, bad
    assert shown_payload, "the payload never reached a page"
