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
from haytham.config import DEFAULT_MODEL_IDS, PROVIDERS, TIERS, Settings
from haytham.errors import HaythamError, InputError
from haytham.models.connection import check_connection
from haytham.models.providers import LOCAL_MODEL_CAVEAT, check_provider, provider_report
from haytham.safety.redact import redact, remember_settings

PROVIDER_KEY = "provider_name"
MAX_MODEL_ID = 200
MAX_URL = 500
MIN_KEY = 8  # shorter values would not be known to redact(); no real key is that short

LABELS = {
    "local": "local: the bundled Gemma 3 270M (demo quality, offline)",
    "anthropic": "anthropic: Claude (API key)",
    "bedrock": "bedrock: Claude on AWS Bedrock",
    "openai": "openai: OpenAI, or any OpenAI-compatible server (base URL)",
    "ollama": "ollama: a running Ollama server",
    "llamacpp": "llamacpp: a running llama-server",
    "replay": "replay: the server's recorded cassette (offline)",
}
# provider -> (settings field, variable, label) of the key a founder may type here
KEYS: dict[str, tuple[str, str, str]] = {
    "anthropic": ("anthropic_api_key", "ANTHROPIC_API_KEY", "Anthropic API key"),
    "openai": ("openai_api_key", "OPENAI_API_KEY", "API key"),
    "bedrock": ("aws_bearer_token_bedrock", "AWS_BEARER_TOKEN_BEDROCK", "Bedrock API key"),
}
# provider -> (settings field, label, default shown) of its endpoint
URLS: dict[str, tuple[str, str, str]] = {
    "openai": ("openai_base_url", "Base URL (leave empty for api.openai.com)", ""),
    "ollama": ("ollama_host", "Ollama host", "http://localhost:11434"),
    "llamacpp": ("llamacpp_base_url", "llama-server URL", ""),
}
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
    if name not in KEYS or chosen is None or chosen.provider != name:
        return None
    field = KEYS[name][0]
    mine = chosen.secret(field)
    return getattr(chosen, field) if mine and mine != base.secret(field) else None


def _model_id(name: str, tier: str) -> str:
    raw = _typed(_model_key(name, tier))
    if not raw:
        return DEFAULT_MODEL_IDS[name][tier]
    if len(raw) > MAX_MODEL_ID or any(c.isspace() or not c.isprintable() for c in raw):
        raise InputError(
            f"The {tier} model id has spaces or is over {MAX_MODEL_ID} characters: use the id "
            f"the provider lists, e.g. {DEFAULT_MODEL_IDS[name][tier]}."
        )
    return raw


def _url(name: str, base: Settings) -> str:
    field, label, _ = URLS[name]
    raw = _typed(_url_key(name))
    server = getattr(base, field) or ""
    if raw and raw == redact(server):
        return server  # the server's own URL, shown with its credentials hidden
    if not raw:
        if name == "llamacpp":
            raise InputError("Give the llama-server URL, e.g. http://localhost:8080.")
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
                    if name == "openai"
                    else "."
                )
            )
        return SecretStr(raw)
    return _held_key(name, base, chosen)


def candidate(name: str, base: Settings, chosen: Settings | None) -> Settings:
    """The settings the form describes, validated; raises :class:`InputError` (one sentence)."""
    changes: dict[str, Any] = {"provider": name}
    for tier in TIERS:
        changes[f"model_{tier}"] = _model_id(name, tier)
    if name in URLS:
        changes[URLS[name][0]] = _url(name, base)
    if name == "bedrock":
        region = _typed("provider_region_bedrock")
        if region and not all(c.isalnum() or c == "-" for c in region):
            raise InputError("The AWS region is a name like us-west-2 (letters, digits, dashes).")
        changes["aws_region"] = region or None
    if name in KEYS:
        changes[KEYS[name][0]] = _key(name, base, chosen)
    conf = base.updated(**changes)
    keyless = name == "openai" and conf.openai_base_url  # a compatible server may need none
    if name in ("anthropic", "openai") and not conf.secret(KEYS[name][0]) and not keyless:
        raise InputError(f"Paste an API key for {name}: the server has no {KEYS[name][1]} either.")
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
name: str = st.selectbox(
    "Provider",
    PROVIDERS,
    index=PROVIDERS.index(start_from),
    format_func=lambda p: LABELS.get(p, p),
    key=PROVIDER_KEY,
)
server_status = next(s for s in provider_report(base) if s.name == name)
st.caption(f"On the server's settings: {md(no_paths(server_status.reason))}")
if name == "local":
    st.warning(LOCAL_MODEL_CAVEAT, icon=":material/warning:")

known = _from(name, base, chosen)
if name in URLS:
    field, label, fallback = URLS[name]
    shown = getattr(known, field, None) or getattr(base, field) or fallback
    st.text_input(label, value=redact(shown or ""), key=_url_key(name))
if name == "bedrock":
    st.text_input(
        "AWS region (leave empty for the server's or us-west-2)",
        value=(known.aws_region if known else None) or base.aws_region or "",
        key="provider_region_bedrock",
    )
if name in KEYS:
    field, variable, label = KEYS[name]
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
        value=known.model_id(tier) if known else DEFAULT_MODEL_IDS[name][tier],
        key=_model_key(name, tier),
        help=f"Default for {name}: {DEFAULT_MODEL_IDS[name][tier]}",
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
