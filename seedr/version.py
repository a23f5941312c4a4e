"""seedr's version, written once: the package metadata (pyproject.toml), ``seedr --version``, every run's
record and every experiment step's key read it from here."""

__version__ = "0.1.0"
