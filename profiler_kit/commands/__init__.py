"""One module per ``profkit`` command; importing a module registers its command.

Each module parses its own arguments, calls ``profiler_kit.api`` and hands the
result to a renderer. Modules import heavy dependencies inside their handlers, so
importing them all here is cheap. A new command needs only a new module here.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
