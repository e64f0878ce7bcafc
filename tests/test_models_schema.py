"""The local provider's schema adapter keeps id patterns in a form llama.cpp's grammar obeys."""

from __future__ import annotations

import re

from haytham.models.schema_adapter import grammar_pattern, safe_schema
from haytham.stages.mvp_scope import MvpScopeOutput


def test_digit_classes_are_spelled_out_and_repeats_bounded():
    assert grammar_pattern(r"^SCOPE-\d+$") == "^SCOPE-[0-9]{1,6}$"
    assert grammar_pattern(r"^CAP-F-\d{3}$") == "^CAP-F-[0-9]{3}$"
    assert grammar_pattern(r"^DEC-[A-Z0-9]+-\d{3}$") == "^DEC-[A-Z0-9]{1,6}-[0-9]{3}$"
    for original in (r"^SCOPE-\d+$", r"^DEC-[A-Z0-9]+-\d{3}$"):
        rewritten = grammar_pattern(original)
        for sample in ("SCOPE-1", "SCOPE-12", "DEC-AUTH-001", "DEC-I18N-002"):
            if re.fullmatch(rewritten.strip("^$"), sample):
                assert re.fullmatch(original.strip("^$"), sample)


def test_stage_schema_patterns_reach_the_grammar_rewritten():
    text = str(safe_schema(MvpScopeOutput.model_json_schema()))
    assert "[0-9]{1,6}" in text and "\\\\d" not in text
