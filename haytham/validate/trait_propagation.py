"""Trait propagation (ADR-022 2b): downstream HOW/STORIES choices respect the traits, by value.

Constraints come from two typed sources: anchor invariants that pin a trait
(``trait = "auth=invite_only"`` with polarity ``requires``/``forbids``) and system-traits'
values, both in the vocabulary of :mod:`haytham.schemas.traits`. They are checked:

* system-traits against every pinned invariant (unless it overrides the invariant) — an enum
  comparison;
* build-buy items by their ``deployment`` and ``needs_network`` (a hosted or network-needing
  component under an air-gapped deployment, a hosted one where the anchor forbids hosting) and,
  like decisions and stories, by their structured ``requires`` tags (realtime, open
  registration, payments, scheduling, a communication channel or interface the traits rule out);
* then by the item's text for the three traits with an unambiguous technical vocabulary
  (realtime, open registration, payments), with negation handling ("real-time is not needed"
  does not fire).

Catches: a traits stage that contradicts the anchor; a hosted SaaS bought for an air-gapped
tool; ``realtime: false`` next to a service chosen for realtime subscriptions; open sign-up under
invite-only access; payments where there are none.

Cannot catch: a choice that relies on a trait without tagging or naming it (e.g. "Supabase"
alone), or an invariant that fixes a trait but was not pinned to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from haytham.schemas.anchor import Invariant
from haytham.schemas.traits import satisfies, value_words
from haytham.stages import (
    architecture_decisions,
    build_buy_analysis,
    story_generation,
    system_traits,
)
from haytham.validate.common import Context, anchor_invariants, finding, override_for, resolved
from haytham.validate.lexicon import key_terms
from haytham.validate.model import TRAIT_PROPAGATION, Finding
from haytham.validate.negation import affirmed_matches
from haytham.validate.text import normalize, sentences, short, snake, term_set

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
    "sso": ("sso", "single_sign_on", "oauth", "oidc", "saml", "identity_provider", "idp"),
    "hosted": ("hosted", "cloud", "cloud_storage", "cloud_sync", "saas", "managed_service"),
}
_TAG_OF = MappingProxyType({alias: key for key, aliases in _TAGS.items() for alias in aliases})
_COMM_TAGS = ("email", "push", "sms", "video", "audio", "chat")
_OUTSIDE_TAGS = (*_COMM_TAGS, "payments", "sso")
"""What a bought service can be that is hosted by its nature and called from outside: a
channel, a payment processor, the organisation's own identity provider (single sign-on)."""
_INTERFACE_TAGS = ("web", "mobile", "cli", "desktop")

_OPEN_REGISTRATION = re.compile(
    r"\b(?:open registration|selfregistration|public (?:signup|registration)|"
    r"anyone can (?:signup|register|join|create an account|enrol|enroll)|"
    r"(?:users?|visitors?|people|anyone|customers?) (?:can |may |will )?(?:signup|register|"
    r"enrol|enroll)\b|any [a-z]+ (?:can|may) (?:signup|register|enrol|enroll|"
    r"create an account)\b|self[ -]?(?:enrol|enroll)(?:ment|s)?\b|"
    r"anyone (?:(?!could |would |might )[a-z']+ ){0,6}(?:can |may )?(?:join|signup|register|"
    r"enrol|enroll)s?\b|"
    r"(?:visitors?|strangers?|the public|passers-?by) (?:can |may |will )?(?:join|signup|"
    r"register)\b|(?:check|sign|register|enrol|enroll) themselves (?:in|up)\b|"
    r"(?:any [a-z]+|anyone|guests?|visitors?|newcomers?|strangers?) (?:[a-z']+ ){0,3}(?:can |may "
    r"|will )?(?:create|set up|open)s? (?:a|an|their|his|her) (?:own )?(?:[a-z]+ )?"
    r"(?:account|profile)\b|(?:public |online |landing page )?join (?:form|page)\b|"
    r"signup (?:form|page|flow|with email)|create (?:an|their|your) (?:own )?account|"
    r"(?:anyone|everyone|whoever) (?:[a-z']+ ){0,10}(?:becomes?|is made|is added as) an? "
    r"(?:member|user)\b|(?:becomes?|is made|is added as) an? (?:member|user) (?:at once|"
    r"straight away|right away|immediately|automatically|instantly)\b|"
    r"(?:email|password|social|google|oauth)(?: and | ?/ ?| )(?:password )?"
    r"(?:signup|registration))"
)

