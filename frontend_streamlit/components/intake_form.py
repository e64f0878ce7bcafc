"""Intake in the UI (issue 17): after Start, the text is classified while the page waits; a thin
idea gets its questions as a form (answer each, skip them, or start over), an unrelated text the
explanation and a few example ideas. Answered or skipped, the run goes on in the background."""

from __future__ import annotations

from typing import Any

import streamlit as st

from frontend_streamlit.components.context import attempt, go, select_session, started
from frontend_streamlit.components.safe_text import md

PENDING = "intake_session"  # the new session whose intake stopped, on the New idea page
STOPPED = ("waiting_intake", "unrelated")


def stops_at_intake(b: Any, sid: str) -> bool:
    """Classify a new session's text (a spinner meanwhile). ``True`` when the run stops at
    intake (the page then shows :func:`intake_panel`); ``False`` when it may go on."""
    if not b.service.settings.intake:
        return False
    if b.service.settings.provider == "local":  # minutes of model loading: the Run page shows
        return False  # intake as its first row, and its questions when it stops there
    with st.spinner("Reading your idea…"):
        outcome = attempt(lambda: b.service.classify(sid))
    if outcome is not None and outcome.status in STOPPED:
        st.session_state[PENDING] = sid
        return True
    return False


def _analyse_anyway(b: Any, sid: str) -> None:
    """The founder overrides an "unrelated" reading: the same text in a new session that skips
    intake (the stopped session stays as it ended), run in the background."""
    state = attempt(lambda: b.service.load_state(sid))
    if state is None:
        return
    new = attempt(
        lambda: b.service.create_session(state.idea, appetite=state.appetite, skip_intake=True)
    )
    if new is None:
        return
    st.session_state.pop(PENDING, None)
    started(new)
    select_session(new)
    b.worker.run(new)
    go("run", new)


def _start_over(idea_key: str | None, text: str = "") -> None:
    st.session_state.pop(PENDING, None)
    if idea_key:
        st.session_state[idea_key] = text


def intake_panel(b: Any, sid: str | None = None, idea_key: str | None = None) -> None:
    """The questions of ``sid`` (default: the New idea page's pending session) as a form, or
    why its text is not an idea; nothing once the session is past intake."""
    sid = sid or st.session_state.get(PENDING)
    if not sid:
        return
    status = attempt(lambda: b.service.status(sid))
    if status is None or status["status"] not in STOPPED:
        return
    intake = status.get("intake") or {}
    if status["status"] == "unrelated":
        with st.container(border=True):
            st.subheader("This doesn't read as a startup idea")
            st.markdown(md(intake.get("explanation") or ""))
            st.markdown("**Some ideas to start from:**")
            for n, example in enumerate(intake.get("examples") or []):
                st.markdown(f"- {md(example)}")
                if idea_key:
                    st.button(
                        "Use this idea",
                        key=f"intake_example_{n}",
                        on_click=_start_over,
                        args=(idea_key, example),
                    )
            st.button("Start over", key="intake_start_over", on_click=_start_over, args=(idea_key,))
            st.caption(
                "A weak model can misread a real idea. If yours is one, analyse it anyway: a "
                "new session of the same text, without this step."
            )
            if st.button("It is an idea: analyse it anyway", key="intake_analyse_anyway"):
                _analyse_anyway(b, sid)
        return
    questions = intake.get("questions") or []
    with st.container(border=True):
        st.subheader("A few questions before the analysis starts")
        if intake.get("reasoning"):
            st.caption(md(intake["reasoning"]))
        # no form: Enter in an answer only keeps it (a form would submit every answer at once,
        # the ones not yet typed included); the buttons below read every answer
        answers = [
            st.text_input(
                f"{n}. {md(q['question'])}",
                key=f"intake_answer_{sid}_{n}",
                help=f"Lean Canvas: {q['dimension'].replace('_', ' ')}. Leave it empty to skip it.",
            )
            for n, q in enumerate(questions, 1)
        ]
        st.caption(
            "Your answers are added to the idea as “Founder's clarifications”; every stage "
            "reads them. Enter keeps an answer; nothing is sent until you press a button below."
        )
        blanks = blank_answers(answers)
        confirm_key = f"intake_blanks_{sid}"
        c1, c2, c3 = st.columns(3)
        answer = c1.button("Answer and continue", type="primary", key=f"intake_answer_go_{sid}")
        skip = c2.button("Skip the questions", key=f"intake_skip_{sid}")
        c3.button("Start over", key="intake_start_over", on_click=_start_over, args=(idea_key,))
        if answer and blanks and len(blanks) < len(answers):
            st.session_state[confirm_key] = blanks
            answer = False
        elif answer and blanks:  # nothing typed: say so instead of sending nothing
            st.warning(
                "Every answer is blank. Answer the questions above, or skip them.",
                icon=":material/edit_note:",
            )
            answer = False
        asked = st.session_state.get(confirm_key)
        if asked and not answer and not skip:
            if asked != blanks:  # the founder filled some in meanwhile: ask again on the click
                st.session_state.pop(confirm_key, None)
            else:
                st.warning(f"{blank_sentence(blanks)} Answer above, or go on without.")
                answer = st.button(
                    f"Continue with {_numbers(blanks)} blank", key=f"intake_blank_go_{sid}"
                )
    if answer or skip:
        given = [] if skip else [a or "" for a in answers]
        job = attempt(lambda: b.worker.answer(sid, given))
        if job is not None:
            st.session_state.pop(PENDING, None)
            st.session_state.pop(confirm_key, None)
            go("run", sid)


def blank_answers(answers: list[str]) -> list[int]:
    """The 1-based numbers of the questions whose answer is empty or only spaces."""
    return [n for n, a in enumerate(answers, 1) if not (a or "").strip()]


def _numbers(blanks: list[int]) -> str:
    names = [str(n) for n in blanks]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"question{'s' if len(names) > 1 else ''} {listed}"


def blank_sentence(blanks: list[int]) -> str:
    """One sentence naming the blank answers ("Question 2 is blank: it will be skipped.")."""
    many = len(blanks) > 1
    return (
        f"{_numbers(blanks).capitalize()} {'are' if many else 'is'} blank: "
        f"{'they' if many else 'it'} will be skipped."
    )


def pending_intake(b: Any) -> str | None:
    """The New idea page's session stopped at intake (its questions or refusal replace the
    Start area), or ``None``."""
    sid = st.session_state.get(PENDING)
    if not sid:
        return None
    status = attempt(lambda: b.service.status(sid))
    if status is None or status["status"] not in STOPPED:
        st.session_state.pop(PENDING, None)
        return None
    return sid
