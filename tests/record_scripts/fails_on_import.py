"""A training script run where one of its dependencies is not installed: it imports torch,
then fails on its next import, before its first step (exit status 1, with python's
``ModuleNotFoundError: No module named 'nonexistent_module'``). The training loop it
would run (raises.py's) never starts."""

import torch  # noqa: F401, I001 - torch first: the script fails after importing it

import nonexistent_module  # noqa: F401
