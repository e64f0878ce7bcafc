"""Model provider: choose the provider and a model per tier, test the connection, and use the
choice for the sessions this browser session starts (issue 17).

A key typed here lives only in this server process's memory for this browser session: in
``st.session_state`` and, once applied, in the :class:`Settings` the new sessions' service is
built with (a ``SecretStr``). It is never written to disk, session files, events or logs, and
the cache of services keys it by a keyed digest (``components/context.py``). Keys from the
server's environment or ``.env`` show as "set", never their value.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import streamlit as st
from pydantic import SecretStr

from frontend_streamlit.components.context import (
    CHOSEN_KEY,
    flash,
    settings,
    show_error,
    show_flash,
)
from frontend_streamlit.components.safe_text import code, md, no_paths
from haytham.config import TIERS, Settings
from haytham.errors import HaythamError, InputError
from haytham.models.connection import check_connection
from haytham.models.providers import check_provider, provider_report
from haytham.safety.redact import redact, remember_settings

PROVIDER_KEY = "provider_name"
MAX_MODEL_ID = 200
MAX_URL = 500
MIN_KEY = 8  # shorter values would not be known to redact(); no real key is that short

PRIVACY = (
    "A key typed here stays in this server's memory for this browser session only: it is never "
    "written to disk, to session files, events or logs, and reloading the page forgets it. "
    "Keys set on the server (environment or `.env`) show as *set*, never their value."
)


def _model_key(name: str, tier: str) -> str:
    return f"provider_model_{name}_{tier}"


def _url_key(name: str) -> str:
    return f"provider_url_{name}"


def _secret_key(name: str) -> str:
    return f"provider_key_{name}"


def _typed(state_key: str) -> str:
    value = st.session_state.get(state_key)
    return value.strip() if isinstance(value, str) else ""


def _from(name: str, base: Settings, chosen: Settings | None) -> Settings | None:
    """The settings this page starts from for ``name``: the choice made here, else the
    server's, when either is on ``name``."""
    return next((c for c in (chosen, base) if c is not None and c.provider == name), None)


def _held_key(name: str, base: Settings, chosen: Settings | None) -> Any:
    """The key typed earlier in this browser session for ``name`` (a ``SecretStr``), if any."""
    key = base.providers[name].key
    if key is None or chosen is None or chosen.provider != name:
        return None
    field = key.field
    mine = chosen.secret(field)
    return getattr(chosen, field) if mine and mine != base.secret(field) else None


def _model_id(name: str, tier: str, base: Settings) -> str:
    default = base.providers[name].default_models[tier]
    raw = _typed(_model_key(name, tier))
    if not raw:
        return default
    if len(raw) > MAX_MODEL_ID or any(c.isspace() or not c.isprintable() for c in raw):
        raise InputError(
            f"The {tier} model id has spaces or is over {MAX_MODEL_ID} characters: use the id "
            f"the provider lists, e.g. {default}."
        )
    return raw


def _url(name: str, base: Settings) -> str:
    url = base.providers[name].url
    if url is None:
        return ""
    field, label = url.field, url.label
    raw = _typed(_url_key(name))
    server = getattr(base, field) or ""
    if raw and raw == redact(server):
        return server  # the server's own URL, shown with its credentials hidden
    if not raw:
        if url.required:
            raise InputError(url.required)
        return ""
    what = label.split(" (")[0]
    if len(raw) > MAX_URL:
        raise InputError(f"The {what} is over {MAX_URL} characters: give the server's address.")
    try:
        parts = urlsplit(raw)
        userinfo = parts.username is not None or "@" in parts.netloc
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok, userinfo = False, False
    if userinfo:
        raise InputError(
            f"The {what} must not hold a user or password: put the key in its own field."
        )
    if not ok:
        raise InputError(
            f"The {what} must start with http:// or https:// and name a host, "
            "e.g. http://localhost:8000/v1."
        )
    return raw


def _key(name: str, base: Settings, chosen: Settings | None) -> Any:
    """The key for ``name``: typed now, typed earlier in this browser session, or ``None``
    (the server's, if it has one)."""
    raw = _typed(_secret_key(name))
    if raw:
        if any(c.isspace() or not c.isprintable() for c in raw):
            raise InputError("The key has spaces or line breaks in it: paste the key alone.")
        if len(raw) < MIN_KEY:
            raise InputError(
                f"The key is under {MIN_KEY} characters: paste the whole key"
                + (
                    " (a compatible server that needs none takes an empty field)."
                    if base.providers[name].url is not None
                    else "."
                )
            )
        return SecretStr(raw)
    return _held_key(name, base, chosen)


