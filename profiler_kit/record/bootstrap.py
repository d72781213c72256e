"""``python bootstrap.py [--local-rank=N] (SCRIPT | -m MODULE) ARGS...``: run the script as
plain ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``) would, recorded.

Run by its path (so torchrun's workers and any Python with torch can run it): ``__name__``
is ``"__main__"``, ``sys.argv`` is the script's, ``sys.path[0]`` its folder (the working
folder for ``-m``), stdin, stdout and the working folder are untouched, and the exit status
and traceback are the script's own. Only the standard library is imported before the
script runs; the recorder's hooks go in when the script imports torch.
"""

from __future__ import annotations

import os
import signal
import sys


def _usage() -> None:
    sys.stderr.write("usage: bootstrap.py [--local-rank=N] (SCRIPT | -m MODULE) ARGS...\n")
    sys.exit(2)


def _find_profkit(here: str) -> None:
    """profiler_kit importable: from where it is installed, else from beside this file."""
    import importlib.util

    home = os.environ.get("PROFKIT_RECORD_HOME") or os.path.dirname(os.path.dirname(here))
    if importlib.util.find_spec("profiler_kit") is None and home not in sys.path:
        sys.path.append(home)


def _strip(tb, ours: set[str]):
    """The traceback without this file's and runpy's frames (as plain python shows it)."""
    while tb is not None and os.path.normcase(tb.tb_frame.f_code.co_filename) in ours:
        tb = tb.tb_next
    return tb


def _run_script(path: str, args: list[str]) -> None:
    import builtins
    import importlib.machinery
    import types

    full = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)  # as python
    sys.argv = [path, *args]
    if not os.path.isfile(full):  # a folder or a zip file with __main__.py
        import runpy

        runpy.run_path(path, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__file__ = full
    main.__cached__ = None
    main.__spec__ = None
    main.__package__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", full)
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    with open(full, "rb") as f:
        source = f.read()
    code = compile(source, full, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _run_module(name: str, args: list[str]) -> None:
    import runpy

    sys.argv = [name, *args]  # runpy sets argv[0] to the module's file, as python -m does
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    argv = sys.argv[1:]
    moved = []  # torch.distributed.launch passes --local-rank before the script's arguments
    while argv and argv[0].startswith(("--local-rank=", "--local_rank=")):
        moved.append(argv.pop(0))
    if not argv:
        _usage()
    module = None
    if argv[0] == "-m":
        if len(argv) < 2:
            _usage()
        module, args = argv[1], argv[2:]
    else:
        script, args = argv[0], argv[1:]
    args = [*moved, *args]
    # sys.path[0] is this file's folder: make it what python would have made it
    if sys.path and os.path.normcase(os.path.abspath(sys.path[0] or ".")) == \
            os.path.normcase(here):
        sys.path.pop(0)
    first = os.getcwd() if module else os.path.dirname(os.path.realpath(script))
    sys.path.insert(0, first)
    _find_profkit(here)
    from profiler_kit.record import hooks

    hooks.start(module or script)
    import runpy

    ours = {os.path.normcase(os.path.abspath(__file__)), os.path.normcase(runpy.__file__)}
    try:
        if module:
            _run_module(module, args)
        else:
            _run_script(script, args)
    except SystemExit as exc:
        hooks.finish(hooks._exit_status(exc), "exit", hooks.error_line(exc))
        raise
    except BaseException as exc:  # noqa: BLE001 - the script's error, shown as python shows it
        interrupted = isinstance(exc, KeyboardInterrupt)
        if interrupted:  # a second Ctrl-C (torchrun sends one too) must not cut the writing
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        tb = _strip(exc.__traceback__, ours)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        hooks.finish(130 if interrupted else 1, "interrupt" if interrupted else "exception",
                     hooks.error_line(exc))
        sys.stderr.flush()
        if interrupted:  # end as python does after an uncaught Ctrl-C: killed by SIGINT
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        sys.exit(1)
    hooks.finish(0, "exit")


if __name__ == "__main__":
    main()
