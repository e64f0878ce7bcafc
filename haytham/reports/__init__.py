"""Reports on a session for people: the exports (Markdown, JSON, CSV), the PDF, the gate
history and the caveats and blockers they share."""
