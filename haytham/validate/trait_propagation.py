"""Trait propagation (ADR-022 2b): downstream HOW/STORIES choices must respect the constraints.

Constraints come from system-traits' ``payload.constraints`` (realtime, auth model / open
registration, payments, scheduling, communication, interface) and from the anchor's access,
interaction and session-medium invariants (a closed community forbids open registration; a
synchronous interaction requires realtime). They are checked against build-buy items,
architecture decisions and stories: first the structured ``requires`` tags, then the item's text
with negation handling ("real-time is not needed" does not fire). system-traits itself is checked
against the anchor unless it overrides the invariant with a reason.

Catches: ``realtime: false`` next to a service chosen for realtime subscriptions or a DEC for
them; open self-registration under an invite-only / closed access model; payments, scheduling or
messaging relied on where the traits rule them out; traits that contradict the anchor.

Cannot catch: a choice that relies on a trait without naming it (e.g. "Supabase" alone), synonyms
outside the maintained patterns, or negation that spans sentences. Tags are free text, so unknown
tags are ignored rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from haytham.validate.common import (
    AV_VALUE,
    Context,
    access_closed,
    anchor_invariants,
    finding,
    interaction_sync,
    invariant_kind,
    mentions_invariant,
    overridden_names,
    resolved,
)
from haytham.validate.model import TRAIT_PROPAGATION, Finding
from haytham.validate.negation import affirmed_matches
from haytham.validate.text import normalize, short, snake

NAME = TRAIT_PROPAGATION

_TAGS: dict[str, tuple[str, ...]] = {
    "realtime": (
        "realtime",
        "real_time",
        "websocket",
        "websockets",
        "live_updates",
        "presence",
        "live_sync",
        "subscriptions_realtime",
        "realtime_subscriptions",
        "live",
        "sse",
    ),
    "open_registration": (
        "open_registration",
        "self_registration",
        "public_signup",
        "signup",
        "self_signup",
        "open_signup",
        "public_registration",
        "sign_up",
    ),
    "payments": ("payments", "payment", "billing", "checkout", "subscription_billing", "payouts"),
    "scheduling": ("scheduling", "scheduler", "cron", "background_jobs", "reminders", "calendar"),
    "email": ("email", "email_notifications"),
    "push": ("push", "push_notifications"),
    "sms": ("sms",),
    "video": ("video", "video_call", "webrtc"),
    "audio": ("audio", "voice"),
    "chat": ("chat", "messaging", "in_app_chat"),
    "web": ("web", "web_ui", "browser"),
    "mobile": ("mobile", "ios", "android", "mobile_app"),
    "cli": ("cli", "terminal"),
    "desktop": ("desktop",),
}
_TAG_OF = MappingProxyType({alias: key for key, aliases in _TAGS.items() for alias in aliases})
_COMM_TAGS = ("email", "push", "sms", "video", "audio", "chat")
_INTERFACE_TAGS = ("web", "mobile", "cli", "desktop")

_TEXT: dict[str, re.Pattern[str]] = {
    "realtime": re.compile(
        r"\b(?:realtime|websocket|socket\.io|live (?:updates?|sync|feed|presence|cursors?)|"
        r"presence (?:indicators?|channel)|push updates?|pub ?/ ?sub|server sent events|"
        r"instant(?:ly)? (?:sync|updates?))\b"
    ),
    "open_registration": re.compile(
        r"\b(?:open registration|selfregistration|public (?:signup|registration)|"
        r"anyone can (?:signup|register|join|create an account)|"
        r"(?:users?|visitors?|people|anyone|customers?) (?:can |may |will )?(?:signup|register)\b|"
        r"signup (?:form|page|flow|with email)|create (?:an|their|your) (?:own )?account|"
        r"(?:email|password|social|google|oauth)(?: and | ?/ ?| )(?:password )?"
        r"(?:signup|registration))"
    ),
    "payments": re.compile(
        r"\b(?:payments?|billing|checkout|stripe|paddle|braintree|invoic(?:e|es|ing)|"
        r"credit cards?|paywall|pricing tiers?|subscription (?:plans?|tiers?|billing|fees?))\b"
    ),
}
_INVITED = re.compile(
    r"\b(?:invite|invited|invitation|inviteonly|allow ?list|whitelist|approved|approval|"
    r"pre-?registered|admin creates?|code)\b"
)
_REALTIME_DENIED = re.compile(
    r"\b(?:no|without) (?:need for )?realtime\b|\brealtime (?:is |are )?(?:not|un)(?:needed|"
    r"necessary|required)\b|\bpolling instead of\b|\basync(?:hronous)?(?: only)? instead of\b"
)


@dataclass(frozen=True)
class Constraint:
    key: str
    allowed: bool  # False: downstream must not rely on it; True: it is required
    source: str
    invariant: str | None = None


def _tag(tag: str) -> str | None:
    norm = snake(tag)
    if norm in _TAG_OF:
        return _TAG_OF[norm]
    return "realtime" if "realtime" in norm or "real_time" in norm else None


def derive_constraints(ctx: Context) -> list[Constraint]:
    """Constraints from the anchor (resolved invariants) and system-traits, anchor first."""
    out: list[Constraint] = []
    for inv in anchor_invariants(ctx.snap.anchor):
        if not resolved(inv):
            continue
        kind, src = invariant_kind(inv), f"anchor {inv.property} = {inv.value!r}"
        if kind == "access" and access_closed(inv):
            out.append(Constraint("open_registration", False, src, inv.property))
        elif kind == "interaction":
            sync = interaction_sync(inv)
            if sync is not None:
                out.append(Constraint("realtime", sync, src, inv.property))
    traits = ctx.payload("system-traits")
    if traits is not None:
        c = traits.constraints
        out.append(
            Constraint(
                "realtime",
                bool(c["realtime"]),
                f"system-traits realtime = {str(c['realtime']).lower()}",
            )
        )
        if not c["open_registration"]:
            out.append(
                Constraint("open_registration", False, f"system-traits auth = {c['auth_model']}")
            )
        if not c["payments"]:
            out.append(Constraint("payments", False, "system-traits payments = none"))
        if not c["scheduling"]:
            out.append(Constraint("scheduling", False, "system-traits scheduling = none"))
        if c["communication"] == "none":
            for tag in _COMM_TAGS:
                out.append(Constraint(tag, False, "system-traits communication = none"))
        iface = c["interface"]
        allowed_ifaces = {"web", "mobile"} if iface == "web_and_mobile" else {iface}
        if iface in ("cli", "api"):
            allowed_ifaces |= {"cli"}
        for tag in _INTERFACE_TAGS:
            if tag not in allowed_ifaces:
                out.append(Constraint(tag, False, f"system-traits interface = {iface}"))
    return out


def _traits_vs_anchor(ctx: Context) -> list[Finding]:
    out = ctx.output("system-traits")
    if out is None or ctx.snap.anchor is None or not ctx.wants("system-traits"):
        return []
    overridden = overridden_names(out)
    t = out.payload
    found: list[Finding] = []
    for inv in ctx.snap.anchor.invariants:
        if not resolved(inv) or mentions_invariant(overridden, inv.property):
            continue
        kind, problem = invariant_kind(inv), ""
        if kind == "access" and access_closed(inv) and t.auth.value == "open_registration":
            problem = "auth is open_registration although access is closed"
        elif kind == "interaction":
            sync = interaction_sync(inv)
            if sync is True and not t.realtime.value:
                problem = "realtime is false although the interaction is synchronous"
            elif sync is False and t.realtime.value:
                problem = "realtime is true although the interaction is asynchronous"
        elif (
            kind == "medium"
            and AV_VALUE.search(normalize(inv.value))
            and t.communication.value not in ("video", "audio")
        ):
            problem = (
                f"communication is {t.communication.value} although sessions happen by video/audio"
            )
        if problem:
            found.append(
                finding(
                    NAME,
                    "system-traits",
                    f"system-traits contradicts the anchor: {problem} ({inv.property} = "
                    f"{inv.value!r}) and does not override it",
                    invariant=inv.property,
                    evidence=short(
                        f"anchor: {inv.value} | traits: {t.auth.value}, realtime="
                        f"{t.realtime.value}, communication={t.communication.value}"
                    ),
                )
            )
    return found


def _items(ctx: Context) -> list[tuple[str, str, list[str], str]]:
    """(stage, label, requires, text) for every build-buy item, decision and story."""
    rows: list[tuple[str, str, list[str], str]] = []
    bb = ctx.payload("build-buy-analysis")
    if bb is not None and ctx.wants("build-buy-analysis"):
        for i in bb.items:
            rows.append(
                (
                    "build-buy-analysis",
                    f"need {i.need!r} ({i.recommendation} {i.service})",
                    i.requires,
                    ". ".join([i.need, i.service, i.rationale]),
                )
            )
    ad = ctx.payload("architecture-decisions")
    if ad is not None and ctx.wants("architecture-decisions"):
        for d in ad.decisions:
            rows.append(
                (
                    "architecture-decisions",
                    f"{d.id} {d.title!r}",
                    d.requires,
                    ". ".join([d.title, d.decision, d.rationale, *d.technologies]),
                )
            )
    sg = ctx.payload("story-generation")
    if sg is not None and ctx.wants("story-generation"):
        for s in sg.stories:
            rows.append(
                (
                    "story-generation",
                    f"{s.id} {s.title!r}",
                    s.requires,
                    ". ".join([s.title, s.description, *s.acceptance_criteria, *s.technologies]),
                )
            )
    return rows


def _violation(c: Constraint, requires: list[str], text: str) -> str:
    """Evidence of ``c`` being violated by an item, or ''."""
    tags = [t for t in requires if _tag(t) == c.key]
    if not c.allowed:
        if tags:
            return f"requires {tags}"
        pattern = _TEXT.get(c.key)
        if pattern is None:
            return ""
        hits = affirmed_matches(text, pattern)
        if c.key == "open_registration":
            hits = [h for h in hits if not _INVITED.search(h)]
        return f'text: "{short(hits[0], 120)}"' if hits else ""
    if c.key == "realtime":
        denied = _REALTIME_DENIED.search(normalize(text))
        if denied:
            return f'text: "{denied.group(0)}"'
    return ""


def check(ctx: Context) -> list[Finding]:
    found = _traits_vs_anchor(ctx)
    constraints = derive_constraints(ctx)
    if not constraints:
        return found
    for stage, label, requires, text in _items(ctx):
        seen: set[tuple[str, bool]] = set()
        for c in constraints:
            if (c.key, c.allowed) in seen:
                continue
            evidence = _violation(c, requires, text)
            if not evidence:
                continue
            seen.add((c.key, c.allowed))
            verb = "relies on" if not c.allowed else "rules out"
            found.append(
                finding(
                    NAME,
                    stage,
                    f"{label} {verb} {c.key.replace('_', ' ')}, contradicting {c.source}",
                    invariant=c.invariant,
                    evidence=evidence,
                )
            )
    return found
