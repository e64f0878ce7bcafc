"""Pieces the UI's pages share: the cached service, safe text rendering, gate screens, panels."""