_TEXT: dict[str, re.Pattern[str]] = {
    "realtime": re.compile(
        r"\b(?:realtime|websocket|socket\.io|live (?:updates?|sync|feed|presence|cursors?)|"
        r"presence (?:indicators?|channel)|push updates?|pub ?/ ?sub|server sent events|"
        r"instant(?:ly)? (?:sync|updates?))\b"
    ),
    "open_registration": _OPEN_REGISTRATION,
    "signup": _OPEN_REGISTRATION,
    "unvetted": re.compile(
        r"\b(?:no|without|with no|needs? no|skips? the|skipping the) "
        r"(?:(?!before |until |after |for |of |to |from |by )[a-z-]+ ){0,2}"
        r"(?:approval|vetting|eligibility checks?)\b"
    ),
    "accounts": re.compile(
        r"\b(?:passwords?|usernames?|user names?|(?:user|member|customer|portal|personal|web) "
        r"(?:accounts?|logins?|profiles?)|(?:creates?|set(?:s|ting)? up|opens?|registers?|makes?) "
        r"(?:an? |their |your |his |her |its )?(?:own )?(?:[a-z]+ )?(?:accounts?|logins?)|"
        r"(?:logs?|signs?) in (?:with|using|to (?:the|their|your|an?) (?:[a-z]+ )?account))\b"
    ),
    "payments": re.compile(
        r"\b(?:payments?|billing|checkout|stripe|paddle|braintree|invoic(?:e|es|ing)|"
        r"credit cards?|paywall|pricing tiers?|subscription (?:plans?|tiers?|billing|fees?))\b"
    ),
    "hosted": re.compile(
        r"\b(?:cloud(?:[ -]based| hosted| hosting| sync)|cloud (?:[a-z]+ )?(?:apis?|services?|"
        r"platforms?|storage|databases?|backends?)|saas|hosted (?:service|dashboard|platform|api|"
        r"version|app|backend)|"
        r"managed (?:service|api|cloud|database)|google drive|dropbox|onedrive|icloud|"
        r"(?:to|in|into|from|on|onto|via) (?:the cloud|(?:an? |the )?(?:aws|amazon s3|s3 buckets?|"
        r"google cloud|azure|firebase|firestore|supabase|heroku|vercel|netlify)))\b"
    ),
    "network": re.compile(
        r"\b(?:over the (?:network|internet)|internet (?:connection|access)|"
        r"network (?:calls?|requests?|access|connection)|online (?:api|service|lookup|sync)|"
        r"(?:external|third[ -]party|remote|online|web) (?:apis?|services?) (?:calls?|lookups?)|"
        r"calls? (?:an? |the )?(?:external|third[ -]party|remote|online|web) (?:apis?|services?)|"
        r"syncs? (?:to|with) the cloud|(?:os |system |android |ios |[a-z]+'s )?share "
        r"(?:sheet|menu)|"
        r"(?:from|via|using|calls?|queries|query) (?:the |an? )?(?:[a-z]+ ){0,3}(?:web )?api\b)\b"
    ),
    "mobile": re.compile(
        r"\b(?:(?:mobile|smartphone|ios|android)(?: ?(?:/|and|or) ?(?:ios|android))?"
        r"(?: [a-z]+)? apps?|app store|play store|native app)\b"
    ),
}
_KEY_WORDS = MappingProxyType(
    {
        "network": "a network connection",
        "hosted": "a hosted (vendor/cloud) deployment",
        "deploy_on_prem": "an on-prem deployment",
        "deploy_device": "an on-device deployment",
        "accounts": "user accounts or passwords",
        "signup": "open registration",
        "unvetted": "a way in that nobody approves",
    }
)
_SIGNS_UP = re.compile(r"\b(?:signup|sign up|signs up|regist|selfregist|account|profile)")
"""Under ``auth=none`` open *use* is the pin; only signing up for something (an account, a
registration) breaks it."""
_INVITED = re.compile(
    r"\b(?:invite|invited|invitation|inviteonly|allow ?list|whitelist|approved|approval|"
    r"pre-?registered|admin creates?|code)\b"
)
_EVENT_SIGNUP = re.compile(
    r"\b(?:signup|signed up|signs up|signing up|sign up) for (?:that|this|the|a|an|each|every|"
    r"next|their|his|her|our|tonight's|today's) (?!(?:[a-z]+ )?(?:account|membership|access|app|"
    r"service|platform|site|website|newsletter|group)s?\b)[a-z]+"
)
"""Putting one's name down for a night, a slot or a walk: a sign-up sheet, not registration."""
_REALTIME_DENIED = re.compile(
    r"\b(?:no|without) (?:need for )?realtime\b|\brealtime (?:is |are )?(?:not|un)(?:needed|"
    r"necessary|required)\b|\bpolling instead of\b|\basync(?:hronous)?(?: only)? instead of\b"
)
_ASYNC = re.compile(r"\b(?:asynchronous(?:ly)?|async|at (?:their|your|his|her|its) own pace)\b")


