"""Every table profkit prints, at 80 columns: no cell whose meaning an ellipsis would take
(strategy and knob names, speedups with their noise marks, status words, what-if change
names) is cut; free text and long names wrap at their word boundaries; less important
columns are left out (and named) or continued below; wide consoles print as before."""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path

import pytest
from msgspec.structs import replace
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from profiler_kit import api, results
from profiler_kit.noise import PAIRED_BY_ROUND, NoiseVerdict
from profiler_kit.render.console import analysis as analysis_console
from profiler_kit.render.console import ddp as ddp_console
from profiler_kit.render.console import run as run_console
from profiler_kit.render.console import tune as tune_console
from profiler_kit.render.console.code import module_lines
from profiler_kit.render.console.fit import NAMES, TEXT, WORDS, FitTable, wrap
from profiler_kit.render.console.whatif import report_lines, trace_lines
from profiler_kit.render.wording import speedup_noise
from profiler_kit.render.wording.names import short_name
from profiler_kit.results import Equivalence, RunResult, StrategyResult, stats

DATA = Path(__file__).parents[1] / "data"


def _text(renderable: object, width: int) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False).print(renderable)
    return buf.getvalue()


def _rows(out: str, name: str) -> list[str]:
    """The table lines with a cell that starts with ``name``, whole (the word ends there)."""
    return [line for line in out.splitlines()
            if re.search(rf"(^|│) ?{re.escape(name)}(\s|$)", line)]


# ---------------------------------------------------------------- the fitting itself


