"""A small, maintained thesaurus for lexical evidence: groups of words that count as the same term.

Terms are compared after :func:`haytham.validate.text.stem`. Groups cover the ADR's required
invariants (access, interaction, medium), roles and common product vocabulary; anything outside
them is matched literally (the embedding validator covers paraphrase).
"""

from __future__ import annotations

from types import MappingProxyType

from haytham.validate.text import stem, terms

_GROUPS: tuple[tuple[str, ...], ...] = (
    (
        "synchronous",
        "sync",
        "live",
        "realtime",
        "simultaneous",
        "simultaneously",
        "together",
        "concurrent",
        "gather",
        "gathering",
    ),
    ("async", "asynchronous", "asynchronously"),
    ("video", "videocall", "webrtc", "camera", "zoom", "call", "calls", "face"),
    ("audio", "voice", "call", "phone"),
    (
        "closed",
        "inviteonly",
        "invite",
        "invitation",
        "invited",
        "private",
        "existing",
        "allowlist",
        "whitelist",
        "approved",
        "vetted",
    ),
    ("patient", "client"),
    (
        "psychologist",
        "therapist",
        "clinician",
        "counselor",
        "counsellor",
        "practitioner",
        "psychotherapist",
    ),
    (
        "orchestrator",
        "facilitator",
        "host",
        "moderator",
        "organizer",
        "organiser",
        "coordinator",
        "admin",
        "administrator",
        "orchestrate",
        "facilitate",
        "moderate",
        "organize",
        "organise",
        "guide",
        "guided",
        "guides",
        "lead",
        "leads",
    ),
    ("receiver", "recipient"),
    ("wish", "intention", "blessing"),
    ("group", "circle", "cohort", "pod"),
    ("session", "gathering", "meeting"),
    ("offline", "local", "locally", "airgapped", "device", "machine", "laptop"),
    ("cli", "terminal", "command", "shell"),
    ("connectivity", "connection", "connected", "signal", "online", "offline", "reception"),
    ("neighbourhood", "neighborhood", "nearby", "local", "street", "block"),
    ("pickup", "collect", "collection"),
    ("certificate", "certification", "certified", "licence", "license", "verified", "verification"),
    ("redact", "redaction", "mask", "masking", "anonymize", "anonymise", "deidentify", "scrub"),
    ("premise", "onprem", "selfhosted", "intranet"),
    ("teacher", "instructor", "educator"),
    ("student", "pupil", "learner"),
    ("code", "pin", "passcode"),
    ("account", "login", "signin", "profile"),
    ("price", "pricing", "cost", "fee"),
)


def _build() -> MappingProxyType[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in _GROUPS:
        stems = {stem(w) for w in group}
        for s in stems:
            table.setdefault(s, set()).update(stems)
    return MappingProxyType({k: frozenset(v) for k, v in table.items()})


SYNONYMS = _build()

GENERIC = frozenset(
    stem(w)
    for w in (
        "app",
        "application",
        "platform",
        "product",
        "system",
        "service",
        "feature",
        "features",
        "tool",
        "user",
        "users",
        "people",
        "person",
        "thing",
        "things",
        "way",
        "support",
        "supported",
        "allow",
        "allows",
        "ability",
        "able",
        "need",
        "needs",
        "must",
        "should",
        "based",
        "basis",
        "model",
        "structure",
        "base",
        "role",
        "type",
        "mode",
        "constraint",
        "level",
        "policy",
        "requirement",
        "rule",
        "format",
        "kind",
        "method",
        "value",
        "property",
        "mvp",
        "v1",
        "version",
        "simple",
        "simply",
        "basic",
        "core",
        "main",
        "key",
        "focus",
        "focused",
        "specific",
        "distinctive",
        "not",
        "rather",
        "instead",
        "generic",
        "default",
        "common",
        "pattern",
        "patterns",
        "standard",
        "typical",
    )
)
"""Words too generic to count as evidence for (or against) an invariant."""

GENERIC_SUBJECTS = GENERIC | frozenset(
    stem(w)
    for w in (
        "session",
        "user",
        "data",
        "time",
        "access",
        "interaction",
        "content",
        "account",
        "timing",
        "medium",
        "channel",
        "boundary",
        "contract",
        "source",
    )
)


def expand(term: str) -> frozenset[str]:
    return SYNONYMS.get(term, frozenset({term}))


def canonical(term: str) -> str:
    """One representative per synonym group (so "closed" and "invite" count once)."""
    return min(expand(term))


def key_terms(text: str) -> list[str]:
    """Distinctive stemmed terms of ``text``: generic words removed, one per synonym group."""
    out: dict[str, str] = {}
    for t in terms(text):
        if t not in GENERIC:
            out.setdefault(canonical(t), t)
    return list(out.values())


def hits(needles: list[str], haystack: set[str]) -> list[str]:
    """The needles found in ``haystack`` directly or through a synonym (one per group)."""
    seen: set[str] = set()
    found = []
    for n in needles:
        group = canonical(n)
        if group not in seen and expand(n) & haystack:
            seen.add(group)
            found.append(n)
    return found
