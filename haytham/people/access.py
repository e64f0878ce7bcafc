"""Who may see and decide what: the caller of every service method (:class:`Actor`) and the
operator's access policy (:class:`AccessPolicy`, a TOML file read again whenever it changes, so
roles change without a restart).

Roles:

- **founder**: starts sessions; sees and acts on their own (the session's ``owner``);
- **reviewer**: sees and decides the sessions of the founders assigned to them (cohorts);
- **admin**: everything, including the decision record (``haytham audit``).

An entry of a role or cohort list is an e-mail address (any case), ``group:NAME`` (a group of
the identity provider's groups claim) or ``*`` (anyone signed in). Options: ``four_eyes`` (a
founder may not approve, reject or override at their own gates) and ``anchor_editors`` (the
roles that may clarify or edit the concept anchor).

Single-machine mode has no sign-in: the local user (:func:`local_actor`) owns everything, like
an admin. Team workers act as :data:`SYSTEM`, on behalf of whoever queued the run.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import threading
import tomllib
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haytham.errors import AccessDenied, ConfigError

Role = Literal["founder", "reviewer", "admin"]
ROLES: tuple[Role, ...] = ("founder", "reviewer", "admin")
ActorKind = Literal["person", "local", "system", "anonymous"]


class Action(StrEnum):
    """What a service method does to a session, as the policy decides it."""

    CREATE = "create"  # start or import a session
    READ = "read"  # list, status, show, export, history
    RUN = "run"  # run, resume, intake answers
    DECIDE = "decide"  # rework at a gate
    APPROVE = "approve"  # approve, reject, override (four-eyes applies to the owner)
    EDIT_ANCHOR = "edit_anchor"  # clarify or edit the concept anchor
    CHANGE = "change"  # change requests, clear-from, fork
    DELETE = "delete"
    ADMIN = "admin"  # migrations, the decision record

    @property
    def words(self) -> str:
        """The action as a person reads it in a refusal."""
        return _WORDS[self]


_WORDS = {
    Action.CREATE: "start sessions",
    Action.READ: "open",
    Action.RUN: "run",
    Action.DECIDE: "decide at the gates of",
    Action.APPROVE: "approve, reject or override at the gates of",
    Action.EDIT_ANCHOR: "edit the concept anchor of",
    Action.CHANGE: "change",
    Action.DELETE: "delete",
    Action.ADMIN: "use the administrator's commands",
}

GATE_ACTIONS: dict[str, Action] = {
    "approve": Action.APPROVE,
    "reject": Action.APPROVE,
    "override": Action.APPROVE,
    "rework": Action.DECIDE,
    "clarify": Action.EDIT_ANCHOR,
    "clarify_all": Action.EDIT_ANCHOR,
    "edit": Action.EDIT_ANCHOR,
    "remove_non_goal": Action.EDIT_ANCHOR,
}
"""The action each gate command is (see :data:`haytham.pipeline.gates.COMMANDS`)."""


@dataclass(frozen=True)
class Actor:
    """Who calls: ``id`` is the e-mail address (lower case) or, without one, the name; it is
    what a session's ``owner`` and the decision record hold."""

    id: str
    name: str
    groups: frozenset[str] = frozenset()
    kind: ActorKind = "person"
    on_behalf_of: str | None = None  # SYSTEM running a job someone queued
    instance: str = field(default_factory=lambda: f"{os.uname().nodename}:{os.getpid()}")

    @property
    def label(self) -> str:
        """How pages and records name the actor: ``Name <email>``, or the one that is known."""
        if self.kind == "system":
            return f"system (queued by {self.on_behalf_of})" if self.on_behalf_of else "system"
        return f"{self.name} <{self.id}>" if "@" in self.id and self.name != self.id else self.id

    def behalf(self, user: str | None) -> Actor:
        """This (system) actor working for ``user``."""
        return replace(self, on_behalf_of=user)


SYSTEM = Actor(id="system", name="system", kind="system")
ANONYMOUS = Actor(id="anonymous", name="nobody signed in", kind="anonymous")


