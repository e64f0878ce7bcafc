"""No pattern of ours backtracks super-linearly on model text (a ReDoS hangs a run).

Every module-level compiled pattern in ``haytham`` is searched over long adversarial strings
(runs of whitespace, words without digits, hyphenated words, Markdown noise). A linear pattern
takes milliseconds on 20,000 characters; the ones this test found took 1–50 s on 6,000 (the
leading-id pattern hung a local run for 17 minutes), so the bound is generous.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time

import pytest

import haytham

SAMPLES = {
    "spaces": " \n" * 10_000,
    "words": "aaaa bbbb " * 2_000,
    "one word": "a" * 20_000,
    "hyphens": "a-" * 10_000,
    "colons": "a: " * 7_000,
    "digits": "1 " * 10_000,
    "markdown": "| * # [a]( " * 2_000,
    "dots": "a." * 10_000,
}
LIMIT_S = 2.0


def _patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if info.name.endswith("llama_child"):
            continue  # imports the optional llama.cpp wheel
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = value if isinstance(value, tuple | list) else (value,)
            for i, item in enumerate(values):
                for leaf in item if isinstance(item, tuple) else (item,):
                    if isinstance(leaf, re.Pattern) and isinstance(leaf.pattern, str):
                        found[f"{info.name}.{name}[{i}]"] = leaf
    return found


PATTERNS = _patterns()


def test_the_scan_sees_our_patterns() -> None:
    assert len(PATTERNS) > 50
    assert any(key.startswith("haytham.schemas.ids._LEADING_ID") for key in PATTERNS)


@pytest.mark.parametrize("sample", SAMPLES)
def test_no_pattern_is_super_linear_on_long_text(sample: str) -> None:
    text = SAMPLES[sample]
    slow = []
    for key, pattern in PATTERNS.items():
        began = time.perf_counter()
        pattern.search(text)
        pattern.findall(text)
        took = time.perf_counter() - began
        if took > LIMIT_S:
            slow.append(f"{key} ({took:.1f} s): {pattern.pattern[:80]}")
    assert not slow, slow
