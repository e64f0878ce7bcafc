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
Auth = Literal["none", "invite_only", "open_registration", "sso", "api_key", "approval"]
Deployment = Literal["hosted", "on_prem", "air_gapped", "device"]
DataLayer = Literal["relational", "document", "files", "embedded", "none"]
Communication = Literal["none", "email", "in_app", "push", "sms", "video", "audio", "chat"]
Payments = Literal["none", "one_time", "subscription", "marketplace", "barter", "donation"]
Scheduling = Literal["none", "calendar", "reminders", "background_jobs"]
Cadence = Literal["on_demand", "scheduled", "daily", "weekly", "monthly", "one_off"]
"""When people use it: whenever they like, at set times, on a daily/weekly/monthly rhythm, once."""
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
        "cadence": get_args(Cadence),
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
                "approved": "approval",
                "approval_required": "approval",
                "vetted": "approval",
                "manual_approval": "approval",
            }
        ),
        "realtime": MappingProxyType(
            {
                "yes": "true",
                "live": "true",
                "synchronous": "true",
                "1": "true",
                "no": "false",
                "asynchronous": "false",
                "async": "false",
                "0": "false",
            }
        ),
        "cadence": MappingProxyType(
            {
                "anytime": "on_demand",
                "any_time": "on_demand",
                "whenever": "on_demand",
                "ad_hoc": "on_demand",
                "continuous": "on_demand",
                "fixed_schedule": "scheduled",
                "set_times": "scheduled",
                "per_day": "daily",
                "per_week": "weekly",
                "each_week": "weekly",
                "every_week": "weekly",
                "per_month": "monthly",
                "once": "one_off",
                "single": "one_off",
            }
        ),
        "payments": MappingProxyType(
            {
                "free": "none",
                "no_payments": "none",
                "swap": "barter",
                "exchange": "barter",
                "trade": "barter",
                "in_kind": "barter",
                "donations": "donation",
                "tips": "donation",
                "pay_what_you_want": "donation",
                "one_off": "one_time",
                "recurring": "subscription",
                "commission": "marketplace",
            }
        ),
    }
)
_TRAIT_ALIASES = MappingProxyType(
    {
        "access": "auth",
        "auth_model": "auth",
        "access_model": "auth",
        "real_time": "realtime",
        "interaction": "realtime",
        "medium": "communication",
        "channel": "communication",
        "exchange": "payments",
        "payment": "payments",
        "rhythm": "cadence",
        "frequency": "cadence",
        "timing": "cadence",
    }
)

FAMILY_OF_KIND: MappingProxyType[str, str] = MappingProxyType(
    {
        "access": "auth",
        "medium": "communication",
        "cadence": "cadence",
        "exchange": "payments",
        "deployment": "deployment",
        "interaction": "realtime",
    }
)
"""Invariant kind -> the trait family that pins it. An invariant of one of these kinds gets a
pin (the anchor extraction asks once more when the model leaves it out, then Gate 1 asks the
founder); other kinds (role, structure, data, other) have no closed vocabulary."""

