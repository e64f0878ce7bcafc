"""How many model calls of one provider may be in flight at once (``HAYTHAM_PROVIDER_CONCURRENCY``).

Providers rate-limit; a team deployment with several workers must stay under the limit
together. Every model call (each attempt, not the back-off between attempts) holds a slot:

- :class:`CallSlots`: one process (the app or the CLI on one machine), a semaphore;
- :class:`SharedCallSlots`: every worker on the shared database, one PostgreSQL advisory lock
  per slot (``provider``, slot number), held on a connection of its own for the call and
  released by the server if the worker dies mid-call.

A call waiting for a slot polls every :data:`POLL_S` seconds (calls take seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

POLL_S = 0.05
_SLOT_CLASS = 0x534C4F54  # "SLOT": the advisory-lock namespace of provider slots


class Slots(Protocol):
    def held(self, provider: str) -> contextlib.AbstractAsyncContextManager[None]: ...


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
    async def held(self, provider: str) -> AsyncIterator[None]:
        sem = self._sem(provider)
        while not sem.acquire(blocking=False):
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
    """At most ``size`` calls per provider across every process on the shared database."""

    def __init__(self, size: int, connect: Callable[[], Any]) -> None:
        self.size = size
        self._connect = connect

    def _take(self, conn: Any, provider: str) -> bool:
        with conn.cursor() as cur:
            for slot in range(self.size):
                cur.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", (_SLOT_CLASS, slot_key(provider, slot))
                )
                if cur.fetchone()[0]:
                    return True
        return False

    @contextlib.asynccontextmanager
    async def held(self, provider: str) -> AsyncIterator[None]:
        conn = self._connect()
        try:
            conn.autocommit = True
            while not self._take(conn, provider):
                await asyncio.sleep(POLL_S)
            yield
        finally:
            conn.close()  # releases the slot
