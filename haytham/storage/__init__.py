"""Where sessions live: the protocol every command uses, the sessions folder, the shared
PostgreSQL store, and the factory that picks one."""
