"""The measuring side: runs workloads under torch, times them, profiles them.

* :mod:`.runner` runs a scenario: every strategy at every point, checked, measured,
  recorded in the run folder;
* :mod:`.passes` measures one strategy in one process: the timing pass, then the
  profiled pass;
* :mod:`.timing` holds the timing loops, :mod:`.devices` synchronization and memory,
  :mod:`.equivalence` the check that strategies compute the same thing;
* :mod:`.distributed` runs multi-process strategies (and is what their workloads ask
  for their process group and device).

Importing this package imports nothing; its modules import torch.
"""
