"""The pipeline: Burr graph, stage runner, context builder and session-file projection."""
