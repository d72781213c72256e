"""``profkit memory`` as a user runs it: torch-free, JSON, snapshots, and bad input.

The snapshot here is written by hand to the format of ``torch.cuda.memory._snapshot()``
(no GPU records one here); nothing in it claims to be recorded.
"""

from __future__ import annotations

import gzip
import json
import pickle
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest
from raw_memory import in_trace_allocated

DATA = Path(__file__).parents[1] / "data"
CPU = DATA / "cpu_torch_profiler.pt.trace.json.gz"
NO_MEMORY = DATA / "a100_simple_add.json.gz"
MB = 1 << 20
USER = {"filename": "/home/u/train.py", "line": 42, "name": "forward"}
LIB = {"filename": "/x/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}


def profkit(*args: str) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-m", "profiler_kit", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def _snapshot(frames: bool = True) -> dict:
    f1 = [LIB, USER] if frames else []

    def block(addr, size, state):
        return {"address": addr, "size": size, "requested_size": size, "state": state,
                "frames": f1 if state != "inactive" else []}

    seg0 = {"device": 0, "address": 0, "total_size": 20 * MB, "allocated_size": 12 * MB,
            "stream": 0, "segment_type": "large",
            "blocks": [block(0, 8 * MB, "active_allocated"), block(8 * MB, 2 * MB, "inactive"),
                       block(10 * MB, 4 * MB, "active_allocated"),
                       block(14 * MB, 6 * MB, "inactive")]}
    seg1 = {"device": 0, "address": 1 << 30, "total_size": 10 * MB, "allocated_size": 0,
            "stream": 0, "segment_type": "large", "blocks": [block(1 << 30, 10 * MB, "inactive")]}
    oom = {"action": "oom", "addr": 0, "size": 30 * MB, "stream": 0, "frames": f1,
           "device_free": 5 * MB}
    return {"segments": [seg0, seg1], "device_traces": [[oom]]}


def test_memory_never_imports_torch():
    code = ("import sys; from profiler_kit.cli import main; "
            f"rc = main(['memory', '--json', '-', {str(CPU)!r}]); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "profkit.memory/1"
    # the peak against a walk of the raw events by address, here without profkit; this
    # trace is its process's first profiling session, so PyTorch's "Total Allocated" agrees
    events = json.loads(gzip.decompress(CPU.read_bytes()))["traceEvents"]
    mem = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    most = max(in_trace_allocated(e["args"] for e in mem))
    (peak,) = doc["strategies"][0]["peaks"]
    assert peak["peak_allocated_bytes"] == most
    assert most == max(e["args"]["Total Allocated"] for e in mem)


def test_snapshot_fragmentation_advice_and_oom(tmp_path):
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(_snapshot()))
    r = profkit("memory", str(path), "--json", str(tmp_path / "m.json"))
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "m.json").read_text())["strategies"][0]
    (frag,) = s["snapshot"]["fragmentation"]
    # by hand: 30 MB reserved, 12 MB in live blocks, free blocks of 2, 6 and 10 MB
    assert (frag["reserved_bytes"], frag["allocated_bytes"], frag["largest_free_bytes"]) == (
        30 * MB, 12 * MB, 10 * MB)
    # every live block came from train.py:42, behind a torch frame that is folded
    assert s["snapshot"]["live_sites"] == [
        {"site": "/home/u/train.py:42 (forward)", "bytes": 12 * MB, "blocks": 2}]
    remedies = {a["remedy"]: a["evidence"] for a in s["advice"]}
    # 18 of 30 MB free; 8 of those 18 in blocks under the 8 MB live block: 44 %
    assert "44%" in remedies["expandable_segments"]
    assert "18.0 MiB of 30.0 MiB" in remedies["expandable_segments"]
    # the 10 MB segment holds nothing live: a third of the reserve
    assert "1 segment(s) of 10.0 MiB (33% of reserved)" in remedies["empty_cache"]
    (oom,) = s["snapshot"]["oom_events"]
    assert (oom["requested_bytes"], oom["device_free_bytes"]) == (30 * MB, 5 * MB)
    assert "OUT OF MEMORY" in r.stdout and "train.py:42" in r.stdout


