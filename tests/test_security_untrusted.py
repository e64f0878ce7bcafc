"""Nothing received is trusted (issue 29): a session's saved state never names code to load,
and an imported bundle is read under caps, by name and kind, before anything is written.

The code-loading checks use a real module on ``sys.path`` that writes a marker file when it is
imported: a refused row or bundle must leave no marker. The generative pass (hypothesis) feeds
state rows and bundles built from the same pieces an attacker would use.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import InputError
from haytham.runs.transfer import MAX_DEPTH, MAX_FILES, read_bundle
from haytham.safety import bounded_json as bj
from haytham.state import SessionState, state_from_row

MODULE = "haytham_untrusted_marker"


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module on ``sys.path`` that writes ``imported.txt`` the moment it is imported."""
    folder = tmp_path / "mods"
    folder.mkdir()
    flag = tmp_path / "imported.txt"
    (folder / f"{MODULE}.py").write_text(
        f"from pathlib import Path\nPath({str(flag)!r}).write_text('imported')\n"
        "import pydantic\nclass Model(pydantic.BaseModel):\n    x: int = 1\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return flag


TAG = {"__burr_serde__": "pydantic", "__pydantic_class": f"{MODULE}.Model", "x": 1}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("untrusted")
    with make_service(replay_settings(root)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, until=1)  # waits at Gate 1: resume has work to do
    return root, sid


def _copy(done: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    import shutil

    root, sid = done
    shutil.copytree(root / "sessions", tmp_path / "sessions")
    return tmp_path, sid


def _poison_latest_row(db: Path, change) -> None:  # noqa: ANN001 — a function of the state
    conn = sqlite3.connect(db)
    with conn:
        seq, text = conn.execute(
            "SELECT sequence_id, state FROM burr_state ORDER BY sequence_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE burr_state SET state = ? WHERE sequence_id = ?",
            (json.dumps(change(json.loads(text))), seq),
        )
    conn.close()


ROW_ATTACKS = {
    "an unknown field": lambda s: {**s, "extra": TAG},
    "a known field holding a type tag": lambda s: {**s, "outputs": TAG},
    "Burr's step field holding a type tag": lambda s: {**s, "__PRIOR_STEP": TAG},
}


@pytest.mark.parametrize("how", ROW_ATTACKS)
@pytest.mark.parametrize("command", ["status", "export", "resume"])
def test_a_state_row_naming_a_module_is_refused_and_imports_nothing(
    done, tmp_path, marker, capsys, how, command
) -> None:
    root, sid = _copy(done, tmp_path)
    _poison_latest_row(root / "sessions" / sid / "state.db", ROW_ATTACKS[how])
    argv = {
        "status": ["status", sid],
        "export": ["export", sid, "--format", "json"],
        "resume": ["resume", sid, "--quiet"],
    }[command]
    code = main([*argv, *replay_cli_args(root)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err
    assert "state.db" in err
    assert not marker.exists(), "the row made the CLI import a module"


def test_the_gate_history_refuses_a_row_naming_a_module(done, tmp_path, marker) -> None:
    from haytham.errors import SessionCorrupt

    root, sid = _copy(done, tmp_path)
    _poison_latest_row(
        root / "sessions" / sid / "state.db", ROW_ATTACKS["a known field holding a type tag"]
    )
    with make_service(replay_settings(root)) as svc, pytest.raises(SessionCorrupt) as refused:
        svc.gate_history(sid, 1)
    assert "names a type to load" in str(refused.value) and not marker.exists()


def test_burrs_loader_reads_the_session_through_its_types_only(done, tmp_path, marker) -> None:
    from haytham.errors import SessionCorrupt
    from haytham.pipeline.persist import TypedPersister
    from haytham.storage.protocol import PARTITION

    root, sid = _copy(done, tmp_path)
    with make_service(replay_settings(root)) as svc:
        saver = TypedPersister(svc.store.open(sid))
        assert saver.list_app_ids(PARTITION) == [sid]
        loaded = saver.load(PARTITION, sid)
        assert loaded is not None and SessionState.of(loaded["state"]).session_id == sid
        assert saver.load(PARTITION, "another-session") is None
        _poison_latest_row(root / "sessions" / sid / "state.db", ROW_ATTACKS["an unknown field"])
        with pytest.raises(SessionCorrupt, match="does not know"):
            saver.load(PARTITION, sid)
    assert not marker.exists()


def test_rows_written_by_haytham_load_unchanged(done) -> None:
    root, sid = done
    with make_service(replay_settings(root)) as svc:
        files = svc.store.open(sid)
        rows = files.state_rows()
        assert rows
        for row in rows:
            assert SessionState.of(state_from_row(row.state)).session_id == sid


# -- import bounds ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundle(done) -> dict:
    root, sid = done
    with make_service(replay_settings(root)) as svc:
        return json.loads(svc.export(sid, "session"))


def _import(tmp_path: Path, data: dict | str) -> tuple[int, str, Path]:
    path = tmp_path / "bundle.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    sessions = tmp_path / "sessions"
    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        code = main(["import", str(path), "--sessions-dir", str(sessions)])
    return code, out.getvalue(), sessions


def _refused(tmp_path: Path, data: dict | str) -> str:
    code, err, sessions = _import(tmp_path, data)
    assert code == 2 and "Traceback" not in err, err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err
    assert not sessions.exists() or not any(sessions.iterdir()), "something was imported"
    return err


def test_an_exported_session_imports_and_exports_back_byte_for_byte(bundle, tmp_path) -> None:
    code, err, sessions = _import(tmp_path, bundle)
    assert code == 0, err
    assert sessions == tmp_path / "sessions"
    with make_service(replay_settings(tmp_path)) as svc:
        assert json.loads(svc.export(bundle["session_id"], "session")) == bundle


def test_a_bundle_with_60000_files_is_refused_at_the_cap(bundle, tmp_path) -> None:
    many = {**bundle, "files": {f"reviews/{n:04d}-mvp-scope.json": "{}" for n in range(9999)}}
    many["files"] |= {f"x{n}.md": "" for n in range(50_000)}
    assert f"more than {MAX_FILES}" in _refused(tmp_path, many)


def test_a_member_over_the_size_cap_is_refused_while_streaming(bundle, tmp_path) -> None:
    big = {**bundle, "files": {**bundle["files"], "idea.md": "x" * (5 * 2**20)}}
    assert "longer than" in _refused(tmp_path, big)


def test_deep_nesting_is_refused_without_recursion(bundle, tmp_path) -> None:
    deep = '{"format": "haytham-session", "files": ' + "[" * 200_000 + "]" * 200_000 + "}"
    assert f"deeper than {MAX_DEPTH}" in _refused(tmp_path, deep)
    member = {**bundle, "files": {**bundle["files"], "gates.json": "[" * 100_000}}
    assert "deeper than" in _refused(tmp_path, member)


@pytest.mark.parametrize(
    "name", ["state.db", "state.db-wal", "state.db-journal", ".lock", "events.jsonl"]
)
def test_reserved_files_are_never_taken_from_a_bundle(bundle, tmp_path, name) -> None:
    bad = {**bundle, "files": {**bundle["files"], name: "not a database"}}
    assert "makes itself" in _refused(tmp_path, bad)


@pytest.mark.parametrize(
    "name",
    ["../outside.md", "/etc/passwd", "stages/99-nope/output.json", "notes.txt", "a/../idea.md"],
)
def test_only_files_of_the_folder_contract_are_imported(bundle, tmp_path, name) -> None:
    bad = {**bundle, "files": {**bundle["files"], name: "{}"}}
    assert "not a file of a session" in _refused(tmp_path, bad)


def test_a_bundle_whose_state_names_a_module_is_refused(bundle, tmp_path, marker) -> None:
    for change in ROW_ATTACKS.values():
        bad = json.loads(json.dumps(bundle))
        bad["state"][-1]["state"] = change(bad["state"][-1]["state"])
        assert "nothing was imported" in _refused(tmp_path, bad)
    assert not marker.exists()


# -- the bounded reader and the generative pass ------------------------------------------------
CAPS = bj.Caps(max_bytes=2**20, max_depth=20, max_string=2_000, max_values=5_000)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda kids: (
        st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=8), kids, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(value=JSON, chunk=st.integers(1, 64), indent=st.sampled_from([None, 1]))
def test_the_bounded_reader_reads_what_json_reads(value, chunk, indent) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=bool(chunk % 2))
    assert bj.loads_bounded(text, CAPS, chunk=chunk) == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet='{}[],:"\\ 0123456789.eE+-truefalsnl\u00e9', max_size=60),
    chunk=st.integers(1, 8),
)
def test_the_bounded_reader_refuses_what_json_refuses(text, chunk) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        expected = bj.NotJson
    try:
        got = bj.loads_bounded(text, CAPS, chunk=chunk)
    except (bj.NotJson, bj.OverCap):
        got = bj.NotJson
    assert got == expected


KEYS = st.sampled_from(
    [*SessionState.model_fields, "__PRIOR_STEP", "__SEQUENCE_ID", "extra", "__burr_serde__"]
)
TAGGED = st.fixed_dictionaries(
    {"__burr_serde__": st.sampled_from(["pydantic", "pandas.DataFrame", "pickle"])},
    optional={"__pydantic_class": st.just(f"{MODULE}.Model"), "path": st.just("/etc/passwd")},
)
VALUES = st.one_of(JSON, TAGGED, st.fixed_dictionaries({"json": st.one_of(JSON, TAGGED)}))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(row=st.dictionaries(KEYS, VALUES, max_size=6))
def test_no_state_row_imports_code_or_escapes_as_a_crash(row, marker) -> None:
    with contextlib.suppress(ValueError, TypeError):  # refused in one sentence by callers
        SessionState.of(state_from_row(row))
    assert not marker.exists()


MEMBER_NAMES = st.sampled_from(
    ["idea.md", "gates.json", "state.db", ".lock", "../x.md", "stages/01-idea-analysis/output.json"]
) | st.text(max_size=20)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(MEMBER_NAMES, st.one_of(st.text(max_size=40), JSON.map(json.dumps))),
    events=st.lists(st.one_of(st.text(max_size=20), JSON.map(json.dumps)), max_size=4),
    rows=st.lists(st.dictionaries(KEYS, VALUES, max_size=4), max_size=3),
    sid=st.sampled_from(["ok-id", "../bad", ""]),
)
def test_any_bundle_is_imported_whole_or_refused_in_one_sentence(
    files, events, rows, sid, tmp_path, marker
) -> None:
    data = {
        "format": "haytham-session",
        "version": 1,
        "session_id": sid,
        "files": files,
        "events": events,
        "state": [
            {"sequence_id": n, "position": "start", "status": "completed", "state": r}
            for n, r in enumerate(rows)
        ],
    }
    path = tmp_path / "gen.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        read_bundle(path)
    except InputError as exc:
        assert "\n" not in str(exc)
    assert not marker.exists()
