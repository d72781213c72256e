"""profkit: which way of running this work in parallel is fastest on my hardware, and why?

The package is split in layers that never reach across:

* contracts, torch-free (``scenario``, ``results``, ``errors``, ``artifacts``,
  ``scenario_info``): what a scenario, a workload and a run's results are;
* measuring (``measure``: the runner, the timing and profiled passes, devices, the
  equivalence check, and ``measure.distributed`` for multi-process strategies) imports
  torch and never imports the renderers;
* analyzing (``trace``, ``analysis``) reads Chrome traces and never imports torch;
* rendering (``render``) formats results and never computes them;
* ``api`` and ``commands`` (the ``profkit`` command line, ``cli``) call into one layer
  at a time, importing each when needed.
"""

from profiler_kit.version import __version__ as __version__

# The notebook's entry points (``import profiler_kit as pk; pk.load(path)``), imported on
# first use so that ``import profiler_kit`` stays light.
_NOTEBOOK = ("load", "compare", "Trace", "Traces")


def __getattr__(name: str):  # noqa: ANN202 - module attribute hook
    if name in _NOTEBOOK:
        from profiler_kit import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'profiler_kit' has no attribute {name!r}")
