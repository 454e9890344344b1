"""Version numbers, in a module of their own so every layer can import them without importing
the package facade (``phasebench/__init__.py``)."""

__version__ = "0.1.0"
#: Bumped whenever generated data changes for the same spec and tokenizer.
GENERATOR_VERSION = "1"
