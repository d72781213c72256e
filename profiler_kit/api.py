"""The public facade: ``run``, ``analyze``, ``compare``, ``diff``.

The CLI and users' scripts call these; each imports what it needs when called, so
the analysis side never pulls in torch.
"""

from __future__ import annotations
