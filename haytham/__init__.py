"""Haytham: idea → validated, implementation-ready specification that stays faithful to the idea."""

__version__ = "0.1.0"