@dataclass(frozen=True)
class Constraint:
    """What a pinned invariant or a system trait demands of components, decisions and stories."""

    key: str  # a tag key, or "network" / "hosted" for a component's deployment
    allowed: bool  # False: downstream must not rely on it; True: it is required
    source: str
    invariant: Invariant | None = None


def _tag(tag: str) -> str | None:
    norm = snake(tag)
    if norm in _TAG_OF:
        return _TAG_OF[norm]
    return "realtime" if "realtime" in norm or "real_time" in norm else None


def _implied(trait: str, value: str, polarity: str) -> list[tuple[str, bool]]:
    """(key, allowed) pairs that ``trait`` being (``requires``) or not being (``forbids``)
    ``value`` imposes on the components, decisions and stories."""
    if polarity == "forbids":
        if trait == "realtime":
            return [("realtime", value != "true")]
        if trait == "auth" and value == "open_registration":
            return [("open_registration", False)]
        if trait == "communication" and value in _COMM_TAGS:
            return [(value, False)]
        if trait == "interface" and value in _INTERFACE_TAGS:
            return [(value, False)]
        if trait == "deployment" and value in ("hosted", "on_prem", "device"):
            return [(value if value == "hosted" else f"deploy_{value}", False)]
        return []
    if trait == "realtime":
        return [("realtime", value == "true")]
    if trait == "auth" and value == "none":  # no accounts at all: a login of any kind breaks it
        # but anyone may use it: "anyone who joins the hall's Wi-Fi" is the pin, not a breach
        return [("signup", False), ("accounts", False)]
    # someone decides who joins: a way in that nobody decides breaks it
    if trait == "auth" and value == "approval":
        return [("open_registration", False), ("unvetted", False)]
    if trait == "auth" and value != "open_registration":
        return [("open_registration", False)]
    if trait in ("payments", "scheduling") and value == "none":
        return [(trait, False)]
    if trait == "payments" and value == "barter":  # goods or help change hands, never money
        return [("payments", False)]
    if trait == "communication" and value == "none":
        return [(tag, False) for tag in _COMM_TAGS]
    if trait == "interface":
        allowed = {"web", "mobile"} if value == "web_and_mobile" else {value}
        if value in ("cli", "api"):
            allowed |= {"cli"}
        return [(tag, False) for tag in _INTERFACE_TAGS if tag not in allowed]
    if trait == "deployment" and value == "air_gapped":
        return [("network", False), ("hosted", False)]
    if trait == "deployment" and value == "on_prem":
        return [("hosted", False)]
    return []


