"""What every page needs: settings, the cached service and worker, the selected session, errors.

The service and its worker are cached per settings with ``st.cache_resource`` (one per server
process, shared by all tabs). The selected session lives in the URL (``?session=<id>``) and in
``st.session_state`` — both per browser tab — never in a module global, so tabs don't mix.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st

from haytham.config import Settings, load_settings
from haytham.errors import HaythamError
from haytham.service import Haytham
from haytham.worker import RunWorker, describe_error

SESSION_PARAM = "session"
SESSION_KEY = "selected_session"
PAGES = {
    "new": "views/new_idea.py",
    "run": "views/run.py",
    "verdict": "views/verdict.py",
    "stories": "views/stories.py",
    "fidelity": "views/fidelity.py",
    "sessions": "views/sessions.py",
    **{f"gate_{n}": f"views/gate_{n}.py" for n in range(1, 5)},
}
T = TypeVar("T")


@dataclass(frozen=True)
class Backend:
    """The per-process service and its background-run worker."""

    service: Haytham
    worker: RunWorker


@st.cache_resource(show_spinner=False)
def _backend(settings_json: str) -> Backend:
    from haytham.app import make_service  # what is installed: validators, verifiers

    service = make_service(Settings.model_validate_json(settings_json))
    return Backend(service, RunWorker(service))


def settings() -> Settings:
    """Settings from the environment and ``.env`` (``HAYTHAM_PROVIDER`` …), read each run."""
    return load_settings()


def backend() -> Backend:
    """The cached service and worker for the current settings; stops the page on bad settings."""
    try:
        current = settings()
    except HaythamError as exc:
        st.error(f"Haytham is not configured correctly: {md(exc)}")
        st.stop()
    return _backend(current.model_dump_json())


# -- the selected session (per tab) ------------------------------------------------------------
def selected_session() -> str | None:
    """The tab's session: the URL's ``?session=`` wins, else the tab's session state."""
    from_url = st.query_params.get(SESSION_PARAM)
    sid = from_url or st.session_state.get(SESSION_KEY)
    if sid:
        st.session_state[SESSION_KEY] = sid
        if from_url != sid:
            st.query_params[SESSION_PARAM] = sid
    return sid or None


def select_session(session_id: str | None) -> None:
    if session_id:
        st.session_state[SESSION_KEY] = session_id
        st.query_params[SESSION_PARAM] = session_id
    else:
        st.session_state.pop(SESSION_KEY, None)
        st.query_params.pop(SESSION_PARAM, None)


def go(page: str, session_id: str | None = None) -> None:
    """Switch to one of :data:`PAGES`, keeping the session in the URL."""
    sid = session_id or st.session_state.get(SESSION_KEY)
    st.switch_page(PAGES[page], query_params={SESSION_PARAM: sid} if sid else None)


def link(page: str, label: str, icon: str | None = None) -> None:
    sid = st.session_state.get(SESSION_KEY)
    st.page_link(
        PAGES[page], label=label, icon=icon, query_params={SESSION_PARAM: sid} if sid else None
    )


def require_session(b: Backend) -> str:
    """The selected session, or a pointer to where to pick one (and stop)."""
    sid = selected_session()
    if not sid:
        st.info("No session selected. Start one from a new idea, or open one from Sessions.")
        link("new", "New idea", ":material/lightbulb:")
        link("sessions", "Sessions", ":material/folder_open:")
        st.stop()
    try:
        b.service.store.open(sid)
    except HaythamError as exc:
        select_session(None)
        # the id came from the URL: shown as text, and never the server's folder
        st.error(md(no_paths(str(exc))))
        link("sessions", "Pick another session", ":material/folder_open:")
        st.stop()
    return sid


# -- errors ------------------------------------------------------------------------------------
def show_error(exc: BaseException) -> None:
    """One clear sentence for the user; never a traceback."""
    message, _ = describe_error(exc)
    st.error(md(no_paths(message)), icon=":material/error:")


@contextmanager
def failures() -> Iterator[None]:
    """Show any exception raised inside as a clear message (the page carries on)."""
    try:
        yield
    except Exception as exc:  # the user sees one sentence; details go to the server log
        if not isinstance(exc, HaythamError):
            logging.getLogger("haytham.ui").exception("page failed")
        show_error(exc)


def attempt(fn: Callable[[], T]) -> T | None:
    """``fn()``, or ``None`` after showing its error as a message."""
    try:
        return fn()
    except Exception as exc:
        show_error(exc)
        return None


def flash(message: str) -> None:
    """A message shown once on the next run (survives ``st.rerun`` and page switches)."""
    st.session_state["flash"] = message


def show_flash() -> None:
    message = st.session_state.pop("flash", None)
    if message:
        st.success(message, icon=":material/check_circle:")


# -- text from users and models ----------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^])")


_ABSOLUTE_PATH = re.compile(r"(?<![\w:/])/(?:[^\s/'\"`:]{1,255}/){1,64}([^\s/'\"`:,;]{0,255})")


def no_paths(message: str) -> str:
    """``message`` with server paths cut to their last part (``/srv/x/sessions/abc`` → ``…/abc``)."""
    return _ABSOLUTE_PATH.sub(lambda m: f"…/{m.group(1)}", message)


def md(text: Any) -> str:
    """``text`` escaped for ``st.markdown``: shown literally (HTML and markdown as text)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", "  \n")


# Model Markdown keeps its formatting but loads nothing and hides no destination: an image
# becomes its alt text, a link shows its address as text, a reference definition is shown as
# text. The patterns are bounded, so they stay linear on long text.
_MD_IMAGE = re.compile(r"!\[([^\]\n]{0,500})\](?:\(([^)\n]{0,2000})\)|\[[^\]\n]{0,200}\])")
_MD_LINK = re.compile(r"\[([^\]\n]{0,500})\]\(([^)\n]{0,2000})\)")
_MD_AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.\-]{1,20}:[^>\s]{0,2000})>")
_MD_DEFINITION = re.compile(r"^( {0,3})\[([^\]\n]{1,200})\]:(.*)$", re.MULTILINE)


def safe_markdown(text: Any) -> str:
    """Markdown from a model for ``st.markdown``: tables, emphasis and lists render; images
    never load (their alt text is shown) and links show where they go (as plain text)."""
    out = _MD_IMAGE.sub(lambda m: f"[image: {md(m.group(1))}]", str(text))
    out = _MD_LINK.sub(lambda m: f"{md(m.group(1))} ({md(m.group(2))})", out)
    out = _MD_AUTOLINK.sub(lambda m: md(m.group(1)), out)
    return _MD_DEFINITION.sub(lambda m: m.group(1) + md(f"[{m.group(2)}]:{m.group(3)}"), out)


def label(text: Any) -> str:
    """Model text for a widget label: one line, shown literally."""
    return md(" ".join(str(text).split()))