def candidate(name: str, base: Settings, chosen: Settings | None) -> Settings:
    """The settings the form describes, validated; raises :class:`InputError` (one sentence)."""
    spec = base.providers[name]
    changes: dict[str, Any] = {"provider": name}
    for tier in TIERS:
        changes[f"model_{tier}"] = _model_id(name, tier, base)
    if spec.url is not None:
        changes[spec.url.field] = _url(name, base)
    if name == "bedrock":
        region = _typed("provider_region_bedrock")
        if region and not all(c.isalnum() or c == "-" for c in region):
            raise InputError("The AWS region is a name like us-west-2 (letters, digits, dashes).")
        changes["aws_region"] = region or None
    if spec.key is not None:
        changes[spec.key.field] = _key(name, base, chosen)
    conf = base.updated(**changes)
    # a provider with an endpoint (a compatible server) may need no key
    keyless = spec.url is not None and getattr(conf, spec.url.field)
    if spec.needs_key and spec.key and not conf.secret(spec.key.field) and not keyless:
        raise InputError(
            f"Paste an API key for {name}: the server has no {spec.key.variable} either."
        )
    remember_settings(conf)  # from here on, redact() knows a key typed here
    return conf


def _summary(conf: Settings) -> str:
    models = ", ".join(f"{tier} {code(conf.model_id(tier))}" for tier in TIERS)
    return f"{code(conf.provider)} · {models}"


# -- the page ----------------------------------------------------------------------------------
try:
    base = settings()
except HaythamError as exc:
    st.error(f"Haytham is not configured correctly: {md(no_paths(str(exc)))}")
    st.stop()
chosen: Settings | None = st.session_state.get(CHOSEN_KEY)

st.title("Model provider")
st.caption(
    "Choose the model provider and a model per tier for the sessions you start from this "
    "browser session. Sessions already started, running or not, keep the provider they "
    "started with."
)
show_flash()
with st.container(border=True):
    if chosen is not None:
        st.markdown(f"**New sessions from here run on:** {_summary(chosen)} (chosen on this page)")
        if st.button("Use the server's settings again", key="provider_reset"):
            st.session_state.pop(CHOSEN_KEY, None)
            flash(f"New sessions from here run on the server's settings again: {_summary(base)}.")
            st.rerun()
    else:
        st.markdown(f"**New sessions from here run on:** {_summary(base)} (the server's settings)")
st.info(PRIVACY, icon=":material/lock:")

start_from = (chosen or base).provider
names = list(base.providers)
name: str = st.selectbox(
    "Provider",
    names,
    index=names.index(start_from),
    format_func=lambda p: base.providers[p].label,
    key=PROVIDER_KEY,
)
spec = base.providers[name]
server_status = next(s for s in provider_report(base) if s.name == name)
st.caption(f"On the server's settings: {md(no_paths(server_status.reason))}")
if spec.caveat:
    st.warning(spec.caveat, icon=":material/warning:")

known = _from(name, base, chosen)
if spec.url is not None:
    field = spec.url.field
    shown = getattr(known, field, None) or getattr(base, field) or spec.url.default
    st.text_input(spec.url.label, value=redact(shown or ""), key=_url_key(name))
if name == "bedrock":
    st.text_input(
        "AWS region (leave empty for the server's or us-west-2)",
        value=(known.aws_region if known else None) or base.aws_region or "",
        key="provider_region_bedrock",
    )
if spec.key is not None:
    field, variable, label = spec.key.field, spec.key.variable, spec.key.label
    on_server = "set" if base.secret(field) else "not set"
    held = _held_key(name, base, chosen) is not None
    st.text_input(
        label,
        type="password",
        key=_secret_key(name),
        placeholder="a key typed earlier in this browser session is in use"
        if held
        else ("leave empty to use the server's key" if base.secret(field) else "paste your key"),
        help="Held in this server's memory for this browser session only; never stored.",
    )
    st.caption(
        f"{code(variable)} on the server: **{on_server}**"
        + (" · a key typed in this browser session is in use" if held else "")
    )
    if name == "bedrock":
        st.caption(
            "Or leave it empty to use the AWS credentials the server finds (AWS_PROFILE, "
            "access keys, SSO or roles)."
        )
if name == "replay":
    st.caption(
        "Replays the cassette the server was started with (HAYTHAM_CASSETTE); it cannot be "
        "changed here."
    )

st.markdown("**Models per tier** (empty: the provider's default)")
cols = st.columns(len(TIERS))
for col, tier in zip(cols, TIERS, strict=True):
    col.text_input(
        f"{tier.capitalize()} model",
        value=known.model_id(tier) if known else spec.default_models[tier],
        key=_model_key(name, tier),
        help=f"Default for {name}: {spec.default_models[tier]}",
    )

left, right = st.columns(2)
test = left.button(
    "Test connection",
    key="provider_test",
    icon=":material/network_check:",
    use_container_width=True,
    help="One one-token call to the heavy model, through the same client the stages use.",
)
apply = right.button(
    "Use for new sessions",
    key="provider_apply",
    type="primary",
    icon=":material/check:",
    use_container_width=True,
)
if test or apply:
    try:
        conf = candidate(name, base, chosen)
        if test:
            with st.spinner(f"Calling {conf.provider} {conf.model_id('heavy')}…"):
                result = check_connection(conf)
            st.success(
                f"Connected: {code(result.model_id)} on {code(result.provider)} answered in "
                f"{result.latency_s:.2f} s.",
                icon=":material/check_circle:",
            )
        else:
            check_provider(conf)
            st.session_state[CHOSEN_KEY] = conf
            flash(
                f"New sessions you start from this browser session run on {_summary(conf)}. "
                "Sessions already started keep theirs."
            )
            st.rerun()
    except HaythamError as exc:
        show_error(exc)
