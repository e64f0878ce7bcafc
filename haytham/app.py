"""Wires the service with what is installed: post-validators and phase verifiers."""

from __future__ import annotations

from haytham.config import Settings
from haytham.service import Haytham
from haytham.verify.factory import make_verifier


def make_service(settings: Settings) -> Haytham:
    return Haytham(settings, verifier_factory=make_verifier)