def pinned_contradiction(inv: Invariant, text: str) -> str:
    """Evidence that ``text`` affirmatively describes what ``inv``'s pinned trait rules out
    (realtime or asynchronous work, open registration, payments, a hosted or networked
    component, a mobile app; read with negation handling), or ''."""
    ref = inv.trait_ref
    if ref is None or not resolved(inv):
        return ""
    for key, allowed in _implied(*ref, inv.polarity):
        if key in _TEXT or (key == "realtime" and allowed):
            evidence = _violation(Constraint(key, allowed, "", inv), _Row("", "", "", [], text))
            if evidence:
                return f"{_KEY_WORDS.get(key, key.replace('_', ' '))}: {evidence}"
    return ""


def declared_contradiction(family: str, value: str, text: str) -> str:
    """Evidence that ``text`` describes what an item's own declared ``assumes`` value
    (``auth=invite_only``) rules out — open sign-up, payments, realtime, a network call — or ''."""
    for key, allowed in _implied(family, value, "requires"):
        if key in _TEXT and not allowed:
            evidence = _violation(Constraint(key, allowed, ""), _Row("", "", "", [], text))
            if evidence:
                return f"{_KEY_WORDS.get(key, key.replace('_', ' '))}: {evidence}"
    return ""


_DAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_RHYTHM: MappingProxyType[str, re.Pattern[str]] = MappingProxyType(
    {
        "daily": re.compile(r"\b(?:daily|every day|each day|once a day|nightly|every night)\b"),
        "weekly": re.compile(
            rf"\b(?:weekly|every week|each week|once a week|every {_DAYS}|{_DAYS}s)\b"
        ),
        "monthly": re.compile(r"\b(?:monthly|every month|each month|once a month)\b"),
    }
)
"""How prose states a rhythm (the cadence family's values that are rhythms)."""
_DOCUMENT_RHYTHM = re.compile(
    r"\b(?:daily|weekly|monthly|nightly|yearly|annual)\s+(?:[a-z]+\s+)?(?:reports?|summar(?:y|ies)|"
    r"digests?|exports?|pdfs?|newsletters?|statements?|backups?|printouts?|round-?ups?)\b"
)
"""A rhythm that dates a document made from the records ("a monthly inspection PDF" of daily
readings), not the rhythm of the activity the invariant pins."""
_FIXED_SCHEDULE = re.compile(
    rf"\b(?:daily|weekly|monthly|fortnightly|nightly|every (?:other |second )?(?:day|night|week|"
    rf"fortnight|month|{_DAYS})|once a (?:day|week|month)|{_DAYS}s\b|"
    rf"fixed (?:dates?|days?|schedule|times?|calendar|rota)|set dates|"
    rf"(?:published|planned|scheduled|fixed) (?:for the (?:whole )?(?:season|year|term)|in advance)|"
    rf"on (?:the )?(?:first|second|third|fourth|last|new[ -]moon|full[ -]moon) {_DAYS}s?)\b"
)
"""A schedule fixed ahead: what ``cadence=on_demand`` ("whenever …, no set times") rules out."""
_CHANNEL: MappingProxyType[str, re.Pattern[str]] = MappingProxyType(
    {
        "sms": re.compile(
            r"\b(?:sms|text messages?|texted|texting|by text|via text|a text|texts? (?:back|them|him|"
            r"her|their|the|a|an|yes|no)\b)"
        ),
        "email": re.compile(r"\b(?:e-?mails?|e-?mailed|inbox)\b"),
        "audio": re.compile(
            r"\b(?:phone calls?|voice calls?|automated calls?|voice messages?|rings? (?:them|the|each|"
            r"him|her)|keypress|press(?:es)? [0-9])\b"
        ),
        "video": re.compile(r"\b(?:video calls?|video chats?|video meetings?)\b"),
        "push": re.compile(r"\bpush notifications?\b"),
        "chat": re.compile(
            r"\b(?:chat groups?|group chats?|whatsapp|telegram|signal group|messenger|slack|discord)\b"
        ),
    }
)
"""How prose names a communication channel (the family's values that are channels)."""
_SPLIT_PAYMENT = re.compile(
    r"\b(?:deposits?|instal?lments?|balance (?:due|payment|of)|part[- ]payments?|"
    r"subscriptions?|recurring (?:payments?|fees?|charges?)|monthly (?:fees?|payments?|plans?)|"
    r"gratuit(?:y|ies)|optional tips?|add(?:s|ing)? a tip|tip jar)\b"
)
"""Money in more than one payment: what ``payments=one_time`` (once, in full) rules out."""


