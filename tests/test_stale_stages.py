"""Staleness that means something: a check is stale exactly when the anchor or an output it
checked changed after it ran; a Gate 1 clarification re-checks the phase; a gate with stale
checks refuses approval until a re-check (or an explicit, logged override)."""

from __future__ import annotations

import shutil

import pytest
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.errors import GateError, InputError
from haytham.pipeline.gates import stale_stages
from haytham.pipeline.staleness import stale_checks
from haytham.schemas.gate import STALE_CHECKS
from haytham.state import StageMeta

WHY_AFTER_ANCHOR = ["market-context", "risk-assessment", "validation-summary"]
EDIT = {"kind": "edit", "invariant": "orchestrator_role", "value": "a co-host runs them"}


def _at_gate_1(svc) -> str:
    sid = svc.create_session(POWER8_IDEA)
    svc.run(sid)  # stops at Gate 1 with two ambiguous invariants
    return sid


def test_a_clarification_re_checks_the_phase_instead_of_leaving_it_stale(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        state = svc.load_state(sid)
        assert stale_stages(state) == [] and stale_checks(state) == []
        medium = state.anchor.invariant("session_medium")
        second = medium.clarification_options[1]
        assert second != medium.value

        svc.clarify(sid, "session_medium", "2")
        state = svc.load_state(sid)
        assert state.anchor.invariant("session_medium").value == second
        assert stale_checks(state) == []  # re-checked against the clarified anchor
        digest = state.anchor.digest()
        assert state.verifications["WHY"].checked.anchor == digest
        for slug in WHY_AFTER_ANCHOR:
            assert state.stage_meta[slug].checked.anchor == digest
            assert state.stage_meta[slug].anchor != digest  # the stage itself did not re-run
        (recheck,) = state.gates[1].rechecks
        assert recheck.why == "after the clarification" and recheck.verification == "passed"
        svc.clarify(sid, "interaction_model", "1")
        svc.approve(sid, 1, continue_run=False)  # nothing stale: approval goes through
        assert svc.load_state(sid).gates[1].status == "approved"


def test_an_edit_makes_the_checks_stale_and_approval_waits_for_a_re_check(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        for inv in svc.load_state(sid).anchor.open_ambiguities():
            svc.clarify(sid, inv.property, "1")
        svc.decide(sid, 1, EDIT, continue_run=False)
        state = svc.load_state(sid)
        assert stale_stages(state) == WHY_AFTER_ANCHOR
        checks = stale_checks(state)
        assert [c.stage for c in checks] == [*WHY_AFTER_ANCHOR, None]  # and the verification
        assert all(c.changed == ("the concept anchor",) for c in checks)
        status = svc.status(sid)
        assert status["stale"] == WHY_AFTER_ANCHOR
        assert status["stale_summary"].startswith("the concept anchor changed after the checks")

        with pytest.raises(GateError, match="cannot be approved while its checks are stale"):
            svc.approve(sid, 1, continue_run=False)
        assert svc.load_state(sid).gates[1].status == "open"  # nothing changed

        outcome = svc.recheck(sid)
        assert outcome.gate == 1 and outcome.messages == ["re-checked WHY"]
        state = svc.load_state(sid)
        assert stale_checks(state) == []
        assert state.gates[1].rechecks[-1].why.startswith("the concept anchor changed")
        svc.approve(sid, 1, continue_run=False)
        assert svc.load_state(sid).gates[1].status == "approved"
        assert not any(o.target == STALE_CHECKS for o in svc.load_state(sid).gates[1].overrides)


def test_approving_stale_checks_needs_an_explicit_override_that_is_logged(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        for inv in svc.load_state(sid).anchor.open_ambiguities():
            svc.clarify(sid, inv.property, "1")
        svc.decide(sid, 1, EDIT, continue_run=False)
        svc.approve(sid, 1, override_stale="the edit only rewords it", continue_run=False)
        record = svc.load_state(sid).gates[1]
        assert record.status == "approved"
        (override,) = [o for o in record.overrides if o.target == STALE_CHECKS]
        assert override.reason == "the edit only rewords it" and override.by
        listed = [o for o in svc.status(sid)["overrides"] if o["target"] == STALE_CHECKS]
        assert listed and listed[0]["gate"] == 1


def test_a_finished_auto_approved_run_has_no_stale_check_until_something_changes(
    tmp_path,
) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, auto_approve=True).status == "done"
        state = svc.load_state(sid)
        assert stale_checks(state) == [] and svc.status(sid)["stale"] == []
        # an output changed after it was checked: its checks, those of the stages built on it
        # and its phase's verification are stale (and nothing else)
        out = state.outputs["risk-assessment"]
        changed = state.model_copy(
            update={
                "outputs": {
                    **state.outputs,
                    "risk-assessment": out.model_copy(update={"tldr": out.tldr + " (edited)"}),
                }
            }
        )
        stale = stale_checks(changed)
        assert [(c.phase.value, c.stage) for c in stale[:3]] == [
            ("WHY", "risk-assessment"),
            ("WHY", "validation-summary"),
            ("WHY", None),
        ]
        assert all("Risk assessment" in c.changed for c in stale)
        assert all(c.phase.value == "WHY" or c.stage is not None for c in stale)


def test_confidence_and_provenance_alone_do_not_make_checks_stale(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        state = svc.load_state(sid)
        anchor = state.anchor
        same = anchor.model_copy(
            update={
                "invariants": [
                    i.model_copy(update={"confidence": 1.0, "provenance": "reviewer"})
                    for i in anchor.invariants
                ]
            }
        )
        assert same.digest() == anchor.digest()
        assert stale_checks(state.model_copy(update={"anchor": same})) == []
        edited = anchor.edit_value("group_structure", "6 per session")
        assert edited.digest() != anchor.digest()
        assert stale_stages(state.model_copy(update={"anchor": edited})) == WHY_AFTER_ANCHOR


def test_a_session_from_before_fingerprints_falls_back_to_the_anchor_it_ran_with(
    tmp_path,
) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        state = svc.load_state(_at_gate_1(svc))
    old = {
        slug: StageMeta.model_validate(
            {k: v for k, v in meta.model_dump().items() if k not in ("checked", "inputs")}
        )
        for slug, meta in state.stage_meta.items()
    }
    verifications = {
        k: v.model_copy(update={"checked": None}) for k, v in state.verifications.items()
    }
    older = state.model_copy(update={"stage_meta": old, "verifications": verifications})
    assert stale_stages(older) == []
    edited = older.anchor.edit_value("group_structure", "6 per session")
    assert stale_stages(older.model_copy(update={"anchor": edited})) == WHY_AFTER_ANCHOR


def test_cli_status_names_stale_checks_and_recheck_clears_them(tmp_path, capsys) -> None:
    from haytham.cli import main

    args = replay_cli_args(tmp_path)
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert main(["run", "--idea-file", str(idea), "--session-id", "s", "--quiet", *args]) == 0
    for name in ("interaction_model", "session_medium"):
        assert main(["clarify", "s", "--invariant", name, "--choice", "2", *args]) == 0
    capsys.readouterr()
    assert main(["status", "s", *args]) == 0
    assert "stale" not in capsys.readouterr().out  # a clarification re-checks the phase
    with make_service(replay_settings(tmp_path)) as svc:
        svc.decide("s", 1, EDIT, continue_run=False)
    assert main(["status", "s", *args]) == 0
    out = capsys.readouterr().out
    assert "stale checks: the concept anchor changed after the checks of Market context" in out
    assert "haytham recheck s" in out and "haytham clear-from s market-context" in out
    assert main(["approve", "s", "--gate", "1", *args]) != 0
    assert "checks are stale" in capsys.readouterr().err
    assert main(["recheck", "s", *args]) == 0
    assert "re-checked WHY" in capsys.readouterr().out
    assert main(["status", "s", *args]) == 0
    assert "stale" not in capsys.readouterr().out
    assert main(["approve", "s", "--gate", "1", "--quiet", *args]) == 0


def _first_page(pdf: bytes, tmp_path) -> str:
    import subprocess

    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    return subprocess.run(
        ["pdftotext", "-f", "1", "-l", "1", "-layout", str(path), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils is not installed")
def test_a_finished_session_with_stale_checks_says_so_first_and_a_re_check_clears_it(
    tmp_path,
) -> None:
    from haytham.reports.export import export

    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        for inv in svc.load_state(sid).anchor.open_ambiguities():
            svc.clarify(sid, inv.property, "1")
        svc.decide(sid, 1, EDIT, continue_run=False)
        svc.approve(sid, 1, override_stale="reviewed by hand", continue_run=False)
        assert svc.run(sid, auto_approve=True).status == "done"
        state = svc.load_state(sid)
        assert svc.status(sid)["stale"] == WHY_AFTER_ANCHOR  # shown truthfully once done
        markdown = export(state, "markdown")
        head = markdown.split("## The idea")[0]
        assert "Read this first" in head and "Stale checks: the concept anchor changed" in head
        assert "Gate 1 was approved with stale checks" in head and "reviewed by hand" in head
        first = " ".join(_first_page(export(state, "pdf"), tmp_path).split())
        assert "Read this first" in first and "Stale checks: the concept anchor changed" in first
        assert "Gate 1 was approved with stale checks" in first

        outcome = svc.recheck(sid)  # a finished session can be re-checked too
        assert outcome.status == "done" and outcome.messages == ["re-checked WHY"]
        state = svc.load_state(sid)
        assert svc.status(sid)["stale"] == [] and state.status == "done"
        head = export(state, "markdown").split("## The idea")[0]
        assert "Stale checks" not in head  # the override stays on the record
        assert "Gate 1 was approved with stale checks" in head
        with pytest.raises(InputError, match="Nothing to re-check"):
            svc.recheck(sid)


def test_stale_checks_show_no_green_mark_on_the_run_table_or_the_fidelity_matrix(
    tmp_path,
) -> None:
    """After an anchor edit, the WHY verifier's "passed" and each WHY stage's "honored" are
    from before the change: neither is drawn green until a re-check renews them."""
    import test_ui_support  # noqa: F401  (puts the UI's components on the path)

    from frontend_streamlit.components.fidelity_data import MARKS, compliance_matrix
    from frontend_streamlit.components.progress import stage_rows

    with make_service(replay_settings(tmp_path)) as svc:
        sid = _at_gate_1(svc)
        for inv in svc.load_state(sid).anchor.open_ambiguities():
            svc.clarify(sid, inv.property, "1")

        def marks() -> tuple[str, set[str]]:
            status = svc.status(sid)
            rows = stage_rows(status["summary"], stale=status["stale_rows"])
            verifier = next(r["status"] for r in rows if r["slug"] == "verify-why")
            matrix = compliance_matrix(svc.load_state(sid))
            why = [c for c in matrix.columns if c.split()[1] in WHY_AFTER_ANCHOR]
            return verifier, set(matrix[why].to_numpy().ravel())

        verifier, cells = marks()
        assert verifier == "✔ passed" and MARKS["honored"] in cells  # fresh checks: green
        svc.decide(sid, 1, EDIT, continue_run=False)
        verifier, cells = marks()
        assert verifier.startswith("◇ passed before a change")
        assert MARKS["honored"] not in cells and MARKS["stale"] in cells
        svc.recheck(sid)
        verifier, cells = marks()
        assert verifier == "✔ passed" and MARKS["honored"] in cells
