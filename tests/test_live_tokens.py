"""Tokens so far while a call streams: the accounting wrapper reports the output received, the
service keeps the call in progress per session (the Run page shows it), and forgets it when the
call returns."""

from __future__ import annotations

from pipeline_helpers import POWER8_IDEA, replay_settings
from test_models_accounting import FaultyModel, run_agent

from haytham.app import make_service
from haytham.models.accounting import PROGRESS_STEP, TAIL_CHARS, AccountedModel, ModelCall
from haytham.runs.progress import LiveCalls


def test_output_tokens_are_reported_while_the_call_streams() -> None:
    seen: list[int] = []
    calls: list[ModelCall] = []
    answer = "word " * 200  # 1,000 characters: about 250 tokens
    model = AccountedModel(
        FaultyModel([], answer=answer),
        provider="anthropic",
        model_id="claude-x",
        tier="light",
        agent="critic",
        on_call=calls.append,
        on_progress=seen.append,
        retry_base_delay=0.0,
    )
    run_agent(model)
    assert seen and seen == sorted(seen) and seen[-1] <= len(answer) // 4 + 1
    assert all(b - a >= PROGRESS_STEP for a, b in zip(seen, seen[1:], strict=False))
    assert len(calls) == 1


def test_the_service_holds_the_call_in_progress_and_forgets_it_after(tmp_path, monkeypatch):
    heard: list[tuple[str, int | None]] = []
    original = LiveCalls.reporter

    def recording(self, session_id):
        report = original(self, session_id)

        def both(row, tokens):
            heard.append((row, tokens))
            report(row, tokens)

        return both

    monkeypatch.setattr(LiveCalls, "reporter", recording)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)
        assert svc.live_call(sid) is None  # nothing streams between calls
    first = [t for row, t in heard if row == "idea-analysis"]
    assert first[-1] is None and any(t and t > 0 for t in first)  # tokens, then the end


def test_live_calls_keep_when_a_call_started() -> None:
    live = LiveCalls()
    report = live.reporter("s1")
    report("mvp-scope", 16)
    started = live.get("s1").since
    report("mvp-scope", 48)
    now = live.get("s1")
    assert (now.row, now.tokens, now.since) == ("mvp-scope", 48, started)
    assert live.get("s2") is None
    report("mvp-scope", None)
    assert live.get("s1") is None


def test_the_streamed_text_is_kept_for_the_run_page() -> None:
    """Issue 28: the text a stage is generating is visible while it streams."""
    tails: list[str] = []
    answer = " ".join(f"word{n}" for n in range(300))
    model = AccountedModel(
        FaultyModel([], answer=answer),
        provider="anthropic",
        model_id="claude-x",
        tier="light",
        agent="critic",
        on_text=tails.append,
        retry_base_delay=0.0,
    )
    run_agent(model)
    assert tails and all(0 < len(t) <= TAIL_CHARS for t in tails)
    assert all(t in answer for t in tails)  # the tail of what came so far
    assert answer.endswith(tails[-1])
    live = LiveCalls()
    report, keep = live.reporter("s1"), live.text_sink("s1")
    report("idea-analysis", 16)
    keep("idea-analysis", "…the idea is")
    report("idea-analysis", 32)  # more tokens keep the text until the next tail
    assert live.get("s1").text == "…the idea is"
    report("idea-analysis", None)
    assert live.get("s1") is None
