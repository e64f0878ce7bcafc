"""Stage 7 — system-traits (HOW): eight traits, each a value + explanation.

:meth:`SystemTraits.constraints` derives the machine-checkable constraints (ADR-022 2b) that the
trait-propagation validator checks later stages against.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, computed_field

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.stages.base import Phase, StageSpec


class InterfaceTrait(TolerantModel):
    value: Literal["web", "mobile", "cli", "api", "desktop", "web_and_mobile"]
    explanation: str = ""


class AuthTrait(TolerantModel):
    value: Literal["none", "invite_only", "open_registration", "sso", "api_key"]
    explanation: str = ""


class DeploymentTrait(TolerantModel):
    value: Literal["cloud", "serverless", "self_hosted", "local", "app_store"]
    explanation: str = ""


class DataLayerTrait(TolerantModel):
    value: Literal["relational", "document", "files", "embedded", "none"]
    explanation: str = ""


class RealtimeTrait(TolerantModel):
    value: bool = Field(description="true when users must see each other's actions live.")
    explanation: str = ""


class CommunicationTrait(TolerantModel):
    value: Literal["none", "email", "in_app", "push", "sms", "video", "audio", "chat"]
    explanation: str = ""


class PaymentsTrait(TolerantModel):
    value: Literal["none", "one_time", "subscription", "marketplace"]
    explanation: str = ""


class SchedulingTrait(TolerantModel):
    value: Literal["none", "calendar", "reminders", "background_jobs"]
    explanation: str = ""


class SystemTraits(TolerantModel):
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
        return {
            "interface": self.interface.value,
            "auth_model": self.auth.value,
            "open_registration": self.auth.value == "open_registration",
            "realtime": self.realtime.value,
            "communication": self.communication.value,
            "payments": self.payments.value != "none",
            "scheduling": self.scheduling.value != "none",
        }


class SystemTraitsOutput(StageOutput):
    payload: SystemTraits


SPEC = StageSpec(
    7,
    "system-traits",
    Phase.HOW,
    "System traits",
    SystemTraitsOutput,
    needs=("mvp-scope", "capability-model"),
)
