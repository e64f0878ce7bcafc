"""Running sessions: the service every command and page calls, the workers and job queue of the
team deployment, live progress and a session's standing."""
