"""`haytham validate SESSION_ID_OR_PATH [--json]` through cli_main (embeddings off here)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from haytham.cli import main as haytham_main
from haytham.config import load_settings
from haytham.validate import cli_main
from haytham.validate.calibration import load_case

DRIFT = Path(__file__).parent / "fixtures" / "drift"


@pytest.fixture(autouse=True)
def _no_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
    monkeypatch.delenv("HAYTHAM_BLOCKING_VALIDATORS", raising=False)


def run(target: str, sessions_dir: Path, as_json: bool = True) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    validators = load_settings(dotenv=None).validators  # as `haytham validate` reads them
    code = cli_main(
        target,
        as_json=as_json,
        sessions_dir=sessions_dir,
        validators=validators,
        out=out,
        err=err,
    )
    return code, out.getvalue(), err.getvalue()


def test_json_by_session_id_and_by_copied_path(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    case = load_case(DRIFT / "power_of_8__open_registration", tmp_path / "work")
    shutil.copytree(case.path, sessions / "20260210-p8")
    code, out, err = run("20260210-p8", sessions)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data) == {"findings", "divergence"} and data["divergence"] == {}
    assert data["findings"] and set(data["findings"][0]) == {
        "validator",
        "severity",
        "stage",
        "invariant",
        "item",
        "message",
        "evidence",
    }
    elsewhere = tmp_path / "copied" / "somewhere"
    shutil.copytree(sessions / "20260210-p8", elsewhere)
    code, out2, _ = run(str(elsewhere), tmp_path / "unrelated")
    assert code == 0 and json.loads(out2) == data


def test_human_table(tmp_path: Path) -> None:
    code, out, _ = run(str(DRIFT / "power_of_8"), tmp_path, as_json=False)
    assert code == 0 and "No findings that need a decision." in out
    case = load_case(DRIFT / "power_of_8__twenty_stories_small", tmp_path)
    code, out, _ = run(str(case.path), tmp_path, as_json=False)
    assert code == 0 and "SEVERITY" in out and "20 stories exceed" in out


def test_unreadable_session_exits_2(tmp_path: Path) -> None:
    code, out, err = run("no-such-session", tmp_path)
    assert code == 2 and out == "" and "neither a folder nor a session id" in err
    broken = tmp_path / "broken"
    shutil.copytree(DRIFT / "power_of_8", broken)
    (broken / "stages" / "07-system-traits" / "output.json").write_text("{", encoding="utf-8")
    code, out, err = run(str(broken), tmp_path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "07-system-traits" in err


def test_bad_setting_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HAYTHAM_BLOCKING_VALIDATORS", "nope")
    monkeypatch.chdir(tmp_path)  # no .env
    code = haytham_main(["validate", str(DRIFT / "power_of_8")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown validator" in err and "HAYTHAM_BLOCKING_VALIDATORS" in err
    assert err.count("\n") == 1
