"""Stage 7 — system-traits (HOW): eight traits, each a value + explanation.

:meth:`SystemTraits.constraints` derives the machine-checkable constraints (ADR-022 2b) that the
trait-propagation validator checks later stages against.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, computed_field, field_validator

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.schemas.traits import (
    Auth,
    Communication,
    DataLayer,
    Deployment,
    Interface,
    Payments,
    Scheduling,
    near_value,
)
from haytham.stages.base import Phase, StageSpec


class _Trait(TolerantModel):
    """One trait: a value from :mod:`haytham.schemas.traits` (near-misses mapped) + why."""

    TRAIT: ClassVar[str] = ""
    explanation: str = ""

    @field_validator("value", mode="before", check_fields=False)
    @classmethod
    def _near(cls, v: object) -> object:
        mapped = near_value(cls.TRAIT, v) if isinstance(v, str | bool) else None
        if cls.TRAIT == "realtime" and mapped is not None:
            return mapped == "true"
        return mapped if mapped is not None else v


class InterfaceTrait(_Trait):
    """Where people use the product (web, mobile, command line, API, desktop) and why."""

    TRAIT: ClassVar[str] = "interface"
    value: Interface


class AuthTrait(_Trait):
    """How users get in (none, invitation, open sign-up, SSO, API key, approval) and why."""

    TRAIT: ClassVar[str] = "auth"
    value: Auth


class DeploymentTrait(_Trait):
    """Where the product runs and why."""

    TRAIT: ClassVar[str] = "deployment"
    value: Deployment = Field(
        description="hosted (cloud/SaaS), on_prem (customer's servers), air_gapped (no network "
        "at all), device (runs on the user's device)."
    )


class DataLayerTrait(_Trait):
    """How the product keeps its data (relational, documents, files, embedded, none) and why."""

    TRAIT: ClassVar[str] = "data_layer"
    value: DataLayer


class RealtimeTrait(_Trait):
    """Whether users must see each other's actions live, and why."""

    TRAIT: ClassVar[str] = "realtime"
    value: bool = Field(description="true when users must see each other's actions live.")


class CommunicationTrait(_Trait):
    """The channel the product reaches people through (email, in-app, video, …) and why."""

    TRAIT: ClassVar[str] = "communication"
    value: Communication


class PaymentsTrait(_Trait):
    """How money (or barter) changes hands, if at all, and why."""

    TRAIT: ClassVar[str] = "payments"
    value: Payments


class SchedulingTrait(_Trait):
    """What the product does on a schedule (calendar, reminders, background jobs) and why."""

    TRAIT: ClassVar[str] = "scheduling"
    value: Scheduling


class SystemTraits(TolerantModel):
    """Stage 7's payload: the eight system traits, each a value of the shared vocabulary."""

    interface: InterfaceTrait
    auth: AuthTrait
    deployment: DeploymentTrait
    data_layer: DataLayerTrait
    realtime: RealtimeTrait
    communication: CommunicationTrait
    payments: PaymentsTrait
    scheduling: SchedulingTrait

    @computed_field  # type: ignore[prop-decorator]
    @property
    def constraints(self) -> dict[str, Any]:
        """The traits as machine-checkable constraints that later stages are checked against."""
        return {
            "interface": self.interface.value,
            "auth_model": self.auth.value,
            "open_registration": self.auth.value == "open_registration",
            "realtime": self.realtime.value,
            "communication": self.communication.value,
            "payments": self.payments.value != "none",
            "scheduling": self.scheduling.value != "none",
            "deployment": self.deployment.value,
        }

    def value_of(self, trait: str) -> str:
        """A trait's value as the shared vocabulary writes it (realtime as ``true``/``false``)."""
        value = getattr(self, trait).value
        return ("true" if value else "false") if isinstance(value, bool) else str(value)


class SystemTraitsOutput(StageOutput):
    """Stage 7's answer: the shared envelope with a SystemTraits payload."""

    payload: SystemTraits


SPEC = StageSpec(
    7,
    "system-traits",
    Phase.HOW,
    "System traits",
    SystemTraitsOutput,
    needs=("mvp-scope", "capability-model"),
    verified_with=("capability-model",),
)
