"""Invariant coverage by id: carried, not scoped out, references resolve, overrides have reasons."""

from __future__ import annotations

from pathlib import Path

from haytham.schemas.anchor import Invariant
from haytham.schemas.envelope import InvariantOverride
from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def found(s: Snapshot, *, info: bool = False) -> list:
    fs = run_validators(s, settings=LEX).by_validator("invariant_coverage")
    return fs if info else [f for f in fs if f.severity != "info"]


def replace_output(s: Snapshot, slug: str, **update: object) -> Snapshot:
    out = s.outputs[slug].model_copy(update=update)
    return Snapshot(s.idea, s.anchor, {**s.outputs, slug: out}, s.tool_calls)


def replace_items(s: Snapshot, slug: str, key: str, items: list) -> Snapshot:
    payload = s.outputs[slug].payload.model_copy(update={key: items})
    return replace_output(s, slug, payload=payload)


def test_power_of_8_group_structure_scoped_out(tmp_path: Path) -> None:
    """ADR-022: 'Organizing users into groups' OUT of scope while compliance claims it preserved:
    no IN item carries INV-2 any more, whatever the stage's self-report says."""
    s = snap("power_of_8__group_structure_out", tmp_path)
    assert "group_structure" in s.outputs["mvp-scope"].anchor_compliance.invariants_preserved
    fs = [f for f in found(s) if f.invariant == "INV-2 group_structure"]
    assert fs and fs[0].stage == "mvp-scope"
    assert fs[0].message.startswith("no IN item of mvp-scope carries INV-2 group_structure")


