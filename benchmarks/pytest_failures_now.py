"""A pytest plugin that prints each failure's traceback the moment it happens, so that a run
cut short by a time limit (a GPU machine lent for minutes) still says why each test failed:

    PYTHONPATH=benchmarks python -m pytest -p pytest_failures_now ...
"""

import sys


def pytest_runtest_logreport(report) -> None:
    if report.failed:
        sys.__stdout__.write(f"\n--- FAILED {report.nodeid} ({report.when})\n"
                             f"{report.longreprtext}\n--- end of {report.nodeid}\n")
        sys.__stdout__.flush()
