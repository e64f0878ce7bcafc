"""Stage 8 — build-buy-analysis (HOW): per need BUILD / BUY / HYBRID with a named service."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput, Traceable
from haytham.schemas.ids import Refs
from haytham.schemas.traits import ItemDeployment, near_value
from haytham.stages.base import ItemSource, Phase, StageSpec, StageView
from haytham.stages.capability_model import Capability, NonFunctional, relink_to_capabilities


class BuildBuyItem(Traceable):
    """One need of the product: build it, buy it (a named service) or both, the capabilities it
    serves, the traits it relies on and where it runs."""

    need: str
    recommendation: Literal["BUILD", "BUY", "HYBRID"]
    service: str = Field(default="", description="Named service/product when BUY or HYBRID.")
    rationale: str = ""
    capabilities: Refs = Field(min_length=1, description="CAP ids this serves.")
    requires: list[str] = Field(
        default_factory=list,
        description="Trait tags this choice relies on, e.g. realtime, video, open_registration.",
    )
    deployment: ItemDeployment | None = Field(
        default=None,
        description=(
            "Where this component runs: hosted (a vendor's or cloud servers), on_prem (servers "
            "we or the customer run), device (on the user's device, e.g. a library)."
        ),
    )
    needs_network: bool | None = Field(
        default=None, description="Whether it needs a network connection to work."
    )

    @field_validator("deployment", mode="before")
    @classmethod
    def _near_deployment(cls, v: object) -> object:
        if v is None or v == "":
            return None
        mapped = near_value("deployment", v)
        return {"air_gapped": "on_prem"}.get(mapped, mapped) if mapped else v

    @field_validator("recommendation", mode="before")
    @classmethod
    def _upper(cls, v: object) -> object:
        return v.strip().upper() if isinstance(v, str) else v


class BuildBuyAnalysis(TolerantModel):
    """Stage 8's payload: a BUILD / BUY / HYBRID choice per need."""

    items: list[BuildBuyItem] = Field(min_length=1, max_length=12)


class BuildBuyAnalysisOutput(StageOutput):
    """Stage 8's answer: the shared envelope with a BuildBuyAnalysis payload."""

    payload: BuildBuyAnalysis


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Capability references spelled as capability-model's ids."""
    relink_to_capabilities(output.payload.items, "capabilities", view)
    return output


def check(output: StageOutput, view: StageView) -> list[str]:
    """Needs that reference capabilities capability-model does not have earn one re-ask."""
    caps = view.payload("capability-model")
    if caps is None:
        return []
    known = caps.ids()
    return [
        f"need {i.need!r} references unknown capabilities {sorted(set(i.capabilities) - known)}"
        for i in output.payload.items
        if set(i.capabilities) - known
    ]


SPEC = StageSpec(
    8,
    "build-buy-analysis",
    Phase.HOW,
    "Build / buy analysis",
    BuildBuyAnalysisOutput,
    needs=("capability-model", "system-traits"),
    finalize=finalize,
    check=check,
    receives=(
        ItemSource("capability-model", "functional", Capability, "functional capability"),
        ItemSource(
            "capability-model", "non_functional", NonFunctional, "non-functional capability"
        ),
    ),
)
