"""Which store a process uses: the sessions folder, or PostgreSQL when a database URL is set.

Kept apart from :mod:`haytham.storage.protocol` so the protocol never imports its backends.
"""

from __future__ import annotations

from typing import Any

from haytham.errors import ConfigError
from haytham.storage.protocol import Store


def open_store(settings: Any) -> Store:
    """The sessions folder, or the shared PostgreSQL store when ``HAYTHAM_DATABASE_URL`` is set
    (:mod:`haytham.storage.postgres`; both offer the same methods)."""
    url = settings.secret("database_url")
    if url:
        try:
            from haytham.storage.postgres import PgStore  # psycopg only where a database is used
        except ImportError as exc:
            raise team_packages_missing(exc) from None
        return PgStore(url)
    from haytham.storage.folder import SessionStore

    return SessionStore(settings.sessions_dir)


def team_packages_missing(exc: ImportError) -> ConfigError:
    """The one sentence for ``HAYTHAM_DATABASE_URL`` without the team deployment's packages."""
    return ConfigError(
        f"HAYTHAM_DATABASE_URL is set, but the team deployment's package {exc.name or '?'} is "
        "not installed: pip install -e '.[team]' (or `make setup`), see docs/deploy.md."
    )
