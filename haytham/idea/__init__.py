"""The founder's idea before the pipeline: checks on its text, and the intake step that asks
clarifying questions."""