def _states_cadence(value: str, text: str) -> bool:
    """Whether ``text`` affirms the rhythm ``value`` itself ("daily", "whenever", "any time")."""
    if value in _RHYTHM and affirmed_matches(text, _RHYTHM[value]):
        return True
    phrases = "|".join(re.escape(p) for p in sorted(value_words("cadence", value)))
    return bool(phrases) and bool(affirmed_matches(text, re.compile(rf"\b(?:{phrases})\b")))


def carried_contradiction(inv: Invariant, text: str) -> str:
    """Evidence that the text of an item *claiming to carry* ``inv`` states another value of
    its pinned rhythm, channel or way of paying (read with negation handling), or ''. Unlike
    :func:`pinned_contradiction` this binds carriers only: a monthly allocation in one item
    says nothing against swaps made "whenever", unless the item claims to carry that rule."""
    ref = inv.trait_ref
    if ref is None or not resolved(inv) or inv.polarity != "requires":
        return ""
    family, value = ref
    if family == "cadence" and _states_cadence(value, text):
        return ""  # "Daily plan …; legs claimed weekly": the pinned rhythm is there too
    if family == "cadence" and value == "on_demand":
        hits = affirmed_matches(text, _FIXED_SCHEDULE)
        return f'a fixed schedule: text: "{short(hits[0], 120)}"' if hits else ""
    if family == "cadence" and value in _RHYTHM:
        for other, pattern in _RHYTHM.items():
            if other == value:
                continue
            hits = [h for h in affirmed_matches(text, pattern) if not _DOCUMENT_RHYTHM.search(h)]
            if hits:
                return f'a {other} rhythm: text: "{short(hits[0], 120)}"'
        return ""
    if family == "communication" and value in _CHANNEL:
        if affirmed_matches(text, _CHANNEL[value]):
            return ""  # the pinned channel is there too: two channels for two purposes
        for other, pattern in _CHANNEL.items():
            if other != value and (hits := affirmed_matches(text, pattern)):
                return f'another channel ({other}): text: "{short(hits[0], 120)}"'
        return ""
    if family == "payments" and value == "one_time":
        hits = affirmed_matches(text, _SPLIT_PAYMENT)
        return f'more than one payment: text: "{short(hits[0], 120)}"' if hits else ""
    return ""


def derive_constraints(ctx: Context) -> list[Constraint]:
    """Constraints from the anchor's pinned invariants (resolved ones) and system-traits."""
    out: list[Constraint] = []
    for inv in anchor_invariants(ctx.snap.anchor):
        ref = inv.trait_ref
        if ref is None or not resolved(inv):
            continue
        src = f"{inv.id} {inv.property} ({inv.polarity} {ref[0]}={ref[1]})"
        out += [Constraint(k, a, src, inv) for k, a in _implied(*ref, inv.polarity)]
    traits = ctx.payload(system_traits.SPEC.slug)
    if traits is not None:
        for trait in (
            "realtime",
            "auth",
            "payments",
            "scheduling",
            "communication",
            "interface",
            "deployment",
        ):
            value = traits.value_of(trait)
            src = f"system-traits {trait} = {value}"
            out += [Constraint(k, a, src) for k, a in _implied(trait, value, "requires")]
    return out


