"""An optimizer that takes a closure (L-BFGS) is one step per ``optimizer.step(closure)``:
the closure's ``backward()`` calls, twenty in each step, are part of that step, not steps
of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from profiler_kit.record.hooks import Recorder

SCRIPTS = Path(__file__).parents[1] / "record_scripts"
PY = sys.executable


def _steps(events: list[dict]) -> list[dict]:
    return sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")
                   and e.get("ph") == "X"), key=lambda e: e["ts"])


def _inside(events: list[dict], span: dict, name: str) -> list[dict]:
    end = span["ts"] + span["dur"]
    return [e for e in events if e.get("name") == name and e.get("ph") == "X"
            and span["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= end]


def test_lbfgs_each_step_with_its_closure_is_one_step(tmp_path):
    folder = tmp_path / "lbfgs"
    r = subprocess.run([PY, "-m", "profiler_kit", "record", "--wait", "2", "--warmup", "1",
                        "--active", "2", "-o", str(folder), str(SCRIPTS / "lbfgs.py"),
                        "--iterations", "8"], capture_output=True, text=True, timeout=240,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    printed = [line.split() for line in r.stdout.splitlines() if line.startswith("iteration")]
    evals = {int(words[1]): int(words[3]) for words in printed}
    assert list(evals) == [0, 1, 2, 3]  # stopped after step 4's optimizer step
    assert all(n > 3 for n in evals.values())  # the closure ran many times in each step
    rec = json.loads((folder / "record.json").read_text())
    assert rec["steps"]["source"] == "optimizer"
    assert rec["steps"]["found_by"] == "optimizer steps (LBFGS)"
    assert rec["steps"]["captured"] == [[3, 4]] and rec["steps"]["complete"]
    assert rec["steps"]["completed"] == 5 == rec["steps"]["seen"]["optimizer"]
    assert rec["steps"]["seen"]["backward"] > sum(evals.values())  # and step 4's
    assert "steps found: optimizer steps (LBFGS)" in r.stderr
    assert "recorded steps 3-4 (2 steps)" in r.stderr
    events = json.loads((folder / "main.pt.trace.json").read_text())["traceEvents"]
    spans = _steps(events)
    assert [s["name"] for s in spans] == ["ProfilerStep#3", "ProfilerStep#4"]
    for span in spans:  # one optimizer step, every call of its closure inside it
        assert len(_inside(events, span, "Optimizer.step#LBFGS.step")) == 1, span["name"]
        forward = len(_inside(events, span, "aten::mse_loss"))
        backward = len(_inside(events, span, "autograd::engine::evaluate_function: "
                                             "MseLossBackward0"))
        assert forward == backward > 3, span["name"]
    assert len(_inside(events, spans[0], "aten::mse_loss")) == evals[3]  # step 3: iteration 3


def _recorder(tmp_path: Path) -> Recorder:
    return Recorder({"wait": 100}, str(tmp_path), "train.py")  # never captures: no torch


def test_what_an_optimizer_step_calls_is_part_of_it(tmp_path):
    """backward() calls, DataLoader batches and other optimizers' steps made while an
    optimizer step runs (its closure, a wrapping optimizer) mark no step of their own."""
    rec = _recorder(tmp_path)
    outer, inner = object(), object()
    for _ in range(4):
        rec.step_depth += 1
        for _ in range(20):
            rec.on_batch()
            rec.on_backward()
        rec.on_optimizer_step(inner)  # a wrapped optimizer, stepped by the outer one
        rec.step_depth -= 1
        rec.on_optimizer_step(outer)
    assert rec.source == "optimizer" and rec.completed == 4
    assert rec.seen["backward"] == 80 and rec.seen["optimizer"] == 8
    assert rec.opt_order == [id(outer)]  # one optimizer: the outer one


def test_backward_outside_an_optimizer_step_still_marks_steps(tmp_path):
    rec = _recorder(tmp_path)
    for _ in range(3):
        rec.on_backward()
    assert rec.source == "backward" and rec.completed == 3


def test_two_threads_each_stepping_their_own_optimizer_make_every_step(tmp_path):
    """60 iterations of two threads, each with its own Adam: 60 steps (a count of steps
    under way shared by the threads dropped 3 to 5 of them)."""
    folder = tmp_path / "threads"
    r = subprocess.run([PY, "-m", "profiler_kit", "record", "--keep-running", "-o",
                        str(folder), str(SCRIPTS / "two_threads.py")], capture_output=True,
                       text=True, timeout=240, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    steps = json.loads((folder / "record.json").read_text())["steps"]
    assert steps["seen"]["optimizer"] == 120 and steps["completed"] == 60


def test_another_threads_step_under_way_is_no_part_of_this_ones(tmp_path):
    """One thread's step ending while another thread's is under way is a step of its own:
    the count of steps under way is per thread."""
    import threading

    rec = _recorder(tmp_path)
    first, second = object(), object()
    inside = threading.Event()
    done = threading.Event()

    def other_thread() -> None:
        rec.step_depth += 1  # its step under way...
        inside.set()
        done.wait(5)
        rec.step_depth -= 1

    t = threading.Thread(target=other_thread)
    t.start()
    inside.wait(5)
    rec.on_optimizer_step(first)  # ...while this thread's step ends: counted
    done.set()
    t.join()
    rec.on_optimizer_step(second)
    assert rec.seen["optimizer"] == 2 and set(rec.opt_order) == {id(first), id(second)}
