"""The closed vocabulary of system traits, shared by the anchor, system-traits and the checks.

An anchor invariant may pin one trait (``trait = "auth=invite_only"``, polarity ``requires`` or
``forbids``); system-traits answers with one value per trait; build/buy items state their own
deployment and whether they need the network. Because all three use these enums, trait
propagation (ADR-022 2b) is a comparison of values, not a reading of prose.

:func:`near_value` maps a model's near-miss spelling ("Invite-only", "self hosted", "cloud") onto
the vocabulary; only a value that maps nowhere is unknown.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Literal, get_args

Interface = Literal["web", "mobile", "cli", "api", "desktop", "web_and_mobile"]
Auth = Literal["none", "invite_only", "open_registration", "sso", "api_key"]
Deployment = Literal["hosted", "on_prem", "air_gapped", "device"]
DataLayer = Literal["relational", "document", "files", "embedded", "none"]
Communication = Literal["none", "email", "in_app", "push", "sms", "video", "audio", "chat"]
Payments = Literal["none", "one_time", "subscription", "marketplace"]
Scheduling = Literal["none", "calendar", "reminders", "background_jobs"]
ItemDeployment = Literal["hosted", "on_prem", "device"]
"""Where one bought or built component runs: a vendor's servers, ours/the customer's, the
user's device (a library or on-device model counts as ``device`` when it runs there)."""

TRAIT_VALUES: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "interface": get_args(Interface),
        "auth": get_args(Auth),
        "deployment": get_args(Deployment),
        "data_layer": get_args(DataLayer),
        "realtime": ("true", "false"),
        "communication": get_args(Communication),
        "payments": get_args(Payments),
        "scheduling": get_args(Scheduling),
    }
)
"""Every trait and its allowed values (realtime is a boolean, written ``true``/``false``)."""

_ALIASES: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType(
    {
        "deployment": MappingProxyType(
            {
                "cloud": "hosted",
                "serverless": "hosted",
                "saas": "hosted",
                "managed": "hosted",
                "self_hosted": "on_prem",
                "on_premise": "on_prem",
                "on_premises": "on_prem",
                "onprem": "on_prem",
                "airgapped": "air_gapped",
                "offline": "air_gapped",
                "local": "device",
                "on_device": "device",
                "app_store": "device",
                "desktop": "device",
            }
        ),
        "auth": MappingProxyType(
            {
                "invite": "invite_only",
                "invitation": "invite_only",
                "closed": "invite_only",
                "open": "open_registration",
                "public_signup": "open_registration",
                "self_registration": "open_registration",
                "signup": "open_registration",
                "api_keys": "api_key",
                "single_sign_on": "sso",
            }
        ),
        "realtime": MappingProxyType(
            {"yes": "true", "live": "true", "1": "true", "no": "false", "0": "false"}
        ),
    }
)
_TRAIT_ALIASES = MappingProxyType(
    {"access": "auth", "auth_model": "auth", "access_model": "auth", "real_time": "realtime"}
)


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def near_trait(name: str) -> str | None:
    """The trait a model meant by ``name`` ("Auth", "real-time"), or None."""
    key = _snake(name)
    key = _TRAIT_ALIASES.get(key, key)
    return key if key in TRAIT_VALUES else None


def near_value(trait: str, value: object) -> str | None:
    """``value`` spelled as the vocabulary of ``trait`` spells it, or None when it maps nowhere."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    key = _snake(str(value))
    allowed = TRAIT_VALUES[trait]
    if key in allowed:
        return key
    alias = _ALIASES.get(trait, {}).get(key)
    if alias is not None:
        return alias
    squashed = {a.replace("_", ""): a for a in allowed}
    return squashed.get(key.replace("_", ""))


def parse_trait_ref(text: object) -> tuple[str, str] | None:
    """``"auth=invite_only"`` (or ``auth: invite-only``) → ("auth", "invite_only"); else None."""
    if not isinstance(text, str):
        return None
    parts = re.split(r"\s*[=:]\s*", text.strip(), maxsplit=1)
    if len(parts) != 2:
        return None
    trait = near_trait(parts[0])
    if trait is None:
        return None
    value = near_value(trait, parts[1])
    return None if value is None else (trait, value)
