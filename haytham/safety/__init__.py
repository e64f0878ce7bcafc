"""Handling untrusted text: redacting secrets, sanitising what pages render, bounded JSON
parsing of imported files."""
