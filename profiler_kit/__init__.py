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

__version__ = "0.1.0"
