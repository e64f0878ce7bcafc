"""New idea: the founder's text, an appetite, and the provider it will run on."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from frontend_streamlit.components.context import (
    go,
    new_session_backend,
    select_session,
    show_error,
    started,
)
from frontend_streamlit.components.idea_text import show_idea
from frontend_streamlit.components.intake_form import intake_panel, pending_intake, stops_at_intake
from frontend_streamlit.components.progress import STAGE_COUNT
from frontend_streamlit.components.safe_text import code
from haytham.idea.checks import MAX_CHARS, MIN_WORDS, count_words
from haytham.models.providers import LOCAL_MODEL_CAVEAT, check_provider
from haytham.stages.mvp_scope import APPETITES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
IDEA_KEY = "idea_text"
NO_PREFERENCE = "no preference"


def _examples() -> dict[str, str]:
    out = {}
    for path in sorted(EXAMPLES.glob("*.md")):
        name = path.stem.split("_", 1)[-1].replace("_", " ")
        name = name[:1].upper() + name[1:]
        out[name] = path.read_text(encoding="utf-8").strip()
    return out


def _use_example(text: str) -> None:
    st.session_state[IDEA_KEY] = text


def _covered_ideas(covered: dict[str, str]) -> None:
    """Replay refused the text: the ideas the cassette covers, each one click away."""
    if not covered:
        st.caption(
            "The cassette covers none of the examples: choose a model provider to analyse "
            "this idea."
        )
        return
    st.markdown("**Ideas this cassette covers:**")
    for name, text in covered.items():
        st.button(f"Use “{name}”", key=f"covered_{name}", on_click=_use_example, args=(text,))


b = new_session_backend()  # the provider chosen on the Model provider page, if any
conf = b.service.settings
st.title("New idea")
pending = pending_intake(b)
if pending is not None:  # the intake's questions or refusal replace the Start area, in view
    intake_panel(b, pending, idea_key=IDEA_KEY)
    state = b.service.load_state(pending)
    with st.expander("Your idea, as you wrote it", icon=":material/lightbulb:"):
        show_idea(state.idea)
    st.stop()
st.caption(
    "Describe the idea in your own words. Haytham turns it into a validated spec through "
    f"{STAGE_COUNT} and four decision gates, keeping it faithful to what you wrote."
)

with st.container(border=True):
    st.markdown(
        f"**Provider:** {code(conf.provider)} · **models:** light {code(conf.model_id('light'))}, "
        f"heavy {code(conf.model_id('heavy'))}, reasoning {code(conf.model_id('reasoning'))}"
    )
    st.page_link(
        "views/providers.py", label="Choose the provider and models", icon=":material/tune:"
    )
    if conf.provider == "local":
        st.warning(LOCAL_MODEL_CAVEAT, icon=":material/warning:")
    provider_problem = None
    try:
        check_provider(conf)
    except Exception as exc:
        provider_problem = exc
        show_error(exc)

examples = _examples()
replay = conf.provider == "replay" and provider_problem is None
if replay:  # a cassette answers only what it recorded: offer just those ideas
    runnable = {n: t for n, t in examples.items() if b.worker.replay_fit(t).ok}
    left_out = [n for n in examples if n not in runnable]
    examples = runnable
    if left_out:
        st.caption(
            "Replay mode: the examples below are the ideas its cassette covers; not covered, "
            "so not offered: " + ", ".join(left_out) + "."
        )
cols = st.columns(len(examples) or 1)
for col, (name, text) in zip(cols, examples.items(), strict=False):
    col.button(
        f"Example: {name}",
        key=f"example_{name}",
        on_click=_use_example,
        args=(text,),
        use_container_width=True,
    )

# No max_chars on the widget: a browser drops a paste that would exceed it, silently. The text
# is kept whole and the limit is said here (Start refuses it with the same sentence).
idea = st.text_area(
    "Your idea",
    key=IDEA_KEY,
    height=260,
    placeholder="Who is it for, what do they do with it, and why does it matter?",
)
words = count_words(idea or "")
st.caption(f"{len(idea or ''):,} / {MAX_CHARS:,} characters · {words} words (at least {MIN_WORDS})")
if len(idea or "") > MAX_CHARS:
    st.warning(
        f"The idea is {len(idea or ''):,} characters; the limit is {MAX_CHARS:,}. Your text is "
        "kept: shorten it to the essentials before you start.",
        icon=":material/content_cut:",
    )

appetite = st.radio(
    "Appetite (how big a first version)",
    [NO_PREFERENCE, *APPETITES],
    horizontal=True,
    key="appetite",
    help="Bounds the number of stories: "
    + ", ".join(f"{name} ≤ {size.max_stories}" for name, size in APPETITES.items())
    + ".",
)

# a text too short or too long gets its own message on Start; replay judges the rest
sized = words >= MIN_WORDS and len(idea or "") <= MAX_CHARS
fit = b.worker.replay_fit(idea or "") if replay else None
if fit is not None and sized:
    if fit.ok:
        st.info(fit.why, icon=":material/replay:")
    else:
        st.warning(fit.why, icon=":material/replay:")
        _covered_ideas(examples)
elif fit is not None:
    st.info(
        "Replay mode: answers come from a recorded cassette, not a model; pick an example "
        "above, or type an idea the cassette recorded.",
        icon=":material/replay:",
    )
blocked = fit is not None and not fit.ok and sized
if st.button(
    "Start",
    type="primary",
    key="start",
    disabled=provider_problem is not None or blocked,
    help=fit.why if blocked and fit is not None else None,
):
    try:
        sid = b.service.create_session(
            idea or "", appetite=None if appetite == NO_PREFERENCE else appetite
        )
    except Exception as exc:  # InputError: the message says what to change; nothing was created
        show_error(exc)
    else:
        started(sid)
        select_session(sid)
        if stops_at_intake(b, sid):  # a thin idea's questions, or why it is no idea: on top
            st.rerun()
        b.worker.run(sid)
        go("run", sid)
