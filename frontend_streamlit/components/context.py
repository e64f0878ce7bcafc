"""What every page needs: settings, the cached service and worker, the selected session, errors.

The service and its worker are cached per settings with ``st.cache_resource`` (one per server
process, shared by all tabs). The selected session lives in the URL (``?session=<id>``) and in
``st.session_state`` — both per browser tab — never in a module global, so tabs don't mix.

A provider chosen on the Model provider page (``views/providers.py``) is a :class:`Settings`
held in this browser session's ``st.session_state`` (its key a ``SecretStr``, in memory only):
the sessions this browser session starts afterwards run on it (:func:`new_session_backend`,
:func:`started`), every other session on the settings it was started with.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import streamlit as st

from frontend_streamlit.components.safe_text import md, no_paths
from frontend_streamlit.components.signin import current_actor, show_identity
from haytham.config import Settings, load_settings
from haytham.errors import HaythamError, SessionNotFound
from haytham.runs.service import Haytham
from haytham.runs.worker import RunWorker, describe_error

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

if TYPE_CHECKING:
    from haytham.app import PostValidation


@dataclass(frozen=True)
class Backend:
    """The per-process service and its background-run worker."""

    service: Haytham
    worker: RunWorker


CHOSEN_KEY = "provider_choice"  # the Settings chosen on the Model provider page (this session)
STARTED_KEY = "provider_started"  # session id -> the Settings it was started with (this session)
_PEPPER = secrets.token_bytes(32)  # per process: a cache key's digest names no key outside it


@st.cache_resource(show_spinner=False)
def _validation(key: str) -> PostValidation:
    """One post-validation (and its embedding model) per validator settings, shared by every
    service of this process."""
    from haytham.app import PostValidation
    from haytham.config import ValidatorSettings

    return PostValidation(ValidatorSettings.model_validate_json(key))


@st.cache_resource(show_spinner=False)
def _backend(key: str, _settings: Settings | None = None) -> Backend:
    """Cached per ``key``: the settings' JSON (which holds no credentials), plus a keyed digest
    of the credentials when there are any. ``_settings`` (not hashed) is the object itself,
    credentials included; without it the JSON is the settings."""
    from haytham.app import make_runs, make_service  # what is installed: validators, verifiers

    given = _settings if _settings is not None else Settings.model_validate_json(key)
    validation = _validation(given.validators.model_dump_json())
    service = make_service(given, validation=validation)
    return Backend(service, make_runs(service))


def _cache_key(current: Settings) -> str:
    """The settings' JSON, and a digest of the credentials if any (a changed key rebuilds; two
    keys never share a service). The digest is an HMAC under a random per-process secret, so
    the cache key names no key in clear and cannot confirm a guessed one."""
    held = sorted(current.credentials().items())
    digest = (
        hmac.new(_PEPPER, json.dumps(held).encode(), hashlib.sha256).hexdigest() if held else ""
    )
    return current.model_dump_json() + (f"\n{digest}" if digest else "")


def settings() -> Settings:
    """Settings from the environment and ``.env`` (``HAYTHAM_PROVIDER`` …), read each run."""
    return load_settings()


def backend() -> Backend:
    """The cached service and worker for the selected session: the settings this browser
    session started it with (a provider chosen on the Model provider page), else the server's
    settings. Stops the page on bad settings."""
    sid = st.query_params.get(SESSION_PARAM) or st.session_state.get(SESSION_KEY)
    chosen = st.session_state.get(STARTED_KEY, {}).get(sid) if sid else None
    return _backend_for(chosen)


def require_identity() -> None:
    """In team mode, sign this browser session in (or refuse, in one sentence) before any page
    draws; on one machine nothing happens (bad settings are left for the page to show)."""
    try:
        current = settings()
    except HaythamError:
        return
    if current.secret("database_url"):
        show_identity(current, backend().service.actor)


def new_session_backend() -> Backend:
    """The service new sessions from this browser session start on: the provider chosen on the
    Model provider page, else the server's settings."""
    return _backend_for(st.session_state.get(CHOSEN_KEY))


def started(session_id: str) -> None:
    """Note that this browser session started ``session_id`` on :func:`new_session_backend`:
    its pages then use that provider for it, whatever is chosen later."""
    chosen = st.session_state.get(CHOSEN_KEY)
    if chosen is not None:
        st.session_state.setdefault(STARTED_KEY, {})[session_id] = chosen


def _backend_for(chosen: Settings | None) -> Backend:
    try:
        current = chosen if isinstance(chosen, Settings) else settings()
    except HaythamError as exc:
        st.error(f"Haytham is not configured correctly: {md(no_paths(str(exc)))}")
        st.stop()
    cached = _backend(_cache_key(current), current)
    try:  # every call of this browser session is checked for who signed in (haytham/people/access.py)
        actor = current_actor(current, cached.service.policy.current().groups_claim)
    except HaythamError as exc:
        st.error(f"Haytham is not configured correctly: {md(no_paths(str(exc)))}")
        st.stop()
    view = cached.service.acting_as(actor)
    return Backend(view, cached.worker.for_service(view))


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
    """Make ``session_id`` this tab's session, in its state and its URL (``None``: forget it)."""
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
    """A link to one of :data:`PAGES` that keeps this tab's session in the URL."""
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
        b.service.check_session(sid)
    except HaythamError as exc:
        select_session(None)
        # the id came from the URL: shown as text, and never the server's sessions folder
        if isinstance(exc, SessionNotFound):
            st.error(f"No session {md(sid)}: it may have been deleted.", icon=":material/error:")
        else:
            st.error(md(no_paths(str(exc))), icon=":material/error:")
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
    """A message shown once on the next run (survives ``st.rerun`` and page switches). It is
    Markdown: model text in it goes through ``md``."""
    st.session_state["flash"] = message


def show_flash() -> None:
    """Show the message :func:`flash` left for this run, once."""
    message = st.session_state.pop("flash", None)
    if message:
        st.success(message, icon=":material/check_circle:")