def local_actor() -> Actor:
    """The single-machine user (their login name): owns every session, like an admin."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        name = "local user"
    return Actor(id=name, name=name, kind="local")


def person(email_or_name: str, name: str | None = None, groups: object = ()) -> Actor:
    """A signed-in person (``email_or_name`` is stored in lower case when it is an e-mail)."""
    ident = email_or_name.strip()
    ident = ident.lower() if "@" in ident else ident
    if not ident:
        raise AccessDenied("Sign in first: the identity provider sent no e-mail or name.")
    found = groups if isinstance(groups, list | tuple | set | frozenset) else ()
    return Actor(id=ident, name=(name or ident).strip(), groups=frozenset(map(str, found)))


class Cohort(BaseModel):
    """Founders and the reviewers who decide their sessions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    founders: list[str] = Field(default_factory=list)
    reviewers: list[str] = Field(default_factory=list)


class AccessPolicy(BaseModel):
    """The operator's access file (TOML); see ``docs/deploy.md``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    admins: list[str] = Field(default_factory=list)
    reviewers: list[str] = Field(default_factory=list)
    founders: list[str] = Field(default_factory=lambda: ["*"])
    cohorts: dict[str, Cohort] = Field(default_factory=dict)
    four_eyes: bool = False
    anchor_editors: list[Role] = Field(default_factory=lambda: list(ROLES))
    groups_claim: str = "groups"
    trusted_network: bool = False  # the CLI may name its user without a token
    tokens: dict[str, str] = Field(default_factory=dict)  # sha256 of a CLI token -> user

    @staticmethod
    def _matches(entries: list[str], actor: Actor) -> bool:
        for entry in entries:
            e = entry.strip()
            if e == "*" or e.lower() == actor.id.lower():
                return True
            if e.startswith("group:") and e[6:] in actor.groups:
                return True
        return False

    def roles(self, actor: Actor) -> frozenset[Role]:
        """The roles ``actor`` holds now (a cohort's founders and reviewers hold those roles)."""
        if actor.kind in ("local", "system"):
            return frozenset({"founder", "reviewer", "admin"})
        if actor.kind == "anonymous":
            return frozenset()
        held: set[Role] = set()
        if self._matches(self.admins, actor):
            held.add("admin")
        in_cohorts = list(self.cohorts.values())
        if self._matches(self.reviewers, actor) or any(
            self._matches(c.reviewers, actor) for c in in_cohorts
        ):
            held.add("reviewer")
        if self._matches(self.founders, actor) or any(
            self._matches(c.founders, actor) for c in in_cohorts
        ):
            held.add("founder")
        return frozenset(held)

    def reviews(self, actor: Actor, owner: str | None) -> bool:
        """Whether ``actor`` is a reviewer assigned to the founder ``owner``."""
        if owner is None:
            return False
        founder = Actor(id=owner, name=owner)
        return any(
            self._matches(c.reviewers, actor) and self._matches(c.founders, founder)
            for c in self.cohorts.values()
        )

    def reviewers_of(self, owner: str | None) -> list[str]:
        """The e-mail addresses of the reviewers assigned to ``owner`` (for notifications)."""
        if owner is None:
            return []
        founder = Actor(id=owner, name=owner)
        found = {
            r.lower()
            for c in self.cohorts.values()
            if self._matches(c.founders, founder)
            for r in c.reviewers
            if "@" in r
        }
        return sorted(found)

    def user_for_token(self, token: str) -> str | None:
        """The user a CLI token was issued to (the file holds its SHA-256, never the token)."""
        return self.tokens.get(hashlib.sha256(token.encode()).hexdigest())

    def refusal(self, actor: Actor, action: Action, owner: str | None) -> str | None:
        """``None`` if ``actor`` may do ``action`` to a session of ``owner`` (``None`` for no
        session), else the one sentence that says why not."""
        roles = self.roles(actor)
        if "admin" in roles:
            return None
        who = "Nobody is signed in" if actor.kind == "anonymous" else f"{actor.label}"
        if action is Action.CREATE:
            return None if "founder" in roles else f"{who} may not start sessions here."
        if action is Action.ADMIN:
            return f"{who} may not use the administrator's commands (admins only)."
        mine = owner is not None and owner.lower() == actor.id.lower()
        if mine and action is Action.APPROVE and self.four_eyes:
            return (
                f"{who} may not approve, reject or override at the gates of their own session: "
                "an independent reviewer decides here (four-eyes rule)."
            )
        if mine and action is Action.EDIT_ANCHOR and "founder" not in self.anchor_editors:
            return f"{who} may not edit the concept anchor here; a reviewer does."
        if mine:
            return None
        if self.reviews(actor, owner):
            if action is Action.DELETE:
                return f"{who} may not delete a founder's session (its founder or an admin may)."
            if action is Action.EDIT_ANCHOR and "reviewer" not in self.anchor_editors:
                return f"{who} may not edit the concept anchor here; its founder does."
            return None
        return f"{who} may not {action.words} this session: it is not one of theirs."


def load_policy(path: Path) -> AccessPolicy:
    """The policy in the TOML file at ``path`` (one sentence naming it when it can't be used)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return AccessPolicy.model_validate(data)
    except OSError as exc:
        raise ConfigError(
            f"The access file {path} cannot be read ({exc.strerror or exc}); check "
            "HAYTHAM_ACCESS_FILE."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The access file {path} is not valid TOML: {exc}.") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise ConfigError(
            f"The access file {path} is not usable: {where}: {first['msg']}."
        ) from None


class PolicySource:
    """The policy as it is now: the file is read again when it changes (its modification time
    and size), so an operator edits roles and assignments without a restart. Without a file,
    nobody else may do anything, unless the network is declared trusted (then everyone may)."""

    def __init__(self, path: Path | None, *, trusted_network: bool = False) -> None:
        self.path = path
        self.trusted_network = trusted_network
        self._guard = threading.Lock()
        self._seen: tuple[int, ...] | None = None
        # without a file: nobody but the local user and the system on an untrusted network;
        # everyone, their names recorded, on a network the operator declared trusted
        self._policy = (
            AccessPolicy(admins=["*"], trusted_network=True) if trusted_network else AccessPolicy()
        )

    def current(self) -> AccessPolicy:
        """The policy, re-read if the file changed since the last call."""
        if self.path is None:
            return self._policy
        try:
            st = self.path.stat()
        except OSError:
            raise ConfigError(
                f"The access file {self.path} is missing; check HAYTHAM_ACCESS_FILE."
            ) from None
        stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)  # edited or replaced
        with self._guard:
            if stamp != self._seen:
                found = load_policy(self.path)
                if self.trusted_network and not found.trusted_network:
                    found = found.model_copy(update={"trusted_network": True})
                self._policy = found
                self._seen = stamp
            return self._policy


def cli_actor(policy: AccessPolicy, *, token: str | None, user: str | None, team: bool) -> Actor:
    """Who a CLI command acts as: the local user on one machine; in team mode the user the
    operator issued ``token`` to (``HAYTHAM_TOKEN``), or the named ``user`` (``HAYTHAM_USER``)
    where the access file declares the network trusted."""
    if not team:
        return local_actor()
    if token:
        found = policy.user_for_token(token)
        if found is None:
            raise AccessDenied("HAYTHAM_TOKEN is not a token the operator issued; ask them.")
        return person(found)
    if user and policy.trusted_network:
        return person(user)
    raise AccessDenied(
        "In team mode the CLI acts as a named user: set HAYTHAM_TOKEN to the token your "
        "operator issued you (see docs/deploy.md)."
    )


def default_actor(settings: Any, policy: PolicySource) -> Actor:
    """Who a service acts as unless told otherwise: the local user on one machine; in team mode
    the CLI's user (:func:`cli_actor`), else nobody (every call refused until the app binds
    the signed-in person with :meth:`haytham.runs.service.Haytham.acting_as`)."""
    if not settings.secret("database_url"):
        return local_actor()
    current = policy.current()
    user = settings.user or (local_actor().id if current.trusted_network else None)
    try:
        return cli_actor(current, token=settings.secret("token"), user=user, team=True)
    except AccessDenied:
        return ANONYMOUS