def _traits_vs_anchor(ctx: Context) -> list[Finding]:
    out = ctx.output(system_traits.SPEC.slug)
    if out is None or ctx.snap.anchor is None or not ctx.wants(system_traits.SPEC.slug):
        return []
    found: list[Finding] = []
    for inv in ctx.snap.anchor.invariants:
        ref = inv.trait_ref
        if ref is None or not resolved(inv) or override_for(ctx, out, inv) is not None:
            continue
        trait, value = ref
        if trait not in type(out.payload).model_fields:  # e.g. cadence: not a system trait
            continue
        actual = out.payload.value_of(trait)
        if inv.polarity == "requires" and satisfies(trait, value, actual):
            continue
        if inv.polarity == "forbids" and actual != value:
            continue
        wanted = value if inv.polarity == "requires" else f"anything but {value}"
        found.append(
            finding(
                NAME,
                system_traits.SPEC.slug,
                f"system-traits sets {trait} = {actual}, but {inv.id} {inv.property} "
                f"{inv.polarity} {trait}={value} ({short(inv.value, 60)!r}) and is not overridden",
                invariant=inv,
                item=trait,
                evidence=f"expected {trait}: {wanted}",
            )
        )
    return found


@dataclass(frozen=True)
class _Row:
    stage: str
    id: str
    label: str
    requires: list[str]
    text: str
    deployment: str | None = None
    needs_network: bool | None = None
    bought_channel: bool = False  # a BUY item whose every trait tag is a channel or payments


def _chosen(rationale: str, alternatives: list[str]) -> str:
    """The rationale's sentences about what was chosen: a sentence naming a rejected
    alternative ("Atlas Device Sync is a hosted service") describes what was not."""
    names = {t for a in alternatives for t in key_terms(a) if len(t) > 3}
    return " ".join(s for s in sentences(rationale) if not names & term_set(s))


def _bought_channel(recommendation: str, requires: list[str]) -> bool:
    """Whether a build-buy item buys an outside channel the product *calls*: a ``BUY`` (not
    BUILD or HYBRID) whose trait tags are all communication channels (email, SMS, push …),
    payments or single sign-on. Such a service (a mail relay, an SMS gateway, a payment
    processor, the organisation's identity provider) is hosted by
    its nature, since the message or the money leaves for someone outside; where it runs says
    nothing about where the product itself runs, so a deployment pin (``on_prem``) does not
    forbid its hosting. Its network use is still judged (``air_gapped`` forbids the call), and
    a bought item with no tags, or with any other tag (a database, storage), is the product's
    own component and stays under the pin. Decided from the schema (``recommendation``,
    ``requires``), not from the service's name."""
    tags = [_tag(t) for t in requires]
    return recommendation == "BUY" and bool(tags) and all(t in _OUTSIDE_TAGS for t in tags)


