"""What people take away: Markdown/JSON exports, the PDF reports, the gate history, and the
plain-language names of blockers and caveats."""
