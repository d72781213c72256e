"""profkit: which way of running this work in parallel is fastest on my hardware, and why?

The package is split in layers that never reach across:

* measuring (``scenario``, ``runner``, ``timing``, ``devices``, ``distributed``) imports torch;
* analyzing (``trace``, ``analysis``) reads Chrome traces and never imports torch;
* rendering (``render``) formats results and never computes them.
"""

__version__ = "0.1.0"
