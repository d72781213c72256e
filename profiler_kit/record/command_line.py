"""The user's command (``python train.py ARGS``, ``python -m pkg.mod``, ``torchrun ...
train.py``, or ``train.py ARGS`` alone), checked and rewritten so that every Python process
of the job starts through :mod:`.bootstrap`. Torch-free: torchrun's options are known by
name, so that its parser (which imports torch) is not needed."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from profiler_kit.errors import UsageError

BOOTSTRAP = str(Path(__file__).with_name("bootstrap.py"))
USAGE = ("profkit record -- python SCRIPT ARGS (or python -m MODULE, or torchrun ... SCRIPT), "
         "or profkit record SCRIPT ARGS")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?(\.exe)?$")
# python's options that take a value (attached or as the next word); -c and - are not scripts
_PY_VALUE = set("WX")
# torchrun's options that take no value (torch.distributed.run's parser, and
# torch.distributed.launch's --use-env); every other option takes one
_TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--no_python",
                   "--run-path", "--run_path", "--virtual-local-rank",
                   "--virtual_local_rank", "--use-env", "--use_env", "-h", "--help"}
_TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")


@dataclass(frozen=True)
class Target:
    """What runs: ``argv`` is the rewritten command, ``given`` the user's."""

    kind: str  # "script", "module" or "torchrun"
    argv: list[str]
    given: list[str]
    script: str  # the script's path or the module's name
    module: bool = False

    @property
    def name(self) -> str:
        """A folder name for the recording: the script's stem or the module's last part."""
        stem = self.script.rsplit(".", 1)[-1] if self.module else Path(self.script).stem
        if stem == "__main__" and not self.module:
            stem = Path(self.script).resolve().parent.name
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) or "script"