def _items(ctx: Context) -> list[_Row]:
    """Every build-buy item, decision and story, as the checks see it."""
    rows: list[_Row] = []
    bb = ctx.payload(build_buy_analysis.SPEC.slug)
    if bb is not None and ctx.wants(build_buy_analysis.SPEC.slug):
        for i in bb.items:
            rows.append(
                _Row(
                    build_buy_analysis.SPEC.slug,
                    i.need,
                    f"need {i.need!r} ({i.recommendation} {i.service})".replace(" )", ")"),
                    i.requires,
                    ". ".join([i.need, i.service, i.rationale]),
                    i.deployment,
                    i.needs_network,
                    _bought_channel(i.recommendation, i.requires),
                )
            )
    ad = ctx.payload(architecture_decisions.SPEC.slug)
    if ad is not None and ctx.wants(architecture_decisions.SPEC.slug):
        for d in ad.decisions:
            rows.append(
                _Row(
                    architecture_decisions.SPEC.slug,
                    d.id,
                    f"{d.id} {d.title!r}",
                    d.requires,
                    ". ".join(
                        [d.title, d.decision, _chosen(d.rationale, d.alternatives), *d.technologies]
                    ),
                )
            )
    sg = ctx.payload(story_generation.SPEC.slug)
    if sg is not None and ctx.wants(story_generation.SPEC.slug):
        for s in sg.stories:
            rows.append(
                _Row(
                    story_generation.SPEC.slug,
                    s.id,
                    f"{s.id} {s.title!r}",
                    s.requires,
                    ". ".join([s.title, s.description, *s.acceptance_criteria, *s.technologies]),
                )
            )
    return rows


def _violation(c: Constraint, row: _Row) -> str:
    """Evidence of ``c`` being violated by an item, or ''."""
    requires, text = row.requires, row.text
    if c.key == "network" and row.needs_network is not None:
        return "needs_network = true" if row.needs_network else ""
    if c.key == "hosted" and row.bought_channel:
        return ""  # an outside channel the product calls, not where the product runs
    if c.key in ("hosted", "deploy_on_prem", "deploy_device") and row.deployment is not None:
        wanted = c.key.removeprefix("deploy_")
        return f"deployment = {row.deployment}" if row.deployment == wanted else ""
    key = "open_registration" if c.key == "signup" else c.key
    tags = [t for t in requires if _tag(t) == key]
    if not c.allowed:
        if tags:
            return f"requires {tags}"
        pattern = _TEXT.get(key)
        if pattern is None:
            return ""
        hits = affirmed_matches(text, pattern)
        if key == "open_registration":
            hits = [h for h in hits if not _INVITED.search(h) and not _EVENT_SIGNUP.search(h)]
        if c.key == "signup":
            hits = [h for h in hits if _SIGNS_UP.search(h)]
        return f'text: "{short(hits[0], 120)}"' if hits else ""
    if c.key == "realtime":
        denied = _REALTIME_DENIED.search(normalize(text))
        if denied:
            return f'text: "{denied.group(0)}"'
        if c.invariant is not None:  # an anchor that pins live interaction: async wording
            hits = affirmed_matches(text, _ASYNC)
            if hits:
                return f'text: "{short(hits[0], 120)}"'
    return ""


def check(ctx: Context) -> list[Finding]:
    """Warnings for system-traits contradicting a pinned invariant, and for each item (build-buy
    component, decision, story) that breaks a constraint, one per item and source."""
    found = _traits_vs_anchor(ctx)
    constraints = derive_constraints(ctx)
    if not constraints:
        return found
    for row in _items(ctx):
        seen: set[tuple[str, bool]] = set()
        by_source: dict[str, list[tuple[Constraint, str]]] = {}
        for c in constraints:
            if (c.key, c.allowed) in seen:
                continue
            evidence = _violation(c, row)
            if evidence:
                seen.add((c.key, c.allowed))
                by_source.setdefault(c.source, []).append((c, evidence))
        for source, hits in by_source.items():  # one finding per item and source
            what = " and ".join(
                f"{'relies on' if not c.allowed else 'rules out'} "
                f"{_KEY_WORDS.get(c.key, c.key.replace('_', ' '))}"
                for c, _ in hits
            )
            found.append(
                finding(
                    NAME,
                    row.stage,
                    f"{row.label} {what}, contradicting {source}",
                    invariant=hits[0][0].invariant,
                    item=row.id,
                    evidence="; ".join(e for _, e in hits),
                )
            )
    return found