def test_free_text_wraps_at_words_and_a_number_keeps_its_unit() -> None:
    assert wrap(Text("45.2 % noisy"), 7, WORDS).plain == "45.2 %\nnoisy"
    assert wrap(Text("13.1 ms / 13.5 ms / 14.0 ms"), 12, WORDS).plain == \
        "13.1 ms /\n13.5 ms /\n14.0 ms"
    assert wrap(Text("0.97× ~"), 7, WORDS).plain == "0.97× ~"
    assert wrap(Text("channels_last+compile+autocast"), 16, NAMES).plain == \
        "channels_last+\ncompile+autocast"
    # a name breaks at its separators, then between its words, and is folded last
    assert wrap(Text("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), 26,
                TEXT).plain == "enumerate(DataLoader)#\n_SingleProcessDataLoader\nIter.__next__"
    assert wrap(Text("DistributedDataParallel.forward"), 24, TEXT).plain == \
        "DistributedDataParallel.\nforward"
    styled = wrap(Text.assemble(("12.3 %", "yellow"), " noisy"), 6, WORDS)
    assert styled.plain == "12.3 %\nnoisy" and styled.spans[0].style == "yellow"


def _pair(**kwargs) -> tuple[Table, FitTable]:
    plain, fitted = Table(**kwargs), FitTable(**kwargs, kinds={"what": WORDS},
                                              drop=[("p95",)])
    for t in (plain, fitted):
        t.add_column("name", no_wrap=True)
        t.add_column("what")
        t.add_column("p95", justify="right")
        t.add_row("sequential+amp", "a few words of free text", "12.3 ms")
        t.add_row("threads (best)", "more", "1.5 s", style="bold")
    return plain, fitted


@pytest.mark.parametrize("kwargs", [{}, {"box": box.SIMPLE_HEAD, "pad_edge": False,
                                          "show_edge": False, "title": "T", "caption": "c"}])
def test_a_table_that_fits_prints_as_a_plain_table(kwargs) -> None:
    plain, fitted = _pair(**kwargs)
    for width in (120, 58):  # 58: exactly its width with the default box
        assert _text(fitted, width) == _text(plain, width)


def test_a_narrow_table_leaves_out_columns_and_names_them() -> None:
    _, fitted = _pair()
    out = _text(fitted, 40)  # the free text wraps: every column stays
    assert "p95" in out.splitlines()[1] and "left out" not in out and "…" not in out
    assert all(cell_len(line) <= 40 for line in out.splitlines())
    out = _text(fitted, 30)
    assert all(cell_len(line) <= 30 for line in out.splitlines())
    assert "…" not in out and "p95" not in out.splitlines()[1]
    assert "left out at this width: p95" in out
    assert _rows(out, "sequential+amp") and _rows(out, "threads (best)")  # whole


def test_a_table_of_many_like_columns_is_continued_below() -> None:
    t = FitTable(repeat=1)
    t.add_column("strategy")
    for n in range(12):
        t.add_column(f"n_model={2 ** n}", justify="right")
    t.add_row("linear", *(f"{n}.25 ms" for n in range(12)))
    out = _text(t, 80)
    assert "…" not in out and all(cell_len(line) <= 80 for line in out.splitlines())
    assert len(_rows(out, "linear")) >= 2  # each part repeats the strategy
    for n in range(12):
        assert f" n_model={2 ** n} " in out and f" {n}.25 ms " in out



def test_a_joined_column_goes_on_below_beside_the_column_before_it() -> None:
    """Continued below, a trace's Δ stays in the part of the trace it belongs to."""
    t = FitTable(repeat=1, joined=("Δ",), box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("name")
    cells = ["name"]
    for n in range(6):
        t.add_column(f"trace_{n}", justify="right")
        t.add_column("Δ", justify="right")
        cells += [f"{n}.5 ms ×12", f"+{n}.25 ms new"]
    t.add_row("kernel", *cells[1:])
    out = _text(t, 80)
    assert "…" not in out and all(cell_len(line) <= 80 for line in out.splitlines())
    assert out.count(" name ") == 3  # two traces per part
    for n in range(6):  # each trace's time and its Δ on one line of one part
        assert re.search(rf" {n}\.5 ms ×12 +\+{n}\.25 ms new( |$)", out, re.M), out


# ---------------------------------------------------------------- profkit run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> RunResult:
    """The main job's run folder (tests/data), its speedups judged against the baseline
    and its strategies predicted by the what-if replay, as ``profkit run`` prints them."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from concurrent_run import concurrent_run

    from profiler_kit.sources.run_predictions import predict_run

    folder = concurrent_run(tmp_path_factory.mktemp("run"))
    r = replace(results.read_run(folder), run_dir=folder)
    return predict_run(replace(r, strategies=results.against_baseline(r.strategies,
                                                                      r.baseline)))


def _run_text(result: RunResult, width: int) -> str:
    buf = io.StringIO()
    run_console.render(Console(file=buf, width=width, color_system=None,
                               force_terminal=False), result)
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_run_keeps_names_speedups_marks_and_statuses_whole(run, width) -> None:
    out = _run_text(run, width)
    paths = ("results: ", "charts: ", "  profkit tensorboard ")  # long paths: soft-wrapped
    assert all(cell_len(line) <= width for line in out.splitlines()
               if not line.startswith(paths)), out
    assert "…" not in out, out
    marks = set()
    for s in run.strategies:
        rows = _rows(out, s.name)
        assert rows, f"{s.name} is not whole in\n{out}"
        if s.status == "ok":
            shown = speedup_noise.speedup(s)
            marks.add(speedup_noise.mark(s.noise))
            assert any(shown in line for line in rows), f"{shown} cut in\n{out}"
        else:
            assert any(f" {s.status} " in line for line in rows), out
    assert len(marks - {""}) >= 2  # the fixture judges two strategies not beyond noise
    assert " noisy " in out  # IQR and its word, at most wrapped below it


def test_run_prediction_table_keeps_change_names_whole(run) -> None:
    out = _run_text(run, 80)
    changes = {s.prediction.change for s in run.strategies
               if s.prediction is not None and s.prediction.change}
    assert changes
    table = out[out.index("Predicted by the what-if replay"):]
    for change in changes:
        assert re.search(rf"│ {re.escape(change)}\s", table), f"{change} cut in\n{table}"
    assert "left out at this width: own trace, error vs trace" in table
    assert "…" not in table


def test_run_tables_print_as_before_where_they_fit(run) -> None:
    """At 200 columns every table of the run fits: nothing is left out or wrapped."""
    out = _run_text(run, 200)
    assert "left out at this width" not in out
    head = next(line for line in out.splitlines() if "strategy" in line and "p95" in line)
    assert all(h in head for h in ("IQR", "p95", "profiled", "peak mem"))
    for s in run.strategies:
        assert len(_rows(out, s.name)) >= 1
    assert "noisy │" in out  # "37.1 % noisy" on one line


def test_run_phase_and_sweep_tables_are_continued_below_not_cut() -> None:
    names = ["data loading", "forward", "backward", "optimizer step", "zero_grad",
             "all-reduce wait"]
    phases = {n: stats([(i + 1) * 1_000_000] * 3) for i, n in enumerate(names)}
    rows = tuple(_ok(name, 1.0, phases=phases, info={
        "build_time_ns": 2_000_000_000, "param_count": 25_557_032,
        "idle_share_by_rank": [0.43, 0.19]}) for name in ("ddp", "fsdp_full_shard+amp"))
    out = _text(run_console.phase_table(_result(rows), ""), 80)
    assert "…" not in out and all(cell_len(line) <= 80 for line in out.splitlines())
    for word in " ".join(names + ["build", "params", "idle per rank"]).split():
        assert re.search(rf"[┃ ]{re.escape(word)}[┃ ]", out), f"{word} cut in\n{out}"
    assert "25,557,032" in out and "43.0 % / 19.0 %" in out
    assert len(_rows(out, "fsdp_full_shard+amp")) == 2  # in both parts of the table


# ---------------------------------------------------------------- profkit tune, ddp


def _ok(name: str, speedup: float, noise: NoiseVerdict | None = None, ms: float = 20,
        **fields) -> StrategyResult:
    samples = [int(ms * 1e6)] * 5
    return StrategyResult(
        name=name, status="ok", samples_ns=tuple(samples), stats=stats(samples),
        items_per_step=32, throughput_items_per_s=32e9 / stats(samples).median_ns,
        speedup=speedup, peak_memory={"cpu": {"allocated_bytes": 300 << 20}},
        equivalence=Equivalence(True, True), noise=noise, **fields)


def _result(strategies: tuple[StrategyResult, ...], baseline: str = "ddp") -> RunResult:
    return RunResult(
        run_dir=Path("runs/x"), scenario="s", description="", baseline=baseline,
        item_unit="samples", device="cpu", params={}, sweep=(), points=(), options={},
        environment={}, strategies=strategies, started_at="", finished_at="")


def test_tune_keeps_knobs_speedups_and_verdicts_whole() -> None:
    beyond = NoiseVerdict(PAIRED_BY_ROUND, True, 2.9, 3.6, 0.05)
    within = NoiseVerdict(PAIRED_BY_ROUND, False, -0.02, 0.03, 0.05)
    unstable = NoiseVerdict(PAIRED_BY_ROUND, None, -0.3, 0.4, 0.05, "r", "unstable")
    stack = "channels_last+compile+autocast_bf16"
    rows = (_ok("eager_fp32", 1.0, ms=40),
            _ok(stack, 3.33, beyond, ms=12,
                info={"compile_s": 41.2, "graph_breaks": 0, "recompilations": 1}),
            _ok("channels_last", 1.02, within, ms=39), _ok("threads", 1.3, unstable, ms=30),
            StrategyResult(name="cuda_graphs", status="skipped",
                           reason="needs CUDA; this machine has none"))
    result = _result(rows, "eager_fp32")
    out = _text(tune_console.ranked_table(result, stack), 80)
    assert "…" not in out and all(cell_len(line) <= 80 for line in out.splitlines()), out
    for s in (rows[0], rows[2], rows[3]):
        (line,) = _rows(out, s.name)
        assert f" {speedup_noise.speedup(s)} " in line, out
        assert tune_console.verdict(s.noise).split(":")[0] in line, out
    # the stack breaks between its knobs only: each knob whole at a line's start
    cells = [line.split("│")[2].strip() for line in out.splitlines() if line.count("│") > 3]
    assert "".join(cells[:3]) == stack and all(c.endswith("+") for c in cells[:2])
    assert "(recommended)" in out and "skipped: needs" in out
    assert "left out at this width: breaks / recompiles, compile" in out


def test_ddp_table_keeps_configurations_and_speedups_whole() -> None:
    report = {"benchmark_results": [{
        "model": "resnet18", "batch_size": 4, "bucket_size": 25.0, "result": [
            {"configuration": c, "best": c == "ddp-w2",
             "times": {"sec_per_iter": {p: t * f for p, f in
                                        (("p50", 1), ("p75", 1.01), ("p90", 1.02),
                                         ("p95", 1.03))},
                       "examples_per_sec_per_replica": {"p50": 4 / t},
                       "examples_per_sec": {"p50": 4 * n / t}},
             "per_rank_sec_per_iter_p50": [t] * n, "speedup": n * 0.1 / t,
             "scaling_efficiency": 0.1 / t}
            for c, t, n in (("no-ddp", 0.1, 1), ("ddp-w1", 0.11, 1), ("ddp-w2", 0.15, 2))]}]}
    out = "".join(_text(t, 80) for t in ddp_console.tables(report))
    assert "…" not in out and all(cell_len(line) <= 80 for line in out.splitlines()), out
    for c, speedup in (("no-ddp", "1.00×"), ("ddp-w1", "0.91×"), ("ddp-w2", "1.33×")):
        (line,) = _rows(out, c)
        assert f" {speedup} " in line
    assert "left out at this width: p75, p90 (ddp_report.json has them)" in out


# ---------------------------------------------------------------- profkit analyze, whatif


def _names(block: list[str]) -> list[str]:
    """The first column of a table in a panel, its wrapped lines joined: a row starts
    where the next column has a figure."""
    names: list[str] = []
    for line in block:
        cells = re.split(r"\s{2,}", line.strip("│ \n"))
        if len(cells) > 1 or not names:
            names.append(cells[0])
        else:
            names[-1] += "\n" + cells[0]
    return names


@pytest.mark.parametrize("trace", ["h100_owlv2_dataloader.json.gz",
                                   "mi300_resnet_act_checkpoint.json.gz",
                                   "b200_vllm_eager.json.gz"])
def test_analyze_phase_names_break_only_between_their_words(trace) -> None:
    (a,) = api.analyze(DATA / trace)
    buf = io.StringIO()
    analysis_console.render(Console(file=buf, width=80, color_system=None,
                                    force_terminal=False), [a])
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "Phases (record_function" in line)
    rule = next(i for i in range(start, len(lines)) if "───" in lines[i])
    end = next(i for i in range(rule, len(lines)) if lines[i].strip("│ ") == "")
    shown = _names(lines[rule + 1:end])
    expected = [short_name(p.name, 60) for p in a.phases.phases[:10]]
    assert [re.sub(r"\s", "", n) for n in shown] == [e.replace(" ", "") for e in expected]
    for name in shown:  # never inside a word: not between two lower-case letters or digits
        if re.search(r"[A-Za-z0-9]{21,}", name.replace("\n", "")):
            continue  # a hash has no word to keep: folded
        for left, right in re.findall(r"(.)\n(.)", name):
            assert not (left.isalnum() and right.isalnum() and not (
                left.islower() and right.isupper())), name


def test_module_tree_puts_its_times_below_a_line_too_wide() -> None:
    (a,) = api.analyze(DATA / "h100_owlv2_dataloader.json.gz")
    wide = module_lines(a.code, 3)
    narrow = module_lines(a.code, 3, 78)
    tree = narrow[1:next(i for i, line in enumerate(narrow) if line.startswith("modules'"))]
    assert len(narrow) > len(wide) and all(len(line) <= 78 for line in tree), tree
    modules = [line for line in wide if " host " in line]
    heads = [line for line in narrow if " host " in line]
    assert len(heads) == len(modules)
    for full, head in zip(modules, heads, strict=True):
        assert full.startswith(head)  # the name, its calls and host time whole
    for line in narrow:
        if "fwd" in line:
            assert re.search(r"fwd \S+ \S+ bwd \S+ \S+", line), line  # each figure whole
    assert module_lines(a.code, 3, 400) == wide


def test_whatif_lines_go_on_below_at_word_boundaries() -> None:
    from profiler_kit.analysis.whatif import changes as c

    (t,) = api.whatif([DATA / "h100_vit_image_classification.json.gz"],
                      [c.Precision("bf16"), c.CudaGraphs()])
    assert report_lines([t]) == trace_lines(t)  # no width: as before
    lines = report_lines([t], 80)
    assert all(len(line) <= 80 for line in lines), lines
    assert [line for line in lines if line.startswith("  precision bf16 ")]
    assert [line for line in lines if line.startswith("  cuda-graphs ")]
    words = " ".join(trace_lines(t)).split()
    assert " ".join(lines).split() == words  # nothing cut, nothing broken inside a word


def test_the_commands_print_at_80_columns(tmp_path) -> None:
    """``profkit analyze --modules`` end to end, as a terminal of 80 columns shows it."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, COLUMNS="80")
    out = subprocess.run(
        [sys.executable, "-m", "profiler_kit", "analyze", "--modules",
         str(DATA / "h100_bert_small.json.gz")], capture_output=True, text=True, env=env,
        check=True, cwd=tmp_path).stdout
    tree = out[out.index("nn.Module time"):out.index("modules' forward + backward")]
    assert all(len(line) <= 80 for line in tree.splitlines()), tree
    assert "    BertLMHeadModel_0  x1  host " in tree


# ---------------------------------------------------------------- profkit compare


@pytest.mark.parametrize("traces", [
    ("a100_alexnet", "v100_resnet50_tb_sample_step"),
    ("h100_bert_small", "mi300_bert_small", "v100_resnet50_train")])
def test_compare_keeps_each_change_whole_at_80_columns(traces) -> None:
    """The waterfalls and the tables of the kernels and ops that changed most, at 80
    columns: each row's name, class and each trace's Δ on one line, whole (a trace that
    does not fit goes on below with its Δ, after the name and class again); each term's
    change whole; titles wrapped, not cut."""
    from profiler_kit.render.console.analysis import comparison_view
    from profiler_kit.render.wording.diff_views import delta_cell, signed_duration

    c = api.compare(api.analyze([str(DATA / f"{t}.json.gz") for t in traces], jobs=1))
    out = _text(comparison_view(c, 10, 80), 80)
    lines = out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), out
    assert c.steps is not None
    waterfalls = [w for w in c.steps.waterfalls if w is not None]  # None: the baseline
    assert len(waterfalls) == len(traces) - 1
    for w in waterfalls:
        for term in w.terms:
            name = "overlap (−)" if term.name == "overlap" else term.name
            assert any(line.startswith(f" {name} ")
                       and f" {signed_duration(term.delta_ns)} " in line for line in lines), \
                f"{name} of {w.label} cut in\n{out}"
    assert c.ops is not None
    for what, rows in (("GPU kernels", c.ops.kernels), ("CPU ops", c.ops.ops)):
        table = out[out.index(f"{what} that changed most"):]
        title = " ".join(line.strip() for line in
                         itertools.takewhile(str.strip, table.splitlines()))
        assert title.endswith(f"(baseline: {c.labels[c.baseline]}; new, gone, = unchanged)")
        for r in rows[:10]:
            name = short_name(r.name, 24)
            for i in range(len(c.labels)):
                if i != c.baseline:
                    assert any(line.startswith(f" {name} ") and f" {r.klass} " in line
                               and line.rstrip().endswith(f" {delta_cell(r, i)}")
                               for line in table.splitlines()), \
                        f"{r.name} against {c.labels[i]} cut in\n{table}"
