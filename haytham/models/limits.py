"""How many model calls of one provider may be in flight at once (``HAYTHAM_PROVIDER_CONCURRENCY``).

Providers rate-limit; a team deployment with several workers must stay under the limit
together. Every model call (each attempt, not the back-off between attempts) holds a slot:

- :class:`CallSlots`: one process (the app or the CLI on one machine), a semaphore;
- :class:`SharedCallSlots`: every worker on the shared database, one PostgreSQL advisory lock
  per slot (``provider``, slot number), held on a connection of the held pool for the call and
  released by the server if the worker dies mid-call.

A call waiting for a shared slot does not poll the database: it listens on
:data:`SLOTS_CHANNEL`, where every release is announced (and looks again every
:data:`WAKE_S` seconds, in case a holder died without announcing it). Within one process, at
most ``size`` calls per provider wait on the database at once; the others wait in the process.
Whoever waits is told once (``waiting``), so the UI can say why a stage makes no calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

POLL_S = 0.05  # in-process waits only (no database)
WAKE_S = 5.0  # a shared-slot waiter looks again this often without a notification
SLOTS_CHANNEL = "haytham_slots"
SLOT_WAIT_EVENT = "provider_wait"  # a stage's call waits for a slot (the event log says so)
_SLOT_CLASS = 0x534C4F54  # "SLOT": the advisory-lock namespace of provider slots


Waiting = Callable[[], None] | None


class Slots(Protocol):
    """Something that holds a provider slot around one model call."""

    def held(
        self, provider: str, waiting: Waiting = None
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold one of ``provider``'s call slots while the block runs; ``waiting`` hears once
        that the call waits."""
        ...


class CallSlots:
    """At most ``size`` calls per provider in this process."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._guard = threading.Lock()
        self._sems: dict[str, threading.BoundedSemaphore] = {}

    def _sem(self, provider: str) -> threading.BoundedSemaphore:
        with self._guard:
            return self._sems.setdefault(provider, threading.BoundedSemaphore(self.size))

    @contextlib.asynccontextmanager
    async def held(self, provider: str, waiting: Waiting = None) -> AsyncIterator[None]:
        """Hold one of ``provider``'s call slots in this process; ``waiting`` hears once that the
        call waits."""
        sem = self._sem(provider)
        told = False
        while not sem.acquire(blocking=False):
            if waiting is not None and not told:
                told = True
                waiting()
            await asyncio.sleep(POLL_S)
        try:
            yield
        finally:
            sem.release()


def slot_key(provider: str, slot: int) -> int:
    """The second advisory-lock key of ``provider``'s slot number ``slot`` (signed 32-bit)."""
    digest = hashlib.blake2b(provider.encode(), digest_size=4).digest()
    value = (int.from_bytes(digest, "big") + slot) % (1 << 32)
    return value - (1 << 32) * (value >= 1 << 31)


class SharedCallSlots:
    """At most ``size`` calls per provider across every process on the shared database
    (``db``: a :class:`haytham.storage.postgres.Database`)."""

    def __init__(self, size: int, db: Any) -> None:
        self.size = size
        self.db = db
        self._local = CallSlots(size)
        db.prepare()  # a wrong URL fails now, and a database away later is waited for  # more than `size` here could never all hold one

    def _take(self, conn: Any, provider: str) -> bool:
        for slot in range(self.size):
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (_SLOT_CLASS, slot_key(provider, slot))
            ).fetchone()
            if row[0]:
                return True
        return False

    def _acquire(self, provider: str, waiting: Waiting) -> Any:
        """A held connection that holds one of ``provider``'s slots (blocking)."""
        told = False

        def attempt() -> Any:
            nonlocal told
            conn = self.db.take_held()
            try:
                conn.execute(f"LISTEN {SLOTS_CHANNEL}")
                while not self._take(conn, provider):
                    if waiting is not None and not told:
                        told = True
                        waiting()
                    for _ in conn.notifies(timeout=WAKE_S, stop_after=1):
                        pass
                return conn
            except BaseException:
                self.db.give_back(conn)
                raise

        return self.db.retrying(attempt, "waiting for a provider slot")

    def _release(self, conn: Any) -> None:
        with contextlib.suppress(Exception):  # a dropped connection released it already
            conn.execute("SELECT pg_advisory_unlock_all()")
            conn.execute("SELECT pg_notify(%s, '')", (SLOTS_CHANNEL,))
        self.db.give_back(conn)

    @contextlib.asynccontextmanager
    async def held(self, provider: str, waiting: Waiting = None) -> AsyncIterator[None]:
        """Hold a slot in this process and one of the team's slots in the shared database."""
        async with self._local.held(provider, waiting):
            taking = asyncio.ensure_future(asyncio.to_thread(self._acquire, provider, waiting))
            try:
                conn = await asyncio.shield(taking)
            except asyncio.CancelledError:  # the thread goes on: give its slot back once taken

                def give_back(t: asyncio.Future[Any]) -> None:
                    if not t.cancelled() and t.exception() is None:
                        self._release(t.result())

                taking.add_done_callback(give_back)
                raise
            try:
                yield
            finally:
                await asyncio.to_thread(self._release, conn)