def parse(command: list[str]) -> Target:
    """The user's command, checked (a missing script, a command that is not Python: one
    ``UsageError`` line each) and rewritten to start through the bootstrap."""
    command = list(command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError(f"name the script to record: {USAGE}")
    head = command[0]
    base = os.path.basename(head)
    if base in ("torchrun", "torchrun.exe"):
        _executable(head)
        return _torchrun(command, [head], command[1:])
    if _PYTHON.match(base):
        _executable(head)
        opts, rest = _python_options(command[1:], head)
        if rest[:1] == ["-m"] and len(rest) > 1 and rest[1] in _TORCHRUN_MODULES:
            return _torchrun(command, [head, *opts, "-m", rest[1]], rest[2:])
        module, script, args = _script_or_module(rest, head)
        boot = ["-m", module] if module else [script]
        return Target("module" if module else "script", [head, *opts, BOOTSTRAP, *boot, *args],
                      command, module or script, module is not None)
    if head.startswith("-"):
        raise UsageError(f"{head}: an option where the command should be (options of "
                         f"profkit record go before --); {USAGE}")
    if _is_python_file(head):  # the short form: profkit record train.py ARGS
        _check_script(head)
        return Target("script", [sys.executable, BOOTSTRAP, *command], command, head)
    if not os.path.exists(head) and shutil.which(head) is None:
        if head.endswith(".py"):
            _check_script(head)
        raise UsageError(f"{head}: no such file or command; {USAGE}")
    raise UsageError(f"{head}: not a Python command; profkit record runs Python scripts: "
                     f"{USAGE}")


def _executable(name: str) -> None:
    if os.sep in name:
        if not os.access(name, os.X_OK):
            raise UsageError(f"{name}: no such executable")
    elif shutil.which(name) is None:
        raise UsageError(f"{name}: command not found")


def _is_python_file(path: str) -> bool:
    if path.endswith((".py", ".pyw")):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _check_script(path: str) -> None:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file (the script to record)")
    if p.is_dir() and not (p / "__main__.py").exists():
        raise UsageError(f"{path}: a folder without __main__.py, not a script")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{path}: permission denied (cannot read the script)")


def _python_options(words: list[str], python: str) -> tuple[list[str], list[str]]:
    """Split ``python``'s own options (-u, -O, -X dev, -W error...) from the rest."""
    opts: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            return opts, words[i + 1:]
        if not w.startswith("-") or w == "-":
            break
        if w == "-m" or w.startswith("-m") or w == "-c" or w.startswith("-c"):
            break
        if w.startswith("--"):  # --version, --help and the like: not a script to run
            raise UsageError(f"{python} {w}: runs no script; {USAGE}")
        letters = w[1:]
        for j, c in enumerate(letters):
            if c in "mc":  # -um MODULE: the options, then -m
                if j:
                    opts.append("-" + letters[:j])
                return opts, ["-" + letters[j:], *words[i + 1:]]
            if c in _PY_VALUE:
                if j == len(letters) - 1:
                    if i + 1 >= len(words):
                        raise UsageError(f"{python} -{c}: needs a value")
                    opts += [w, words[i + 1]]
                    i += 1
                else:
                    opts.append(w)
                break
        else:
            opts.append(w)
        i += 1
    return opts, words[i:]


def _script_or_module(rest: list[str], python: str) -> tuple[str | None, str, list[str]]:
    """(module, script, args) of what follows python's options."""
    if not rest:
        raise UsageError(f"{python} without a script: nothing to record; {USAGE}")
    w = rest[0]
    if w == "-m" or (w.startswith("-m") and len(w) > 2):
        module = w[2:] if len(w) > 2 else (rest[1] if len(rest) > 1 else "")
        args = rest[1:] if len(w) > 2 else rest[2:]
        if not module:
            raise UsageError(f"{python} -m: needs a module name")
        _check_module(module)
        return module, module, args
    if w.startswith("-c"):
        raise UsageError(f"{python} -c: profkit record runs scripts and modules, not -c code; "
                         "put the code in a file")
    if w == "-":
        raise UsageError(f"{python} -: profkit record cannot run a script from stdin; "
                         "give its file")
    _check_script(w)
    return None, w, rest[1:]


def _check_module(name: str) -> None:
    """The module's top-level package can be found (without importing anything)."""
    from importlib.machinery import PathFinder

    top = name.split(".")[0]
    if top in sys.builtin_module_names:
        return
    if PathFinder.find_spec(top, [os.getcwd(), *sys.path]) is None:
        raise UsageError(f"-m {name}: no module named {top!r} here (run from the folder "
                         "that holds it, or install it)")


def _torchrun(command: list[str], launcher: list[str], words: list[str]) -> Target:
    """``torchrun [options] SCRIPT ARGS``: each worker's entry point becomes the bootstrap."""
    opts: list[str] = []
    module = no_python = False
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-"):
            break
        name = w.split("=", 1)[0]
        if name in ("-h", "--help"):
            raise UsageError(f"{' '.join(launcher)} {w}: runs no script; {USAGE}")
        if name in ("-m", "--module"):
            module = True
        elif name in ("--no-python", "--no_python"):
            no_python = True
            opts.append(w)
        elif name in _TORCHRUN_FLAGS or "=" in w:
            opts.append(w)
        else:  # an option with its value as the next word
            if i + 1 >= len(words):
                raise UsageError(f"{' '.join(launcher)} {w}: needs a value")
            opts += [w, words[i + 1]]
            i += 1
        i += 1
    rest = words[i:]
    if not rest:
        raise UsageError(f"{' '.join(launcher)} without a training script: nothing to record; "
                         f"{USAGE}")
    if no_python:  # the entry point is a program: Python, or not for profkit
        exe = rest[0]
        if not _PYTHON.match(os.path.basename(exe)):
            raise UsageError(f"{exe}: not a Python command (torchrun --no-python); {USAGE}")
        py_opts, after = _python_options(rest[1:], exe)
        mod, script, args = _script_or_module(after, exe)
        boot = ["-m", mod] if mod else [script]
        argv = [*launcher, *opts, exe, *py_opts, BOOTSTRAP, *boot, *args]
        return Target("torchrun", argv, command, mod or script, mod is not None)
    script, args = rest[0], rest[1:]
    if module:
        _check_module(script)
        argv = [*launcher, *opts, BOOTSTRAP, "-m", script, *args]
    else:
        _check_script(script)
        argv = [*launcher, *opts, BOOTSTRAP, script, *args]
    return Target("torchrun", argv, command, script, module)
