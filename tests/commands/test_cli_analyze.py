"""``profkit analyze`` and ``profkit compare`` end to end, in a subprocess like a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "data"
DDP = DATA / "a100_ddp_nccl_rank0.json.gz"
CPU = DATA / "cpu_torch_profiler.pt.trace.json.gz"


def profkit(*args: str, width: int = 100) -> subprocess.CompletedProcess:
    env = {"COLUMNS": str(width), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-m", "profiler_kit", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def python_c(code: str) -> str:
    """What ``python -c code`` prints, in a fresh process (nothing imported yet)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_analyze_never_imports_torch():
    code = ("import sys; from profiler_kit.cli import main; "
            f"rc = main(['analyze', '--json', '-', {str(DDP)!r}]); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    out = python_c(code)
    assert json.loads(out)["schema"] == "profkit.analysis/3"


def test_the_parser_imports_no_analysis():
    """Every command's module is imported to build the parser: none of them may pull in
    numpy, the analyses or the regression gate (``analyze`` paid 0.6 s for compare's)."""
    code = ("import sys; from profiler_kit.cli import build_parser, commands; "
            "[build_parser([name]) for name in commands()]; "
            "print([m for m in ('numpy', 'msgspec', 'rich', 'torch', 'profiler_kit.analysis', "
            "'profiler_kit.commands.regression_gate') if m in sys.modules])")
    out = python_c(code)
    assert out.strip() == "[]"


def test_a_named_command_imports_its_module_alone():
    """``profkit analyze`` builds its own parser only, from its own module: the other
    eleven command modules stay unimported (2 ms of every run)."""
    code = ("import sys; from profiler_kit.cli import build_parser; "
            "build_parser(['analyze', 'x.json']); "
            "print(sorted(m for m in sys.modules if m.startswith('profiler_kit.commands.')))")
    assert python_c(code).strip() == "['profiler_kit.commands.analyze']"


def test_analyze_leaves_numpy_ma_unimported():
    """numpy imports ``numpy.ma`` (20 to 30 ms with its tokenizer) on the first
    ``np.unique``, ``np.percentile`` or float ``np.median``: the analyses use the
    helpers in ``analysis.core.arrays`` instead, on real traces' every path (a sorting
    ``np.isin`` imports it too: the collectives of a 16-rank recommender job, the
    DataLoader's pinned copies of a CPU-bound loader)."""
    traces = [DDP, DATA / "a100_recsys_16gpu_rank0.json.gz",
              DATA / "cpu_slow_loader_workers0.pt.trace.json.gz"]
    code = ("import sys, io, contextlib; from profiler_kit.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    for trace in {[str(t) for t in traces]!r}:\n"
            "        main(['analyze', trace, '--json'])\n"
            "print('numpy.ma' in sys.modules, 'numpy' in sys.modules)")
    out = python_c(code)
    assert out.split() == ["False", "True"]


def test_analyze_prints_the_console_report():
    r = profkit("analyze", str(DDP))
    assert r.returncode == 0, r.stderr
    assert "GPU time by class" in r.stdout and "Recommendations" in r.stdout


def test_json_to_a_file_and_markdown(tmp_path):
    out, md = tmp_path / "a.json", tmp_path / "report.md"
    r = profkit("analyze", str(CPU), "--json", str(out), "--markdown", str(md))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["traces"][0]["memory"]["recorded"] is True
    cpu = doc["traces"][0]["memory"]["devices"][0]
    assert cpu["device"] == "cpu" and cpu["peak_allocated_bytes"] > 0
    assert cpu["peak_reserved_bytes"] is None  # the CPU allocator's 0 says nothing
    assert md.read_text().startswith("# profkit analysis")
    assert "CPU ops by self time" in r.stdout  # the console report still prints


def test_folder_with_one_trace_per_rank_shows_each_rank_and_compares(tmp_path):
    run = tmp_path / "run" / "ddp"
    run.mkdir(parents=True)
    for rank in (0, 1):
        shutil.copy(DDP, run / f"worker{rank}.pt.trace.json.gz")
    (tmp_path / "run" / "run.json").write_text("{}")  # not a trace: left out
    r = profkit("analyze", str(tmp_path / "run"), "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [t["label"] for t in doc["traces"]] == ["worker0", "worker1"]
    assert doc["comparison"]["labels"] == ["worker0", "worker1"]


def test_traces_analyzed_in_parallel_give_the_same_document(tmp_path):
    for rank, src in enumerate((DDP, CPU, DDP)):
        shutil.copy(src, tmp_path / f"worker{rank}.pt.trace.json.gz")
    one, two = (profkit("analyze", str(tmp_path), "--json", "-", "--jobs", n) for n in "12")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout
    assert [t["label"] for t in json.loads(two.stdout)["traces"]] == [
        "worker0", "worker1", "worker2"]


def test_a_bad_trace_among_several_is_one_line_in_parallel(tmp_path):
    """Named in one warning line; the others are still analyzed (exit 1)."""
    shutil.copy(DDP, tmp_path / "a.pt.trace.json.gz")
    (tmp_path / "b.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", ')
    shutil.copy(CPU, tmp_path / "c.pt.trace.json.gz")
    r = profkit("analyze", str(tmp_path), "--jobs", "2", "--json", "-")
    assert r.returncode == 1
    assert r.stderr.startswith("profkit: warning: ") and "b.pt.trace.json" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert [t["label"] for t in json.loads(r.stdout)["traces"]] == ["a", "c"]


def test_forking_only_from_a_single_threaded_process():
    code = ("import threading; from profiler_kit.trace.forking import may_fork as s; "
            "a = s(); e = threading.Event(); t = threading.Thread(target=e.wait); t.start(); "
            "b = s(); e.set(); t.join(); print(a, b)")
    env = {"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.stdout.split() == ["True", "False"], r.stderr


def test_compare_with_baseline(tmp_path):
    for name, src in (("sequential", DDP), ("streams", CPU)):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "w.pt.trace.json.gz")
    r = profkit("compare", str(tmp_path / "sequential"), str(tmp_path / "streams"),
                "--baseline", "streams", width=140)
    assert r.returncode == 0, r.stderr
    assert "Comparison (baseline: streams" in r.stdout
    assert "step time (median)" in r.stdout and "sequential" in r.stdout
    assert "GPU time by class" not in r.stdout  # compare shows the table only
    r = profkit("compare", str(tmp_path / "sequential"), "--baseline", "nope")
    assert r.returncode == 2 and "nope" in r.stderr


def test_compare_says_its_inputs_are_one_file_and_that_the_gate_passed(tmp_path):
    """A trace with itself (the same path twice, or two names of one file) is one warning
    line; a gate that passes says so in one line on stderr, the JSON on stdout as it was."""
    r = profkit("compare", str(CPU), str(CPU))
    assert r.returncode == 0 and "Comparison" in r.stdout
    assert r.stderr.splitlines() == [f"profkit: warning: {CPU} is given twice: the two inputs "
                                     "are the same file, so there is nothing to compare it with"]
    other_name = tmp_path / "again.pt.trace.json.gz"
    other_name.symlink_to(CPU)
    r = profkit("compare", str(CPU), str(other_name))
    assert r.stderr.splitlines() == [f"profkit: warning: {CPU} and {other_name} are the same "
                                     "file, so there is nothing to compare it with"]
    slower = DATA / "cpu_only_gloo.json.gz"  # 210 ms a step, against 153 ms: no regression
    r = profkit("compare", str(slower), str(CPU), "--fail-on-regression", "5", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["comparison"]["labels"]
    assert r.stderr.splitlines() == [
        "profkit: no regression beyond 5%: the regression gate passed"]


@pytest.mark.parametrize("make", ["missing", "empty", "not_json", "not_trace", "empty_dir"])
def test_bad_inputs_are_one_line_and_exit_2(tmp_path, make):
    target = tmp_path / "t.json"
    if make == "empty":
        target.write_text("")
    elif make == "not_json":
        target.write_text("{nope")
    elif make == "not_trace":
        target.write_text('{"hello": 1}')
    elif make == "empty_dir":
        target = tmp_path / "nothing_here"
        target.mkdir()
    r = profkit("analyze", str(target))
    assert r.returncode == 2
    assert r.stderr.startswith("profkit: error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def test_refuses_to_overwrite_an_input_trace(tmp_path):
    trace = tmp_path / "t.json.gz"
    shutil.copy(CPU, trace)
    r = profkit("analyze", str(trace), "--json", str(trace))
    assert r.returncode == 2 and "refusing" in r.stderr
    assert trace.read_bytes() == CPU.read_bytes()


def test_odd_events_are_skipped_and_counted_in_the_output(tmp_path):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "no_dur", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
         "args": {"device": 0, "stream": 7, "correlation": 1}},
    ]
    trace = tmp_path / "odd.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    r = profkit("analyze", str(trace), "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)["traces"][0]
    assert sum(doc["skipped"].values()) == 1
    assert [k["name"] for k in doc["kernels"]] == ["k"]
    r = profkit("analyze", str(trace))
    assert "Events skipped: 1" in r.stdout


def test_legacy_kineto_categories(tmp_path):
    """Older Kineto names: Operator, Runtime, Kernel, Memcpy (and ``external id``)."""
    events = [
        {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 1, "tid": 1,
         "ts": 0, "dur": 100, "args": {"External id": 5}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5, "args": {"correlation": 77, "external id": 5}},
        {"ph": "X", "cat": "Kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": 7,
         "ts": 20, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 77,
                                       "external id": 5}},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7,
         "ts": 60, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 78}},
    ]
    trace = tmp_path / "legacy.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    from profiler_kit import api

    (a,) = api.analyze(trace)
    assert {c.klass: c.total_ns for c in a.gpu.classes} == {"convolution": 30_000,
                                                            "memcpy": 10_000}
    assert a.attribution.by_correlation == 1
    assert a.timeline.devices[0].busy_ns == 40_000
    c = api.compare([trace, CPU], baseline=str(trace))
    assert c.labels == ("legacy", "cpu_torch_profiler") and c.baseline == 0


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """``profkit analyze ... --json | head``: no traceback when the pipe closes early."""
    proc = subprocess.Popen([sys.executable, "-m", "profiler_kit", "analyze", "--json", "-",
                             str(DDP), str(DDP)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # more than a pipe's buffer will be written: the write fails
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert err == b""


def test_min_gain_holds_back_a_rule_with_a_note_and_the_json_keeps_it(tmp_path):
    """BERT-small on an H100: CUDA graphs predict 45 % off the step for host-bound; with
    the line at 50 % the rule is held back, named in the note, and listed in held_back
    (beside the elementwise chains, which fusion prices at 1.4 %: held back by default)."""
    bert = DATA / "h100_bert_small.json.gz"
    out = tmp_path / "a.json"
    r = profkit("analyze", str(bert), "--min-gain", "50", "--json", str(out), width=400)
    assert r.returncode == 0, r.stderr
    assert "note: held back: 2 rules whose predicted gain is under 50 %: host_bound [gpu:0] " \
           "(cuda-graphs: 45.3 %), elementwise_chain_between_gemms [trace] (fusion: 1.4 %) " \
           "(--min-gain sets the line)" in r.stdout
    (trace,) = json.loads(out.read_text())["traces"]
    assert "host_bound" not in {x["rule"] for x in trace["recommendations"]}
    held, chains = trace["held_back"]
    assert chains["rule"] == "elementwise_chain_between_gemms" and chains["change"] == "fusion"
    assert held["rule"] == "host_bound" and held["change"] == "cuda-graphs"
    assert held["predicted_gain_pct"] == pytest.approx(45.34, abs=0.01)
    assert held["predicted_step_ns"] < held["step_ns"] and held["prediction_trusted"] is True
    for rec in trace["recommendations"]:
        assert {"change", "step_ns", "predicted_step_ns", "predicted_gain_pct",
                "prediction_trusted", "prediction_caveat"} <= set(rec)
    r = profkit("analyze", str(bert), width=400)  # the default line: 2 %
    assert "1. GPU waits while the CPU runs model code (host-bound)" in r.stdout
    assert "step 4.43 → 2.42 ms predicted (−45 %) with cuda-graphs" in r.stdout
    assert "note: held back: 1 rule whose predicted gain is under 2 %: " \
           "elementwise_chain_between_gemms [trace] (fusion: 1.4 %)" in r.stdout


def test_the_memory_section_reads_only_memory_files(tmp_path):
    """A trace file alone holds no memory categories or snapshot: the section is empty and
    its readers are never imported; a categories file given beside it fills the section."""
    names = ["parameter", "activation"]
    rows = [[100, 0], [100, 4096], [100, 1024]]
    categories = tmp_path / "main.memory_categories.json"
    categories.write_text(json.dumps({"format": 1, "categories": names, "devices": {"cpu": {
        "times_us": [1, 2, 3], "bytes": rows,
        "peak": {"time_us": 2, "total_bytes": 4196,
                 "by_category": dict(zip(names, rows[1], strict=True))}}}}))
    code = ("import json, sys; from profiler_kit.commands.analyze import memory_section; "
            f"assert memory_section([{str(DDP)!r}]) is None; "
            "assert 'profiler_kit.sources.memory_files' not in sys.modules; "
            f"report = memory_section([{str(DDP)!r}, {str(categories)!r}]); "
            "print(json.dumps([c.by_category for s in report.strategies "
            "for c in s.categories]))")
    out = python_c(code)
    assert json.loads(out) == [{"parameter": 100, "activation": 4096}]


def test_a_data_command_keeps_freed_memory_where_glibc_allows():
    """``profkit analyze`` raises glibc's mmap and trim thresholds (fewer page faults when a
    trace's pieces are freed and allocated again); elsewhere nothing changes."""
    import platform

    code = "from profiler_kit.util.process_tuning import keep_freed_memory as k; print(k())"
    out = python_c(code)
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert out.strip() == str(glibc)


@pytest.mark.parametrize("switch, tuned", [("", True), ("1", False)])
def test_one_switch_turns_the_process_tuning_off(switch, tuned):
    """A data command's process: one BLAS thread and no garbage collector, unless
    PROFKIT_NO_PROCESS_TUNING is set; a thread count the user set stays."""

    code = ("import gc, os\n"
            "from profiler_kit.util.process_tuning import tune_data_process\n"
            "tune_data_process()\n"
            "print(gc.isenabled(), os.environ.get('OPENBLAS_NUM_THREADS'), "
            "os.environ.get('OMP_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS",
                                                             "PROFKIT_NO_PROCESS_TUNING")}
    env.update(PROFKIT_NO_PROCESS_TUNING=switch, OMP_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == (["False", "1", "3"] if tuned else ["True", "None", "3"])


@pytest.mark.parametrize("command", [["analyze", "--json"], ["whatif", "--json", "-"]])
def test_one_trace_loads_ahead_and_gives_what_one_process_gives(command: list[str]):
    """``profkit analyze TRACE`` (and ``whatif``) decodes the trace's later part in a forked
    child while it imports the analyses: the console's path does fork, and the output is
    byte for byte what one process gives (no idle core: no fork)."""
    code = ("import sys; import profiler_kit.trace.load_ahead as la\n"
            "prefetch, take = la.prefetch, la.Pending.take\n"
            "def spy(*a):\n"
            "    began = prefetch(*a)\n"
            "    print('began' if began else 'not begun', file=sys.stderr)\n"
            "    return began\n"
            "def spy_take(self, path):\n"
            "    table = take(self, path)\n"
            "    print('joined' if table is not None else 'one pass', file=sys.stderr)\n"
            "    return table\n"
            "idle = int(sys.argv[1]); la.idle_cores = lambda: idle\n"
            "la.prefetch, la.Pending.take = spy, spy_take\n"
            "from profiler_kit.cli import entry\n"
            f"sys.argv = ['profkit', *{command!r}, {str(DDP)!r}]; entry()")
    # as the console sets it before numpy loads (numpy loads earlier here, with the spy)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    runs = {}
    for idle in (1, 0):
        r = subprocess.run([sys.executable, "-c", code, str(idle)], capture_output=True,
                           text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        runs[idle] = r
    assert runs[1].stderr.split() == ["began", "joined"]
    assert runs[0].stderr.split() == ["not", "begun"]  # nothing to take: one pass
    assert runs[1].stdout == runs[0].stdout
    assert json.loads(runs[1].stdout)["schema"].startswith("profkit.")
