"""Framework coherence: one framework stack per component, matched with word boundaries."""

from __future__ import annotations

from pathlib import Path

from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case
from haytham.validate.frameworks import _from_list, _from_prose

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def found(s: Snapshot) -> list:
    return run_validators(s, settings=LEX).by_validator("framework_coherence")


def test_power_of_8_four_frontend_frameworks(tmp_path: Path) -> None:
    """ADR-022 S6: Vite, Next.js, Vue and Astro for the one web app."""
    (f,) = found(snap("power_of_8__four_frontend_frameworks", tmp_path))
    assert f.stage == "story-generation" and "'web-app'" in f.message
    for name in ("Vite", "Next.js", "Vue", "Astro"):
        assert name in f.message


def test_astro_marketing_site_and_react_app_are_fine(tmp_path: Path) -> None:
    assert found(snap("power_of_8__astro_marketing_site", tmp_path)) == []
    assert found(snap("market_homecooks", tmp_path)) == []


def test_compatible_stacks_are_fine(tmp_path: Path) -> None:
    # React Native + Expo, Django + React island, Cobra, SvelteKit, FastAPI
    for name in ("mobile_birdcount", "power_of_8", "cli_planlint", "web_quiz", "api_redact"):
        assert found(snap(name, tmp_path)) == [], name


def test_backend_and_cli_conflicts(tmp_path: Path) -> None:
    (f,) = found(snap("api_redact__express_and_fastapi", tmp_path))
    assert "backend" in f.message and "Express" in f.message and "FastAPI" in f.message
    (g,) = found(snap("cli_planlint__click_and_cobra", tmp_path))
    assert "cli" in g.message


def test_word_boundaries_and_comparisons() -> None:
    assert [f.name for f in _from_prose("A reactive review flow, expressly simple")] == []
    assert [f.name for f in _from_prose("We chose React over Vue and Svelte")] == ["React"]
    assert [f.name for f in _from_prose("No Angular; the app uses Next.js")] == ["Next.js"]
    assert {f.name for f in _from_list(["React Native", "Expo"])} == {"React Native", "Expo"}
    assert [f.name for f in _from_list(["Express"])] == ["Express"]
    assert [f.name for f in _from_prose("an express lane for orders")] == []