def test_bad_inputs_one_line_each_and_the_rest_goes_on(tmp_path):
    folder = tmp_path / "strategy"
    folder.mkdir()
    whole = pickle.dumps(_snapshot())
    (folder / "truncated.pickle").write_bytes(whole[: len(whole) // 2])
    (folder / "foreign.pkl").write_bytes(pickle.dumps(OrderedDict(a=1)))
    (folder / "nostack.pickle").write_bytes(pickle.dumps(_snapshot(frames=False)))
    (folder / "gpu.json.gz").write_bytes(NO_MEMORY.read_bytes())
    (folder / "cpu.pt.trace.json.gz").write_bytes(CPU.read_bytes())
    r = profkit("memory", str(folder))
    assert r.returncode == 1
    warnings = [x for x in r.stderr.splitlines() if x.startswith("profkit: warning:")]
    assert all(x.startswith("profkit: ") for x in r.stderr.splitlines())  # no traceback
    said = "\n".join(warnings)
    assert "foreign.pkl: not an allocator snapshot pickle (refuses to load" in said
    # a trace profiled without memory is said beside the rest, not as a broken file
    assert "gpu.json.gz" not in r.stderr
    assert f"  no memory events in {folder / 'gpu.json.gz'} (profile_memory was off" in r.stdout
    # one snapshot per strategy is read: the first (foreign), the others are named
    assert "nostack.pickle: left out" in said and "truncated.pickle: left out" in said
    assert "peak allocated" in r.stdout  # the CPU trace still analyzed
    r = profkit("memory", str(folder / "truncated.pickle"))  # nothing else: bad input
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith("profkit: error: ")
    assert "truncated.pickle: not an allocator snapshot pickle" in line
    # usable without stacks: the fragmentation is there, the sites cannot be named
    r = profkit("memory", str(folder / "nostack.pickle"))
    assert r.returncode == 0
    (line,) = r.stderr.splitlines()
    assert line.startswith("profkit: note:") and "without stacks" in line
    assert "largest free block 10 MiB" in r.stdout


def test_nothing_memory_reads_is_bad_input_one_line_and_exit_2(tmp_path):
    """As in analyze: an empty folder, a JSON file that is not a trace (a real DDP-style
    report of no trace), or an empty .json is one error line, exit 2, and no report."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "notrace.json").write_text(json.dumps({"schema": "mine", "rows": [1, 2]}))
    (tmp_path / "blank.json").write_text("")
    cases = {empty: f"profkit: error: {empty}: no traces, memory categories or allocator "
                    "snapshots found",
             tmp_path / "notrace.json": f"profkit: error: {tmp_path / 'notrace.json'}: not a "
                                        "trace, a memory categories file "
                                        "(*.memory_categories.json) or an allocator snapshot "
                                        "pickle",
             tmp_path / "blank.json": f"profkit: error: {tmp_path / 'blank.json'}: not a trace"}
    for path, said in cases.items():
        r = profkit("memory", str(path))
        assert r.returncode == 2 and r.stdout == "", (path, r.stdout)
        (line,) = r.stderr.splitlines()
        assert line.startswith(said), line
    analyzed = profkit("analyze", str(empty))
    assert analyzed.returncode == 2 and len(analyzed.stderr.splitlines()) == 1


def test_the_main_jobs_run_threaded_strategies_say_why_in_one_line(tmp_path):
    """`profkit memory RUN` on `profkit run concurrent --amp`: the threaded strategies were
    profiled with profile_all_threads and have no memory events; each says so in one line,
    the others' results stand and the exit status is 0."""
    from concurrent_run import concurrent_run

    run = concurrent_run(tmp_path / "run")
    r = profkit("memory", str(run))
    assert r.returncode == 0, r.stderr
    why = ("no memory events (its ops run in worker threads, profiled with "
           "profile_all_threads, which records none)")
    assert f"threads: {why}" in r.stdout.splitlines()
    assert f"threads+amp: {why}" in r.stdout.splitlines()
    assert r.stdout.count("peak allocated in the trace") == 2  # sequential and its AMP twin
    assert "warning" not in r.stderr
    # traces profkit recorded: the note names profkit's flag, not torch's argument
    notes = r.stderr.splitlines()
    assert len(notes) == 2 and all("no Python stacks (record them with profkit run "
                                   "--with-stack)" in n for n in notes)
    assert "with_stack=True" not in r.stderr
    # a strategy folder of the run alone has nothing to show: exit 1, saying why
    r = profkit("memory", str(run / "threads"))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [f"threads: {why}"]
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"profkit: warning: nothing about memory to show in {run / 'threads'}")


def test_a_trace_from_elsewhere_names_both_ways_to_record_stacks():
    r = profkit("memory", str(CPU))
    assert r.returncode == 0
    (line,) = r.stderr.splitlines()
    assert "(record them with profkit run --with-stack, or torch.profiler's " \
           "with_stack=True)" in line
    r = profkit("memory", str(NO_MEMORY))
    assert r.returncode == 1  # nothing to show
    assert r.stdout.strip() == f"{NO_MEMORY.name}: no memory events (profile_memory was off, " \
                               "or the profiler followed every thread with profile_all_threads, " \
                               "which records none)"
    assert r.stderr.startswith("profkit: warning: nothing about memory to show")


def test_json_never_overwrites_an_input(tmp_path):
    trace = tmp_path / "t.pt.trace.json.gz"
    trace.write_bytes(CPU.read_bytes())
    r = profkit("memory", str(trace), "--json", str(trace))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert trace.read_bytes() == CPU.read_bytes()


@pytest.mark.parametrize("size,expected", [("80GiB", 80 << 30), ("24G", 24 << 30),
                                           ("512M", 512 << 20), ("1000", 1000)])
def test_device_memory_sizes(size, expected):
    from profiler_kit.commands.memory import device_memory

    assert device_memory(size) == expected
