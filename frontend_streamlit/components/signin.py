"""Who is using this browser session: Streamlit's own OpenID Connect sign-in in team mode.

- **One machine** (no ``HAYTHAM_DATABASE_URL``): no sign-in; the local user owns everything.
- **Team mode with an identity provider** (an ``[auth]`` section in ``.streamlit/secrets.toml``,
  see docs/deploy.md): the page asks to sign in (``st.login``) and the person is ``st.user``'s
  e-mail, name and groups claim (the access file's ``groups_claim``).
- **Team mode on a network the operator declared trusted** (``HAYTHAM_TRUSTED_NETWORK=on``):
  no sign-in; each browser session still records a name (the proxy's ``X-Forwarded-User`` or
  ``Remote-User`` header, else one typed in the sidebar, else a guest name of its own).
- **Team mode with neither**: the app refuses to work, in one sentence.

The service checks every call (:mod:`haytham.people.access`); pages only reflect what it allows.
"""

from __future__ import annotations

import secrets

import streamlit as st

from haytham.config import Settings
from haytham.people.access import Actor, local_actor, person

NAME_KEY = "trusted_user_name"  # this browser session's name on a trusted network
GUEST_KEY = "trusted_guest_name"
NAME_HEADERS = ("X-Forwarded-User", "Remote-User", "X-Forwarded-Email")


def identity_configured() -> bool:
    """Whether ``.streamlit/secrets.toml`` (or ``secrets.files``) has an ``[auth]`` section."""
    try:
        from streamlit.auth_util import get_secrets_auth_section

        return bool(get_secrets_auth_section())
    except Exception:  # an unreadable secrets file: no identity configuration
        return False


def current_actor(settings: Settings, groups_claim: str = "groups") -> Actor:
    """Who this browser session acts as; shows the sign-in page (and stops) when nobody is."""
    if not settings.secret("database_url"):
        return local_actor()
    if identity_configured():
        return _signed_in(groups_claim)
    if settings.trusted_network:
        return _trusted()
    st.error(
        "Team mode needs sign-in: configure an identity provider in .streamlit/secrets.toml "
        "([auth], see docs/deploy.md), or set HAYTHAM_TRUSTED_NETWORK=on if every person "
        "who can reach this app may use it.",
        icon=":material/lock:",
    )
    st.stop()
    raise AssertionError  # st.stop() does not return


def _signed_in(groups_claim: str) -> Actor:
    user = st.user
    if not user.get("is_logged_in"):
        st.title("Haytham")
        st.write("Sign in to see your sessions and the ones assigned to you.")
        st.button("Sign in", type="primary", on_click=st.login, key="sign_in")
        st.stop()
    email = str(user.get("email") or user.get("preferred_username") or user.get("sub") or "")
    return person(email, str(user.get("name") or email), user.get(groups_claim) or ())


def _header_name() -> str | None:
    headers = st.context.headers
    return next((headers.get(h) for h in NAME_HEADERS if headers.get(h)), None)


def _trusted() -> Actor:
    given = _header_name()
    if given:
        return person(given)
    guest = st.session_state.setdefault(GUEST_KEY, f"guest-{secrets.token_hex(2)}")
    typed = str(st.session_state.get(NAME_KEY) or "")
    return person(" ".join(typed.split()) or guest)


def show_identity(settings: Settings, actor: Actor) -> None:
    """The sidebar's line on who is signed in (and Sign out), or, on a trusted network, the
    name this browser session records; drawn once per page run, before the page."""
    if not settings.secret("database_url"):
        return
    with st.sidebar:
        if identity_configured():
            st.caption(f"Signed in as {actor.label}")
            st.button("Sign out", on_click=st.logout, key="sign_out")
        elif _header_name() is None:
            st.text_input(
                "Your name",
                key=NAME_KEY,
                placeholder=actor.name,
                help="Recorded with every decision you make (this network needs no sign-in).",
            )
