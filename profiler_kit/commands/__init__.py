"""One module per ``profkit`` command; importing a module registers its command.

Each module parses its own arguments, calls ``profiler_kit.api`` and hands the
result to a renderer. Modules import heavy dependencies inside their handlers, so
importing them all is cheap. A new command is a new module here, named in
``cli._register_commands``.
"""
