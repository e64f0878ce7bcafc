"""The agents' prompt files, installed as ``haytham.prompts`` and read through importlib.resources."""
