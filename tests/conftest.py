"""The tests mirror the packages (trace/, analysis/, render/, measure/, commands/,
scenarios/; the project-wide checks stay here). pytest puts this folder on ``sys.path``
because this file is in it, so the helper modules beside it (``real_traces``,
``tb_reference``, ``two_hosts``, ``multihost_runs``...) import by name from every folder,
and the real traces they read stay in ``data/``."""
