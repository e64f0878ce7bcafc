"""The adversarial pass (tests/attacks.py) in the default suite: every attack must be refused."""

from __future__ import annotations

import os
from pathlib import Path

from attacks import ATTACKS, quiet_environment, run_attacks


def test_at_least_fifty_attacks_in_every_class() -> None:
    kinds = {a.kind for a in ATTACKS}
    assert len(ATTACKS) >= 50
    assert kinds >= {"bad id", "symlink", "corrupt file", "model text", "export"} | {
        "credentials",
        "input",
        "untrusted state",
        "import bounds",
        "pdf",
        "ui text",
        "outside requests",
    }


def test_every_attack_is_refused(tmp_path: Path) -> None:
    here = Path.cwd()
    with quiet_environment():
        os.chdir(tmp_path)
        try:
            results = run_attacks(ATTACKS, tmp_path)
        finally:
            os.chdir(here)
    failed = [f"{a.kind}: {a.name}: {why}" for a, why in results if why is not None]
    assert not failed, "\n".join(failed)
