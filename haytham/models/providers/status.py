"""Which model providers can be used here, and why not: checked before any stage runs.

:func:`provider_report` explains every provider of the settings' table (for ``haytham
providers``, ``haytham doctor`` and the UI); :func:`check_provider` raises one clear
:class:`~haytham.errors.ConfigError` sentence for the selected one. Checks are offline and
cheap: installed extras (found without importing them) and the presence of credentials in the
settings (read by :func:`~haytham.config.load_settings` from the environment or `.env`). Key
*values* are never put into results or messages: every reason is redacted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from haytham.errors import ConfigError
from haytham.models.providers.spec import (
    ProviderSettings,
    ProviderSpec,
    ProviderStatus,
    StatusCheck,
)
from haytham.safety.redact import redact, remember_settings


def status_of(spec: ProviderSpec, settings: ProviderSettings, check: StatusCheck) -> ProviderStatus:
    """Whether ``spec``'s provider is usable with ``settings``, in one redacted sentence."""
    usable, reason = spec.status(settings, check)
    return ProviderStatus(
        name=spec.name,
        usable=usable,
        reason=redact(reason),
        env_vars=list(spec.variables),
        install=spec.install,
    )


def provider_report(
    settings: ProviderSettings, env: Mapping[str, str] | None = None
) -> list[ProviderStatus]:
    """The status of every provider of ``settings.providers``, in the table's order.

    Credentials are those in ``settings`` (only their *presence* is checked). ``env`` (default
    ``os.environ``) is where boto's own chain looks (``HOME``, web identity); the slower checks
    (the full boto3 credential chain, loading the cassette) run only for the selected provider.
    """
    environ = os.environ if env is None else env
    remember_settings(settings)  # its credentials and key shapes, for the redacted reasons
    return [
        status_of(
            spec, settings, StatusCheck(environ, thorough=name == settings.provider and env is None)
        )
        for name, spec in settings.providers.items()
    ]


def check_provider(settings: ProviderSettings) -> None:
    """Raise :class:`ConfigError` (one sentence) if the selected provider cannot be used.

    Every model is built after this check, so it is also where the credentials in the
    settings' base URLs (possibly from ``.env`` only) become known to :func:`redact`."""
    remember_settings(settings)
    status = status_of(settings.spec, settings, StatusCheck(os.environ, thorough=True))
    if not status.usable:
        raise ConfigError(f"Provider '{settings.provider}' cannot be used: {status.reason}")
