"""Appetite and traceability (ADR-022 Part 4a): stories fit the appetite and trace to real ids.

Checks story-generation against mvp-scope, capability-model and architecture-decisions:

* more stories than :data:`~haytham.stages.story_generation.APPETITE_BOUNDS` allows for the
  appetite (the bound story-generation applied, else mvp-scope's appetite);
* stories implementing CAP/DEC ids that do not exist (or ids of neither kind);
* functional capabilities that no story implements (a second opinion only for a capability
  that carries nothing but rules stories honour rather than build: an exclusion, or where the
  product runs — "no bookings, no priority", "runs on the studio server");
* dependency cycles and dependencies on unknown stories;
* decisions serving capabilities that do not exist (subject: architecture-decisions).

Catches the Power of 8 breach (20 stories on a small appetite) and orphaned or phantom
traceability. Cannot catch: stories that are individually too big for the appetite, a story that
names the right id but implements something else, or an appetite that was wrong to begin with.
"""

from __future__ import annotations

import re

from haytham.stages import architecture_decisions, capability_model, mvp_scope, story_generation
from haytham.stages.story_generation import APPETITE_BOUNDS
from haytham.validate.common import Context, finding, is_exclusion
from haytham.validate.model import APPETITE, Finding

NAME = APPETITE
_CAP = re.compile(r"^CAP-(?:F|NF)-\d{3}$")
_DEC = re.compile(r"^DEC-[A-Z]+-\d{3}$")


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Every dependency cycle (strongly connected component with an edge back), smallest id first.

    Tarjan's algorithm, iterative; ``haytham.stages.story_generation.dependency_order`` follows
    only the first dependency of each stuck story and can miss a cycle.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, [])))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1 or node in graph.get(node, []):
                    comps.append(_cycle_path(sorted(comp), graph))
    return sorted(comps)


def _cycle_path(members: list[str], graph: dict[str, list[str]]) -> list[str]:
    """A readable cycle through a component, starting at its smallest id."""
    inside = set(members)
    path = [members[0]]
    while True:
        nxt = next((d for d in sorted(graph[path[-1]]) if d in inside), None)
        if nxt is None or nxt == path[0] or nxt in path:
            return path
        path.append(nxt)


def _appetite(ctx: Context) -> str | None:
    stories = ctx.payload(story_generation.SPEC.slug)
    if stories is not None and stories.appetite in APPETITE_BOUNDS:
        return str(stories.appetite)
    scope = ctx.payload(mvp_scope.SPEC.slug)
    return scope.appetite if scope is not None else None


def _states_a_constraint(ctx: Context, carries: list[str]) -> bool:
    """Whether a capability carries only rules that no story builds: exclusions (a ``forbids``
    invariant, a pin to a trait's ``none``) and where the product runs (``deployment=…``)."""
    anchor = ctx.snap.anchor
    invs = [anchor.resolve_ref(r) for r in carries] if anchor is not None else []
    return bool(invs) and all(
        i is not None
        and (is_exclusion(i) or (i.trait_ref is not None and i.trait_ref[0] == "deployment"))
        for i in invs
    )


def _stories(ctx: Context) -> list[Finding]:
    sg = ctx.payload(story_generation.SPEC.slug)
    if sg is None or not ctx.wants(story_generation.SPEC.slug):
        return []
    slug, found = story_generation.SPEC.slug, []
    appetite = _appetite(ctx)
    count = len(sg.stories)
    if appetite is not None and count > APPETITE_BOUNDS[appetite]:
        found.append(
            finding(
                NAME,
                slug,
                f"{count} stories exceed the bound of {APPETITE_BOUNDS[appetite]} for a "
                f"{appetite} appetite",
                evidence=f"appetite {appetite}; stories {count}",
            )
        )
    caps = ctx.payload(capability_model.SPEC.slug)
    decs = ctx.payload(architecture_decisions.SPEC.slug)
    cap_ids = caps.ids() if caps is not None else None
    dec_ids = {d.id for d in decs.decisions} if decs is not None else None
    for s in sg.stories:
        bad = []
        for ref in s.implements:
            ref = ref.strip()
            if _CAP.match(ref):
                if cap_ids is not None and ref not in cap_ids:
                    bad.append(ref)
            elif _DEC.match(ref):
                if dec_ids is not None and ref not in dec_ids:
                    bad.append(ref)
            else:
                bad.append(ref)
        if bad:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{s.id} implements ids that do not exist: {', '.join(bad)}",
                    evidence=f"{s.id} {s.title!r}",
                )
            )
    if caps is not None:
        implemented = {r.strip() for s in sg.stories for r in s.implements}
        orphans = [c for c in caps.functional if c.id not in implemented]
        rules = [c for c in orphans if _states_a_constraint(ctx, c.carries)]
        for group, info in (([c for c in orphans if c not in rules], False), (rules, True)):
            if group:
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"functional capabilities with no story: {', '.join(c.id for c in group)}"
                        + (
                            " (each carries only a rule that stories honour rather than build: "
                            "an exclusion or where the product runs)"
                            if info
                            else ""
                        ),
                        evidence="; ".join(f"{c.id} {c.name!r}" for c in group),
                        info=info,
                    )
                )
    ids = {s.id for s in sg.stories}
    for s in sg.stories:
        unknown = [d for d in s.depends_on if d not in ids]
        if unknown:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{s.id} depends on unknown stories {', '.join(unknown)}",
                    evidence=f"{s.id} {s.title!r}",
                )
            )
    for cycle in find_cycles({s.id: [d for d in s.depends_on if d in ids] for s in sg.stories}):
        found.append(
            finding(
                NAME,
                slug,
                "dependency cycle: " + " -> ".join(cycle + cycle[:1]),
                evidence=", ".join(cycle),
            )
        )
    return found


def _decisions(ctx: Context) -> list[Finding]:
    decs, caps = (
        ctx.payload(architecture_decisions.SPEC.slug),
        ctx.payload(capability_model.SPEC.slug),
    )
    if decs is None or caps is None or not ctx.wants(architecture_decisions.SPEC.slug):
        return []
    known = caps.ids()
    return [
        finding(
            NAME,
            architecture_decisions.SPEC.slug,
            f"{d.id} serves capabilities that do not exist: "
            f"{', '.join(sorted(set(d.serves) - known))}",
            evidence=f"{d.id} {d.title!r}",
        )
        for d in decs.decisions
        if set(d.serves) - known
    ]


def check(ctx: Context) -> list[Finding]:
    """Warnings on story-generation (story count, unknown ids, unimplemented capabilities,
    dependencies) and on architecture-decisions (decisions serving unknown capabilities)."""
    return _stories(ctx) + _decisions(ctx)
