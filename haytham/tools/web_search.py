"""The ``web_search`` tool for market-context, offered only when a search backend is configured.

The backend is any SearXNG-compatible endpoint (``HAYTHAM_SEARCH_URL``; ``GET /search?q=…&
format=json``). Every call and its result is logged as a ``tool_call`` event, which is what the
grounding validator checks ``web_search`` claims against (ADR-022 Part 3a).
"""

from __future__ import annotations

from typing import Any

import httpx
from strands import tool

from haytham.storage.protocol import Session

MAX_RESULTS = 5


def make_web_search(base_url: str, files: Session, stage: str, timeout: float = 20.0) -> Any:
    """A Strands tool bound to one session and stage (no shared state between sessions)."""

    @tool
    def web_search(query: str) -> str:
        """Search the web. Returns up to five results as title, URL and snippet lines.

        Args:
            query: what to search for, in a few specific words.
        """
        try:
            resp = httpx.get(
                f"{base_url.rstrip('/')}/search",
                params={"q": query, "format": "json"},
                timeout=timeout,
            )
            resp.raise_for_status()
            results = (resp.json() or {}).get("results", [])[:MAX_RESULTS]
            text = "\n".join(
                f"- {r.get('title', '')} — {r.get('url', '')}\n  {(r.get('content') or '').strip()}"
                for r in results
            )
            text = text or "No results."
        except (httpx.HTTPError, ValueError) as exc:
            text = f"Search failed ({type(exc).__name__}); treat numbers as estimates."
        files.append_event(
            "tool_call", stage, tool="web_search", input={"query": query}, result=text
        )
        return text

    return web_search
