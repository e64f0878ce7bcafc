"""Text from a model, a file or the URL, made safe for Streamlit's Markdown (issue 15).

Every Streamlit text element and most widget labels render GitHub-flavoured Markdown: links,
images (which load from any address without a click), autolinks, Streamlit's directives
(``:red[…]``, ``:material/…:``) and LaTeX. Text the app did not write itself is therefore passed
through one of these helpers before it reaches ``st.markdown`` / ``st.write`` / ``st.caption`` /
``st.error`` and the other message boxes, an expander, tab, radio, checkbox or button label, a
badge, a status label or a ``format_func``:

- :func:`md` for short text shown literally: every Markdown control character is escaped, so
  nothing in it renders as Markdown (no link, image, heading, list, table or HTML).
- :func:`label` for labels: :func:`md` on one line; :func:`name` for an invariant's
  snake_case property, which needs no escaping (anything else is escaped).
- :func:`safe_markdown` for the long Markdown a stage writes (its content body), which keeps its
  headings, lists, tables and emphasis. The rule, applied the same everywhere: nothing in it can
  load, link or run. Every ``[``, ``]``, ``<`` and ``$`` is escaped, so no image, link,
  reference definition, footnote, directive, autolink, raw HTML or formula is ever parsed: an
  image or a link shows as the text it was written as, destination included. The cost: inside
  a code span or block such a character shows with its backslash.
- :func:`code` for an id shown as inline code; :func:`badge_label` for ``st.badge``.

All of them also break the bare addresses GitHub-flavoured Markdown would turn into links
(``http://…``, ``www.…``, ``name@host.example``) with an invisible zero-width space, and
:func:`no_paths` cuts server paths out of error messages. The patterns are linear in the text.
"""

from __future__ import annotations

import re
from typing import Any

_ZWSP = "\u200b"  # invisible; breaks a bare address so it is not linked
_SCHEME_SLASHES = re.compile(r"://")
_WWW = re.compile(r"(?i)\b(www)\.")
_EMAIL_AT = re.compile(r"(?<=[\w.+-])@")

# CommonMark's ASCII punctuation that means something in Markdown or in Streamlit's extensions
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]()#+\-.!|<>~$:=^&@]")
_SNAKE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
# in model Markdown: the characters that open links, images, HTML, autolinks and formulas, each
# with the run of backslashes before it (an odd run already escapes it)
_MD_OPENERS = re.compile(r"(?<!\\)(\\*)([\[\]<$])")

_ABSOLUTE_PATH = re.compile(r"(?<![\w:/])/(?:[^\s/'\"`:]{1,255}/){1,64}([^\s/'\"`:,;]{0,255})")


def _no_autolinks(text: str) -> str:
    """``text`` with bare addresses broken by an invisible character, so none becomes a link."""
    text = _SCHEME_SLASHES.sub(f":{_ZWSP}//", text)
    text = _WWW.sub(lambda m: f"{m.group(1)}{_ZWSP}.", text)
    return _EMAIL_AT.sub(f"{_ZWSP}@", text)


def md(text: Any) -> str:
    """``text`` shown literally by ``st.markdown`` and the message boxes: every Markdown control
    character is escaped (so are list and heading markers at a line's start) and a line break
    stays a line break. Nothing in it links, loads or formats."""
    escaped = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), _no_autolinks(str(text)))
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "  \n")


def label(text: Any) -> str:
    """Model text for a widget label, an expander or a tab: one line, shown literally."""
    return md(" ".join(str(text).split()))


def name(text: Any) -> str:
    """An invariant's property for a label or a message: the schema makes it snake_case
    (``[a-z0-9]`` words joined by single ``_``, in which nothing is Markdown), shown as it is;
    anything else goes through :func:`label`."""
    text = str(text)
    return text if _SNAKE.fullmatch(text) else label(text)


def _escape_opener(m: re.Match[str]) -> str:
    slashes, char = m.group(1), m.group(2)
    return slashes + char if len(slashes) % 2 else f"{slashes}\\{char}"


def safe_markdown(text: Any) -> str:
    """Markdown from a model or a file for ``st.markdown``: headings, lists, tables, emphasis
    and code keep their formatting; no image loads, no link or autolink exists, no HTML or
    formula renders (every ``[``, ``]``, ``<`` and ``$`` is escaped; bare addresses are broken).
    An image or link shows as the text it was written as, so its destination is visible."""
    return _MD_OPENERS.sub(_escape_opener, _no_autolinks(str(text)))


def code(text: Any) -> str:
    """``text`` as one inline code span (literal whatever it holds: its fence is longer than
    any run of backticks inside, and spaces pad it where the text starts or ends with one)."""
    one_line = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def badge_label(text: Any) -> str:
    """Model text for ``st.badge``, which wraps its label in ``:color-badge[…]`` escaping only
    the brackets: brackets become parentheses, everything else is escaped by :func:`label`."""
    return label(str(text).replace("[", "(").replace("]", ")"))


def no_paths(message: str) -> str:
    """``message`` with server paths cut to their last part (``/srv/x/sessions/abc`` → ``…/abc``)."""
    return _ABSOLUTE_PATH.sub(lambda m: f"…/{m.group(1)}", message)
