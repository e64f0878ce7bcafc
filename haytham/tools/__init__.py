"""Tools offered to stage agents."""
