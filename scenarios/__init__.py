"""Built-in scenarios, one module each (installed as ``profiler_kit.scenarios``)."""