VALUE_WORDS: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType(
    {
        "auth": MappingProxyType(
            {
                "none": "No accounts: anyone uses it without signing in",
                "invite_only": "Only people who are invited can join",
                "open_registration": "Anyone can sign up on their own",
                "sso": "People sign in with their organisation's single sign-on",
                "api_key": "Programs use it with an API key",
                "approval": "People ask to join and someone approves them first",
            }
        ),
        "communication": MappingProxyType(
            {
                "none": "People do not send each other messages through it",
                "email": "By email",
                "in_app": "Messages inside the app",
                "push": "Push notifications on their phones",
                "sms": "By text message (SMS)",
                "video": "By video call",
                "audio": "By voice or audio call",
                "chat": "By text chat",
            }
        ),
        "cadence": MappingProxyType(
            {
                "on_demand": "Whenever people like, at any time",
                "scheduled": "At set times that someone schedules",
                "daily": "Once a day, every day",
                "weekly": "On a weekly rhythm",
                "monthly": "On a monthly rhythm",
                "one_off": "Once, a single event",
            }
        ),
        "payments": MappingProxyType(
            {
                "none": "No money changes hands",
                "one_time": "People pay once",
                "subscription": "People pay a recurring subscription",
                "marketplace": "Buyers pay sellers through it and it takes a cut",
                "barter": "People swap goods or help instead of paying money",
                "donation": "People give money voluntarily, as donations",
            }
        ),
        "deployment": MappingProxyType(
            {
                "hosted": "It runs on a hosted service in the cloud",
                "on_prem": "It runs on the organisation's own servers",
                "air_gapped": "It runs with no network connection at all",
                "device": "It runs on each person's own device",
            }
        ),
        "realtime": MappingProxyType(
            {
                "true": "Live: people take part at the same time and see each other act",
                "false": "Each at their own pace, not at the same time",
            }
        ),
    }
)
"""Each pinnable value in plain words: the options of a Gate 1 "which of these does your idea
mean?" question, and the texts the checks compare an item's wording with."""


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
    aliases = _ALIASES.get(trait)
    alias = aliases.get(key) if aliases is not None else None
    if alias is not None:
        return alias
    squashed = {a.replace("_", ""): a for a in allowed}
    return squashed.get(key.replace("_", ""))


def value_words(trait: str, value: str) -> frozenset[str]:
    """How prose names ``trait=value``: the value's own spelling and its near-miss aliases, as
    lower-case phrases ("sms"; "weekly", "per week", "each week"); none for the values that
    name an absence ("none", "false")."""
    if value in ("none", "false", "true"):
        return frozenset()
    aliases = _ALIASES.get(trait, MappingProxyType({}))
    spelled = [value, *(a for a, v in aliases.items() if v == value)]
    return frozenset(w.replace("_", " ") for w in spelled)


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


SATISFIES: MappingProxyType[str, MappingProxyType[str, frozenset[str]]] = MappingProxyType(
    {
        "auth": MappingProxyType(
            {"approval": frozenset({"invite_only"}), "invite_only": frozenset({"approval"})}
        ),
        "payments": MappingProxyType({"barter": frozenset({"none"})}),
    }
)
"""Other values that keep a pin true: approval is a closed door like an invitation (the
approver sends it), and barter takes no money, so a system with ``payments=none`` honours it."""

EXCLUSIONS: frozenset[tuple[str, str]] = frozenset(
    {("payments", "none"), ("communication", "none"), ("scheduling", "none")}
)
"""Pins that rule a whole trait out: like a ``forbids`` invariant, nothing "delivers" them."""


def satisfies(family: str, pinned: str, actual: str) -> bool:
    """Whether ``actual`` keeps a ``requires`` pin ``family=pinned`` true."""
    if actual == pinned:
        return True
    others = SATISFIES.get(family)
    return others is not None and actual in others.get(pinned, frozenset())


def family_of(kind: str) -> str | None:
    """The trait family an invariant of ``kind`` is pinned in, or None (no closed vocabulary)."""
    return FAMILY_OF_KIND.get(kind)


def normalise_assumes(value: object) -> dict[str, str]:
    """A model's ``assumes`` ({"Auth": "Invite-only", "payment": "free"}) in the vocabulary:
    near-miss families and values mapped, unknown ones dropped (a list of ``"auth=..."`` refs is
    accepted too)."""
    if isinstance(value, list):
        refs = [parse_trait_ref(v) for v in value]
        return {r[0]: r[1] for r in refs if r is not None}
    if not isinstance(value, dict):
        return {}
    out: dict[str, str] = {}
    for raw_family, raw_value in value.items():
        family = near_trait(str(raw_family))
        if family is None or raw_value is None:
            continue
        mapped = near_value(family, raw_value)
        if mapped is not None:
            out[family] = mapped
    return out
