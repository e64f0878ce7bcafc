"""Pydantic models for every artifact that crosses a boundary (LLM ↔ code, code ↔ disk, CLI ↔ UI)."""
