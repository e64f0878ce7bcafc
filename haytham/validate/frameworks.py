"""Framework coherence (ADR-022 Part 4b): one framework stack per component.

Frameworks are matched from a maintained list with word boundaries (never substrings): in a
story's or decision's ``technologies`` list with a lenient pattern, in prose with a strict one
(common words such as "express", "click" or "rails" count only in technology lists) and with
negation / comparison cues ("chosen over Vue", "instead of Angular", "no React") removed.
Two frameworks of one kind (frontend, backend, mobile, cli) conflict when neither builds on the
other (Next.js builds on React, Nuxt on Vue, NestJS on Express, Typer on Click, Astro hosts
islands of any UI library). Stories are grouped by their ``component``; a decision belongs to its
``component`` when it names one, else to the components its text names, else to the component
with most stories of that kind. Conflicts among decisions are reported on architecture-decisions,
conflicts a story adds on story-generation.

Catches: the Power of 8 stories spread over Vite, Next.js, Vue and Astro for one web app; a
decision choosing Django while the API stories use Express. An Astro marketing site next to a
React app (two components) is fine.

Cannot catch: frameworks missing from the list, conflicts hidden behind different component
names for the same thing ("web-app" vs "frontend"), or version conflicts within one framework.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from haytham.stages import architecture_decisions, story_generation
from haytham.validate.common import Context, finding
from haytham.validate.model import FRAMEWORK_COHERENCE, Finding
from haytham.validate.negation import negated_at
from haytham.validate.text import normalize, sentences, short


@dataclass(frozen=True)
class Framework:
    """A framework the checks recognise: its kind, how to find its name, what it builds on."""

    name: str
    kind: str  # frontend | backend | mobile | cli
    pattern: str  # regex on normalized text, used in technology lists
    prose: str | None = None  # stricter regex for prose; None = same as pattern; "" = lists only
    on: frozenset[str] = frozenset()  # names of frameworks it builds on / hosts


def _fw(name: str, kind: str, pattern: str, prose: str | None = None, on: str = "") -> Framework:
    names = frozenset(n.strip() for n in on.split(",") if n.strip())
    return Framework(name, kind, pattern, prose, names)


FRAMEWORKS: tuple[Framework, ...] = (
    # frontend
    _fw("React", "frontend", r"react(?:\.?js)?(?! native)"),
    _fw("Next.js", "frontend", r"next\.?js|nextjs", on="React"),
    _fw("Remix", "frontend", r"remix(?:\.run)?", r"remix(?: run| framework|\.run)", "React, Vite"),
    _fw("Gatsby", "frontend", r"gatsby(?:\.?js)?", on="React"),
    _fw("Preact", "frontend", r"preact", on="React, Vite"),
    _fw("Vue", "frontend", r"vue(?:\.?js)?(?: ?[23])?"),
    _fw("Nuxt", "frontend", r"nuxt(?:\.?js)?", on="Vue, Vite"),
    _fw("Svelte", "frontend", r"svelte(?!kit)"),
    _fw("SvelteKit", "frontend", r"sveltekit|svelte kit", on="Svelte, Vite"),
    _fw("Angular", "frontend", r"angular(?:js)?"),
    _fw("SolidJS", "frontend", r"solid(?:\.?js|start)", on="Vite"),
    _fw(
        "Astro",
        "frontend",
        r"astro(?:\.build)?",
        on="React, Vue, Svelte, Preact, SolidJS, Vite, Lit",
    ),
    _fw("Ember", "frontend", r"ember(?:\.?js)?"),
    _fw("Qwik", "frontend", r"qwik(?:city)?"),
    _fw("Lit", "frontend", r"lit(?:\.dev|element| element)", on="Vite"),
    _fw("Alpine.js", "frontend", r"alpine\.?js"),
    _fw("htmx", "frontend", r"htmx"),
    _fw("Vite", "frontend", r"vite(?:\.?js)?", on="React, Vue, Svelte, Preact, SolidJS, Lit"),
    # backend
    _fw(
        "Express",
        "backend",
        r"(?<!sql server )express(?:\.?js)?",  # not Microsoft's "SQL Server Express"
        r"express\.?js|express (?:server|app|api|"
        r"backend|framework|middleware|router|routes?)",
    ),
    _fw("Fastify", "backend", r"fastify"),
    _fw("Koa", "backend", r"koa(?:\.?js)?"),
    _fw("Hono", "backend", r"hono"),
    _fw("NestJS", "backend", r"nest\.?js", on="Express, Fastify"),
    _fw("AdonisJS", "backend", r"adonis(?:\.?js)?"),
    _fw("Django", "backend", r"django(?: rest framework)?"),
    _fw("Flask", "backend", r"flask"),
    _fw("FastAPI", "backend", r"fastapi"),
    _fw("Rails", "backend", r"(?:ruby on )?rails", r"ruby on rails"),
    _fw("Sinatra", "backend", r"sinatra", ""),
    _fw("Laravel", "backend", r"laravel"),
    _fw("Symfony", "backend", r"symfony"),
    _fw("Spring Boot", "backend", r"spring(?: boot)?", r"spring boot"),
    _fw("ASP.NET", "backend", r"asp\.?net(?: core)?"),
    _fw("Phoenix", "backend", r"phoenix", r"phoenix (?:framework|liveview)"),
    _fw("Gin", "backend", r"gin(?:-gonic)?", r"gin-gonic|gin framework"),
    _fw("Echo", "backend", r"echo", ""),
    _fw("Fiber", "backend", r"fiber", ""),
    _fw("Actix", "backend", r"actix(?:-web)?"),
    _fw("Axum", "backend", r"axum"),
    # mobile
    _fw("React Native", "mobile", r"react native"),
    _fw("Expo", "mobile", r"expo", "", on="React Native"),
    _fw("Flutter", "mobile", r"flutter"),
    _fw("SwiftUI", "mobile", r"swiftui"),
    _fw("Jetpack Compose", "mobile", r"jetpack compose"),
    _fw("Ionic", "mobile", r"ionic", on="React, Vue, Angular"),
    _fw(".NET MAUI", "mobile", r"\.?net maui|maui", r"\.?net maui"),
    _fw("Xamarin", "mobile", r"xamarin"),
    # cli
    _fw("Click", "cli", r"click", ""),
    _fw("Typer", "cli", r"typer", on="Click"),
    _fw("argparse", "cli", r"argparse"),
    _fw("Cobra", "cli", r"cobra", r"spf13/cobra|cobra cli"),
    _fw("clap", "cli", r"clap", r"clap crate"),
    _fw("oclif", "cli", r"oclif"),
    _fw("Commander.js", "cli", r"commander(?:\.?js)?", r"commander\.?js"),
)
_LIST = tuple((f, re.compile(rf"(?<![\w.]){f.pattern}(?![\w])")) for f in FRAMEWORKS)
_PROSE = tuple(
    (f, re.compile(rf"(?<![\w.])(?:{f.pattern if f.prose is None else f.prose})(?![\w])"))
    for f in FRAMEWORKS
    if f.prose != ""
)
_SPLIT = re.compile(r"[;:()]|\b(?:but|however|whereas|while)\b")
_COMPARE = re.compile(
    r"\b(?:over|instead of|rather than|vs\.?|versus|compared (?:to|with)|unlike|"
    r"replacing|replaces|migrat\w* from|alternative to|not)\b"
)


def compatible(a: Framework, b: Framework) -> bool:
    """Whether two frameworks can share a component: the same one, or one builds on the other."""
    return a.name == b.name or a.name in b.on or b.name in a.on


def _from_list(items: list[str]) -> list[Framework]:
    out = []
    for item in items:
        norm = normalize(item)
        out += [f for f, rx in _LIST if rx.search(norm)]
    return out


def _from_prose(text: str) -> list[Framework]:
    out = []
    for sentence in sentences(text):
        for clause in _SPLIT.split(normalize(sentence)):
            for f, rx in _PROSE:
                for m in rx.finditer(clause):
                    before = clause[: m.start()]
                    if _COMPARE.search(before) or negated_at(clause, m.start(), m.end()):
                        continue
                    out.append(f)
                    break
    return out


def _key(component: str) -> str:
    return re.sub(r"[^a-z0-9]", "", component.lower())


def _conflicts(uses: dict[str, list[str]]) -> list[tuple[str, str]]:
    by_name = {f.name: f for f in FRAMEWORKS}
    names = sorted(uses)
    return [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if not compatible(by_name[a], by_name[b])
    ]


def _describe(uses: dict[str, list[str]]) -> str:
    return "; ".join(
        f"{name}: {', '.join(sorted(set(srcs)))}" for name, srcs in sorted(uses.items())
    )


def check(ctx: Context) -> list[Finding]:
    """Warnings for incompatible frameworks of one kind in one component: among decisions on
    architecture-decisions, added by stories on story-generation."""
    sg, ad = ctx.payload(story_generation.SPEC.slug), ctx.payload(architecture_decisions.SPEC.slug)
    # (component key, kind) -> framework name -> sources
    table: dict[tuple[str, str], dict[str, list[str]]] = {}
    labels: dict[str, str] = {}
    story_counts: dict[tuple[str, str], int] = {}
    if sg is not None:
        for s in sg.stories:
            key = _key(s.component)
            labels.setdefault(key, s.component)
            fws = _from_list(s.technologies) + _from_prose(
                ". ".join([s.title, s.description, *s.acceptance_criteria])
            )
            for f in fws:
                table.setdefault((key, f.kind), {}).setdefault(f.name, []).append(s.id)
            for kind in {f.kind for f in fws}:
                story_counts[(key, kind)] = story_counts.get((key, kind), 0) + 1
    if ad is not None:
        for d in ad.decisions:
            text = ". ".join([d.title, d.decision])
            fws = _from_list(d.technologies) + _from_prose(text)
            if not fws:
                continue
            flat = _key(text)
            if d.component.strip():  # the decision names its component: structure first
                named = [_key(d.component)]
                labels.setdefault(named[0], d.component)
            else:
                named = [k for k in labels if len(k) >= 3 and k in flat]
            for f in fws:
                targets = named
                if not targets:
                    ranked = sorted(
                        (n, k) for (k, kind), n in story_counts.items() if kind == f.kind
                    )
                    targets = [ranked[-1][1]] if ranked else ["(unspecified)"]
                for key in targets:
                    labels.setdefault(key, "unspecified component")
                    table.setdefault((key, f.kind), {}).setdefault(f.name, []).append(d.id)
    found: list[Finding] = []
    for (key, kind), uses in sorted(table.items()):
        decided = {n: [x for x in srcs if x.startswith("DEC-")] for n, srcs in uses.items()}
        decided = {n: srcs for n, srcs in decided.items() if srcs}
        # decisions that conflict among themselves are architecture-decisions' problem; stories
        # that add a conflicting framework are story-generation's
        for stage, table_uses in (
            (architecture_decisions.SPEC.slug, decided),
            (story_generation.SPEC.slug, uses),
        ):
            pairs = _conflicts(table_uses)
            if stage == story_generation.SPEC.slug:
                pairs = [
                    p for p in pairs if any(not x.startswith("DEC-") for n in p for x in uses[n])
                ]
            if not pairs or not ctx.wants(stage):
                continue
            names = sorted({n for pair in pairs for n in pair})
            found.append(
                finding(
                    FRAMEWORK_COHERENCE,
                    stage,
                    f"component {labels.get(key, key)!r} uses {len(names)} conflicting {kind} "
                    f"frameworks: {', '.join(names)}",
                    evidence=short(_describe(table_uses), 300),
                )
            )
    return found