def test_an_out_item_that_carries_a_required_invariant_scopes_it_out(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    scope = s.outputs["mvp-scope"].payload
    out = scope.out_of_scope[0].model_copy(update={"carries": ["inv-2"], "honours_exclusion": []})
    (f,) = found(replace_items(s, "mvp-scope", "out_of_scope", [out, *scope.out_of_scope[1:]]))
    assert "puts INV-2 group_structure" in f.message and f.item == out.id


def test_an_out_item_that_honours_an_exclusion_is_never_flagged(tmp_path: Path) -> None:
    """ "Public registration — out" honours the closed-access invariant: praised, not flagged."""
    s = snap("power_of_8", tmp_path)
    scope = s.outputs["mvp-scope"].payload
    honours = [o for o in scope.out_of_scope if o.honours_exclusion]
    assert honours and "INV-1" in honours[0].honours_exclusion
    both = honours[0].model_copy(update={"carries": ["INV-1"]})
    others = [o for o in scope.out_of_scope if o.id != both.id]
    assert found(replace_items(s, "mvp-scope", "out_of_scope", [both, *others])) == []


def test_faithful_sessions_are_clean(tmp_path: Path) -> None:
    for name in (
        "power_of_8",
        "cli_planlint",
        "api_redact",
        "market_homecooks",
        "web_quiz",
        "mobile_birdcount",
        "power_of_8__partial_stage6",
        "web_quiz__override_question_format",
    ):
        assert found(snap(name, tmp_path)) == [], name


def test_dropped_invariants_are_found_by_id(tmp_path: Path) -> None:
    # (power_of_8__timing_dropped and market_homecooks__radius_dropped still carry the id while
    # their text drops it: those are the embedding check's cases)
    cases = {
        "api_redact__audit_dropped": "INV-6 audit_trail",
        "power_of_8__no_orchestrator": "INV-3 orchestrator_role",
    }
    for name, inv in cases.items():
        fs = found(snap(name, tmp_path))
        assert any(f.invariant == inv and "carries" in f.message for f in fs), (name, fs)


def test_a_stage_without_traceability_is_left_to_the_semantic_check(tmp_path: Path) -> None:
    """A model that ignored ``carries`` everywhere is not accused of dropping every invariant."""
    s = snap("power_of_8", tmp_path)
    stories = [
        st.model_copy(update={"carries": []})
        for st in s.outputs["story-generation"].payload.stories
    ]
    assert found(replace_items(s, "story-generation", "stories", stories)) == []
    one = [stories[0].model_copy(update={"carries": ["INV-1"]}), *stories[1:]]
    fs = found(replace_items(s, "story-generation", "stories", one))
    assert {f.invariant for f in fs} >= {"INV-2 group_structure", "INV-3 orchestrator_role"}


def test_unknown_references_are_reported(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    caps = s.outputs["capability-model"].payload.functional
    bad = caps[0].model_copy(update={"carries": [*caps[0].carries, "INV-9"]})
    (f,) = found(replace_items(s, "capability-model", "functional", [bad, *caps[1:]]))
    assert f.item == bad.id and "INV-9" in f.message


def test_forbidden_thing_described_in_an_item_is_a_second_opinion(tmp_path: Path) -> None:
    s = snap("cli_planlint", tmp_path)
    assert s.anchor is not None and s.anchor.invariant("data_locality").polarity == "forbids"
    caps = s.outputs["capability-model"].payload.functional
    chatty = caps[0].model_copy(
        update={"description": "Each run makes a network call to the pricing service."}
    )
    s2 = replace_items(s, "capability-model", "functional", [chatty, *caps[1:]])
    assert found(s2) == []
    (f,) = [f for f in found(s2, info=True) if f.item == chatty.id]
    assert f.severity == "info" and f.invariant == "INV-4 data_locality"


def test_a_carrier_of_a_forbids_invariant_that_describes_the_forbidden_thing_is_a_warning(
    tmp_path: Path,
) -> None:
    """The same text from an item that *claims to carry* the exclusion contradicts its own
    claim; a carrier that negates it honours it."""
    s = snap("cli_planlint", tmp_path)
    caps = s.outputs["capability-model"].payload.functional
    claims = caps[0].model_copy(
        update={
            "description": "Each run makes a network call to the pricing service.",
            "carries": [*caps[0].carries, "INV-4"],
        }
    )
    s2 = replace_items(s, "capability-model", "functional", [claims, *caps[1:]])
    (f,) = [f for f in found(s2) if f.item == claims.id]
    assert f.severity == "warning" and f.invariant == "INV-4 data_locality"
    assert "claims to carry" in f.message and "network" in f.evidence
    honours = claims.model_copy(update={"description": "It never makes a network call."})
    s3 = replace_items(s, "capability-model", "functional", [honours, *caps[1:]])
    assert [f for f in found(s3) if f.item == claims.id] == []


def test_override_with_reason_is_honoured(tmp_path: Path) -> None:
    assert found(snap("web_quiz__override_question_format", tmp_path)) == []


def test_override_without_reason_is_reported(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["system-traits"].anchor_compliance
    comp = comp.model_copy(
        update={
            "invariants_preserved": [p for p in comp.invariants_preserved if p != "session_medium"],
            "invariants_overridden": [InvariantOverride(invariant="INV-5", reason="n/a")],
        }
    )
    (f,) = found(replace_output(s, "system-traits", anchor_compliance=comp))
    assert f.invariant == "INV-5 session_medium" and "without a real reason" in f.message


def test_unlisted_invariant_in_a_how_stage_is_a_second_opinion(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["build-buy-analysis"].anchor_compliance
    comp = comp.model_copy(update={"invariants_preserved": ["access_model"]})
    s2 = replace_output(s, "build-buy-analysis", anchor_compliance=comp)
    assert found(s2) == []
    fs = found(s2, info=True)
    assert len(fs) == 5 and all("neither preserves nor overrides" in f.message for f in fs)


def test_self_reported_genericization(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["mvp-scope"].anchor_compliance.model_copy(
        update={"identity_features_genericized": ["Synchronous group gathering"]}
    )
    (f,) = found(replace_output(s, "mvp-scope", anchor_compliance=comp))
    assert "reports genericizing" in f.message


def test_no_anchor_no_findings(tmp_path: Path) -> None:
    s = snap("power_of_8__group_structure_out", tmp_path)
    assert found(Snapshot(s.idea, None, s.outputs, s.tool_calls), info=True) == []


def test_compliance_lists_may_name_invariants_by_id(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    assert s.anchor is not None
    comp = s.outputs["build-buy-analysis"].anchor_compliance
    by_id = comp.model_copy(update={"invariants_preserved": s.anchor.ids()})
    assert found(replace_output(s, "build-buy-analysis", anchor_compliance=by_id), info=True) == []


def pinned(inv_id: str, kind: str, value: str, trait: str) -> Invariant:
    """A pinned invariant for the text checks (its source is its value)."""
    return Invariant(
        id=inv_id, property=kind, kind=kind, value=value, trait=trait, source=value, confidence=0.9
    )


def test_an_item_that_negates_the_excluded_thing_honours_it() -> None:
    """payments=none: "No price, fee or payment step appears" negates the whole noun list, so
    the item honours the exclusion; an item that affirms a payment step still contradicts it."""
    from haytham.validate.trait_propagation import pinned_contradiction

    inv = pinned(
        "INV-6", "payments", "collecting is always free; nobody is charged", "payments=none"
    )
    assert pinned_contradiction(inv, "No price, fee or payment step appears in any call.") == ""
    assert pinned_contradiction(inv, "Collectors never pay: no fee and no payment.") == ""
    assert pinned_contradiction(inv, "A payment step at the end of every call takes the fee.")


def test_a_negated_list_of_any_phrases_is_negated_throughout() -> None:
    """ "Nowhere … any prices, any means of payment or any buttons": "any" continues the
    negation; a clause with its own verb after a negation ("any visitor can book") does not."""
    from haytham.validate.negation import affirmed_terms

    text = (
        "Nowhere in the app are there any prices, any means of payment or any buttons inviting "
        "donations."
    )
    assert not {"price", "pay", "donation", "button"} & affirmed_terms(text)
    assert "visitor" in affirmed_terms("No account is needed, any visitor can book a slot.")
    fee = "Nowhere in the app is there a price, a fee or any screen for taking payment."
    assert not {"fee", "pay", "screen"} & affirmed_terms(fee)
    sync = "The folder is excluded from Hyper Backup and from any form of cloud sync."
    assert "cloud" not in affirmed_terms(sync)


def test_under_auth_none_any_account_or_password_contradicts_the_pin() -> None:
    """auth=none means no accounts at all: a portal login with email and password breaks it even
    when nobody "signs up" in the open-registration sense; "no accounts or passwords", the
    computer's own sign-in and signing up for an evening do not."""
    from haytham.validate.trait_propagation import pinned_contradiction

    inv = pinned(
        "INV-1", "access", "people identify only by the door fob; no accounts", "auth=none"
    )
    assert pinned_contradiction(
        inv, "Members create a portal login with their email and a password."
    )
    assert pinned_contradiction(inv, "Each volunteer sets up an account before the first shift.")
    assert (
        pinned_contradiction(inv, "There are no accounts or passwords; the fob is the identity.")
        == ""
    )
    assert pinned_contradiction(inv, "A member taps their fob to sign up for an evening.") == ""
    # anyone may *use* it: open use is the pin, signing up for an account breaks it
    assert pinned_contradiction(inv, "Anyone who joins the hall's Wi-Fi sees the song.") == ""
    assert pinned_contradiction(inv, "Anyone can sign up on the landing page.")
    assert pinned_contradiction(inv, "Visitors register on the landing page.")
    assert (
        pinned_contradiction(inv, "The program adds no login; the computer's sign-in suffices.")
        == ""
    )
