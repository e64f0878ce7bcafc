"""Model and file text made safe for where it is shown: a terminal, a table cell, a spreadsheet.

Everything a model writes is data. On a terminal an escape sequence in it could clear the
screen, retitle the window or print a link that says one thing and opens another; in a
spreadsheet a cell that starts with ``=`` is a formula; in a Markdown table a line break ends the
row. Each function here neutralises one of these and keeps the text readable.
"""

from __future__ import annotations

import re

# ESC [ … final byte (CSI), ESC ] … BEL or ESC \ (OSC), other two-byte ESC sequences, and the
# 8-bit CSI / OSC introducers with their parameters.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC (hyperlinks, titles); unterminated: only ESC goes
    r"|\x1b[@-Z\\-_]"  # two-byte sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)"  # 8-bit OSC
)
# C0 controls but tab and newline, DEL, C1 controls; carriage returns are handled first.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences or control characters (newlines and tabs kept).

    A carriage return becomes a newline (``\\r\\n`` one newline), so text cannot overprint itself.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ANSI.sub("", text))


def one_line(text: str) -> str:
    """``text`` on one line (any line break becomes a space), for a table cell or a label."""
    return " ".join(terminal_safe(text).split("\n")).strip()


def spreadsheet_cell(value: object) -> object:
    """A CSV cell a spreadsheet will show as text, per OWASP's CSV-injection guidance.

    A cell whose first character (after leading spaces) is ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return would be evaluated as a formula by Excel, LibreOffice or Google Sheets; a
    leading single quote makes it text and is itself not displayed. Other cells and non-text
    values are returned unchanged (escape sequences and control characters are dropped).
    """
    if not isinstance(value, str):
        return value
    text = terminal_safe(value)
    if value.lstrip(" ").startswith(FORMULA_LEADS) or text.lstrip().startswith(FORMULA_LEADS):
        return "'" + text
    return text
