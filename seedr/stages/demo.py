"""`seedr demo`: not built yet."""

from seedr.stages.common import not_built


def command() -> None:
    """Not built yet."""
    not_built("demo")
