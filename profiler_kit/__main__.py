from profiler_kit.cli import entry

entry()
