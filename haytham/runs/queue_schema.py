"""The job queue's schema in the shared database: procrastinate's tables and Haytham's trigger.

Apart from :mod:`haytham.runs.queue` (the worker and the app instances' side of the queue), so
that ``haytham migrate`` installs it without importing what runs the jobs.
"""

from __future__ import annotations

import contextlib

import procrastinate
import psycopg
from procrastinate import exceptions as pexc

from haytham.storage.postgres import EVENTS_CHANNEL

# A job's row changing (queued, taken, finished) is announced on the events channel with its
# session's id, as appending an event is: pages that follow a session hear both.
_JOB_NOTIFY = (
    "SELECT pg_advisory_xact_lock(1212240212)",
    "CREATE OR REPLACE FUNCTION haytham_job_notify() RETURNS trigger AS $$ BEGIN "
    f"PERFORM pg_notify('{EVENTS_CHANNEL}', NEW.lock); RETURN NEW; END $$ LANGUAGE plpgsql",
    "CREATE OR REPLACE TRIGGER haytham_job_notify AFTER INSERT OR UPDATE OF status "
    "ON procrastinate_jobs FOR EACH ROW WHEN (NEW.lock IS NOT NULL) "
    "EXECUTE FUNCTION haytham_job_notify()",
)


def migrate_queue(app: procrastinate.App, url: str) -> bool:
    """Install procrastinate's schema once (``True`` when it was installed now), and the
    trigger that announces job changes on :data:`haytham.storage.postgres.EVENTS_CHANNEL`."""
    installed = False
    with app.open():
        connector = app.connector.get_sync_connector()
        found = connector.execute_query_one(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
        )
        if not found["present"]:
            with contextlib.suppress(pexc.ConnectorException):  # a concurrent install won
                app.schema_manager.apply_schema()
                installed = True
    with psycopg.connect(url) as conn:  # one transaction
        for sql in _JOB_NOTIFY:
            conn.execute(sql)
    return installed


def install_queue_schema(url: str) -> bool:
    """:func:`migrate_queue` on a connection of its own (``True`` when installed now)."""
    return migrate_queue(
        procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url)), url
    )
