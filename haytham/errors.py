"""Typed errors. Every error a user can meet is one of these, with a message that says what to do.

The CLI prints ``str(error)`` (one sentence, no traceback) and exits non-zero; the UI shows the
same sentence. Anything else escaping is a bug.
"""

from __future__ import annotations

from typing import Any


class HaythamError(Exception):
    """Base class: a failure the user can understand and act on."""

    exit_code: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON for event logs and ``--json`` output: its class name and message."""
        return {"error_type": type(self).__name__, "message": str(self)}


class InputError(HaythamError):
    """Bad input from the user (idea text, ids, flags, choices). Nothing was written."""

    exit_code = 2


class ConfigError(HaythamError):
    """A provider or setting cannot be used as configured (missing extra, key or file)."""

    exit_code = 2


class ProviderError(HaythamError):
    """A model call failed after its bounded retries (or was not retryable)."""

    def __init__(self, message: str, *, retryable: bool = False, attempts: int = 1) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.attempts = attempts

    def to_dict(self) -> dict[str, Any]:
        """The base fields plus whether a retry could help and how many attempts were made."""
        return {**super().to_dict(), "retryable": self.retryable, "attempts": self.attempts}


class CassetteMiss(ProviderError):
    """The replay provider has no recorded turn for this request."""


class ContractViolation(HaythamError):
    """An LLM's JSON (or a stage input) does not satisfy its declared contract (seed 001)."""

    def __init__(
        self,
        message: str,
        *,
        expected_shape: str = "object",
        actual_shape: str = "object",
        expected_keys: list[str] | None = None,
        actual_keys: list[str] | None = None,
        mismatch: str = "missing_required_key",
        details: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.error_type = "contract_violation"
        self.expected_shape = expected_shape
        self.actual_shape = actual_shape
        self.expected_keys = list(expected_keys or [])
        self.actual_keys = list(actual_keys or [])
        self.mismatch = mismatch
        self.details = list(details or [])
        self.answer: Any = None  # the model's rejected structured answer, when there was one

    def to_dict(self) -> dict[str, Any]:
        """The contract mismatch in full (shapes, keys, details) for the stage's event log."""
        return {
            "error_type": self.error_type,
            "message": str(self),
            "expected_shape": self.expected_shape,
            "actual_shape": self.actual_shape,
            "expected_keys": self.expected_keys,
            "actual_keys": self.actual_keys,
            "mismatch": self.mismatch,
            "details": self.details,
        }


class StageFailed(HaythamError):
    """A stage could not produce a valid output; earlier stages are kept and `resume` retries it."""

    def __init__(self, stage: str, message: str, *, cause: dict[str, Any] | None = None) -> None:
        super().__init__(f"Stage {stage} failed: {message}")
        self.stage = stage
        self.cause = cause or {}

    def to_dict(self) -> dict[str, Any]:
        """The base fields plus the failed stage and the underlying error's own dict."""
        return {**super().to_dict(), "stage": self.stage, "cause": self.cause}


class ContextOverflow(StageFailed):
    """A stage's context does not fit the model's window; nothing is cut silently."""


class GateError(HaythamError):
    """A gate decision that cannot be applied (wrong gate, open ambiguities, missing reason…)."""

    exit_code = 2


class SessionNotFound(HaythamError):
    """No session has this id in the store; the message names where it looked."""

    exit_code = 2


class AccessDenied(HaythamError):
    """The caller may not do this (their role, the session's owner, the four-eyes rule);
    nothing was changed."""

    exit_code = 4


class SessionLocked(HaythamError):
    """Another process is working on this session."""

    exit_code = 3


class SessionCorrupt(HaythamError):
    """A session file cannot be read; the message names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Session file {path} is unreadable: {reason}")
        self.path = path


class StorageError(HaythamError):
    """The sessions folder cannot be written (disk full, read-only…). Nothing partial was left."""


class DatabaseAway(StorageError):
    """The shared database stopped answering (a restart, a failover, no free connection) for
    longer than a statement waits; the run is retried later from its last saved step."""
