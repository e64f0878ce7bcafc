"""Odd input is refused in one sentence before anything is created; unusual scripts are welcome."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pipeline_helpers import POWER8_IDEA, refused_run, replay_cli_args

from haytham.cli import main
from haytham.errors import InputError
from haytham.idea.checks import MIN_WORDS, count_words, validate_idea

CJK_IDEA = (
    "一位心理学家想为他的现有患者开发一个私密应用程序，八名患者在线聚会，其中一人提出具体需求，"
    "其他七人发送善意。"
)


def test_unspaced_scripts_are_measured_by_characters() -> None:
    assert count_words(CJK_IDEA) >= MIN_WORDS
    assert validate_idea(CJK_IDEA) == CJK_IDEA
    assert count_words("วันนี้อากาศดีมากและฉันอยากไปเที่ยวทะเลกับเพื่อนๆ") >= MIN_WORDS
    assert count_words("two words") == 2
    assert count_words("one\u200btwo\u2060three") == 3  # invisible separators split words


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("\u200b\u200c\u200d\u2060\ufeff " * 40, "empty"),
        ("an idea " * 6 + "\udcff\udcfe", "UTF-8"),
        ("short idea", "2 words"),
    ],
)
def test_invisible_or_undecodable_ideas_arerefused_run(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        validate_idea(text)


def test_an_unbounded_idea_file_is_read_only_up_to_the_limit(tmp_path: Path, capsys) -> None:
    err = refused_run(tmp_path, capsys, ["--idea-file", "/dev/zero"])
    assert "larger than an idea can be" in err


def test_undecodable_argument_bytes_create_no_session(tmp_path: Path, capsys) -> None:
    idea = os.fsdecode(POWER8_IDEA.encode()[:400] + b"\xff\xfe")  # what argv gives Python
    assert "UTF-8" in refused_run(tmp_path, capsys, ["--idea", idea])


def test_a_binary_cassette_is_refused_before_a_session_exists(tmp_path: Path, capsys) -> None:
    cassette = tmp_path / "binary.jsonl"
    cassette.write_bytes(bytes(range(256)) * 16)
    assert "not UTF-8" in refused_run(tmp_path, capsys, ["--idea", POWER8_IDEA], cassette)


def test_a_failure_while_creating_a_session_leaves_no_folder(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from haytham.storage.folder import SessionFiles

    def full_disk(self, rel, data):  # noqa: ANN001
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SessionFiles, "write_json", full_disk)
    capsys.readouterr()
    assert main(["run", "--idea", POWER8_IDEA, "--quiet", *replay_cli_args(tmp_path)]) != 0
    sessions = tmp_path / "sessions"
    assert not [p for p in sessions.iterdir() if p.name[0] != "_"]
