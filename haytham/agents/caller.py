"""One structured answer from a fresh Strands agent: the call every agent of the product makes.

Stages, anchor extraction, intake, phase verifiers, receiving-stage validation and change
requests all ask through :class:`ModelCaller`: the pydantic schema at the tool boundary (one
repair turn, then a typed :class:`~haytham.errors.ContractViolation`), every model call accounted
in ``events.jsonl``, streamed tokens and text reported to the page, provider errors turned into
the product's own errors with secrets redacted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel
from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.types.exceptions import MaxTokensReachedException, StructuredOutputException

from haytham.agents.context import Context
from haytham.config import Settings
from haytham.errors import ContractViolation, HaythamError, StageFailed
from haytham.models.accounting import ModelCall
from haytham.models.factory import ModelRuntime, build_model, context_window
from haytham.models.limits import SLOT_WAIT_EVENT
from haytham.safety.redact import carries_secret, redact, scrubbed
from haytham.schemas.base import parse_contract
from haytham.stages import BY_SLUG, StageSpec
from haytham.storage.protocol import Session
from haytham.tools.web_search import make_web_search

T = TypeVar("T", bound=BaseModel)
"""The structured answer's model: :meth:`ModelCaller.ask` returns an instance of it."""

REPAIR_TURNS = 2  # the first answer plus one repair after a contract violation
MAX_SEARCHES = 3  # extra turns for tool calls when a tool is offered


class Asker(Protocol):
    """:meth:`ModelCaller.ask` as callers that only ask see it (verifiers, receiving-stage
    validation): one structured answer from a fresh agent, or a typed error."""

    def __call__(
        self,
        stage: str,
        tier: str,
        system: str,
        ctx: Context,
        model_cls: type[T],
        *,
        account_as: str | None = None,
    ) -> T:
        """Ask the agent ``stage`` for one answer of ``model_cls``."""
        ...


class ModelCaller:
    """Asks one model for one structured answer, accounted under the session's events."""

    def __init__(
        self,
        settings: Settings,
        models: ModelRuntime,
        files: Session,
        *,
        on_progress: Callable[[str, int | None], None] | None = None,
        on_text: Callable[[str, str], None] | None = None,
    ) -> None:
        """``on_progress(row, tokens)`` hears the output tokens of a call while it streams, and
        ``(row, None)`` when it returns; ``on_text(row, tail)`` the tail of the streamed text."""
        self.settings = settings
        self.models = models
        self.files = files
        self.on_progress = on_progress
        self.on_text = on_text

    # -- model access --------------------------------------------------------------------------
    def _record_call(self, stage: str) -> Callable[[ModelCall], None]:
        def sink(call: ModelCall) -> None:
            self.files.append_event("model_call", stage, **call.model_dump(mode="json"))
            if self.on_progress is not None:
                self.on_progress(stage, None)

        return sink

    def _waiting(self, stage: str) -> Callable[[], None]:
        """The stage's next call waits for a provider slot: an event says so (every app
        instance shows it on the Run page until the call's own event follows)."""

        def waiting() -> None:
            self.files.append_event(SLOT_WAIT_EVENT, stage)

        return waiting

    def _streaming(self, row: str) -> Callable[[int], None] | None:
        if self.on_progress is None:
            return None
        report = self.on_progress
        return lambda tokens: report(row, tokens)

    def _texting(self, row: str) -> Callable[[str], None] | None:
        if self.on_text is None:
            return None
        keep = self.on_text
        return lambda text: keep(row, text)

    def tools_for(self, spec: StageSpec) -> list[Any]:
        """The tools the stage may call that this run has (web search needs a search URL)."""
        if "web_search" in spec.tools and self.settings.search_url:
            return [make_web_search(self.settings.search_url, self.files, spec.slug)]
        return []

    def ask(
        self,
        stage: str,
        tier: str,
        system: str,
        ctx: Context,
        model_cls: type[T],
        *,
        account_as: str | None = None,
    ) -> T:
        """One structured answer, an instance of ``model_cls``, from a fresh agent named
        ``stage``, or a typed error.

        Its calls are accounted under ``account_as`` (default: ``stage``). The agent gets
        ``REPAIR_TURNS`` model calls: a contract violation earns exactly one repair turn.
        """
        ctx.check_fits(stage, system, context_window(self.settings))
        model = build_model(
            self.settings,
            tier,
            stage,
            on_call=self._record_call(account_as or stage),
            on_progress=self._streaming(account_as or stage),
            on_wait=self._waiting(account_as or stage),
            on_text=self._texting(account_as or stage),
            runtime=self.models,
            output_model=model_cls,
        )
        tools = self.tools_for(BY_SLUG[stage]) if stage in BY_SLUG else []
        agent = Agent(
            model=model,
            system_prompt=system,
            callback_handler=None,
            tools=tools,
            retry_strategy=None,
            name=stage,
            conversation_manager=NullConversationManager(),
        )  # never trim silently
        try:
            result = agent(
                ctx.text(),
                structured_output_model=model_cls,
                limits={"turns": REPAIR_TURNS + (MAX_SEARCHES if tools else 0)},
            )
        except StructuredOutputException:
            raise _violation_from(agent, model_cls, stage) from None
        except MaxTokensReachedException:
            raise StageFailed(
                stage,
                "the model's answer was cut off at its output token limit; "
                "try again, or use a model with a larger output limit",
            ) from None
        except HaythamError:
            raise
        except Exception as exc:  # strands wraps provider errors; surface ours if present
            inner = _find_cause(exc)
            if inner is not None:
                raise scrubbed(inner) from None
            # provider text may echo request headers: redacted, and never chained with them
            raise StageFailed(
                stage, f"the model call failed ({type(exc).__name__}: {redact(str(exc))})"
            ) from (None if carries_secret(exc) else exc)
        answer = result.structured_output
        if not isinstance(answer, model_cls):  # none (or, never seen, another model's)
            raise _violation_from(agent, model_cls, stage)
        return answer


def _find_cause(exc: BaseException) -> HaythamError | None:
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        if isinstance(current, HaythamError):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def _violation_from(agent: Agent, model_cls: type[BaseModel], stage: str) -> ContractViolation:
    """The typed violation for the last structured answer the model attempted."""
    last_input: Any = None
    for message in reversed(agent.messages):
        for block in message.get("content", []):
            tool_use = block.get("toolUse") if isinstance(block, dict) else None
            if tool_use and tool_use.get("name") == model_cls.__name__:
                last_input = tool_use.get("input")
                break
        if last_input is not None:
            break
    if last_input is None:
        return ContractViolation(
            f"{stage}: the model gave no structured answer, even after one repair request",
            actual_shape="text",
            expected_keys=list(model_cls.model_fields),
            mismatch="missing_required_key",
        )
    try:
        parse_contract(model_cls, last_input, where=stage)
    except ContractViolation as exc:
        exc.answer = last_input
        return exc
    return ContractViolation(
        f"{stage}: the structured answer was not accepted", mismatch="type_mismatch"
    )
