"""One module per ``profkit`` command; importing a module registers its command.

Each module parses its own arguments, calls ``profiler_kit.api`` and hands the
result to a renderer. Modules import heavy dependencies inside their handlers.
"""

from profiler_kit.commands import (  # noqa: F401  (imported for registration)
)
