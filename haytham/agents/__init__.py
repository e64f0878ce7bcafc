"""The one structured model call every agent makes, and the context it reads (stages, intake,
verifiers, receiving-stage validation, change requests)."""
