"""profkit in a notebook: the DataFrames of real traces against ``profkit analyze --json``'s
figures and against counts of the raw JSON, the figures, what-if and compare."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from real_traces import DATA, ns, union_length

pd = pytest.importorskip("pandas")

from profiler_kit import cli  # noqa: E402
from profiler_kit import notebook as pk  # noqa: E402
from profiler_kit.render.wording import rules  # noqa: E402

GPU_TRACES = ("h100_vit_image_classification.json.gz", "a100_ddp_nccl_rank0.json.gz",
              "mi300_bert_small.json.gz", "v100_resnet50_train.json.gz")


@pytest.fixture(scope="module")
def traces() -> dict[str, pk.Trace]:
    return {name: pk.load(DATA / name) for name in GPU_TRACES}


def _document(name: str, tmp_path) -> dict:
    out = tmp_path / f"{name}.json"
    assert cli.main(["analyze", str(DATA / name), "--json", str(out)]) == 0
    return json.loads(out.read_text())["traces"][0]


def _raw_events(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as fh:
        return json.load(fh)["traceEvents"]


@pytest.mark.parametrize("name", GPU_TRACES)
def test_the_tables_give_the_figures_analyze_prints(name, traces, tmp_path) -> None:
    """Kernel totals by class, busy time per device, step times and idle time computed
    from the DataFrames equal ``profkit analyze --json``'s for the whole trace."""
    t, doc = traces[name], _document(name, tmp_path)
    k = t.kernels
    by_class = k.groupby("class")["dur_ns"].sum()
    whole = doc["trace"]["gpu_hotspots"]
    assert int(k["dur_ns"].sum()) == whole["total_ns"] and len(k) == whole["count"]
    assert {c["class"]: c["total_ns"] for c in whole["classes"]} == {
        c: int(v) for c, v in by_class.items() if v > 0}
    for device in doc["trace"]["timeline"]["devices"]:
        mine = k[k["device"] == device["device"]]
        assert union_length(zip(mine["start_ns"].tolist(), mine["end_ns"].tolist(),
                                strict=True)) == device["busy_ns"]
    steps = doc["steps"]
    if steps["source"] != "window":
        assert t.steps["dur_ns"].tolist() == [s["dur_ns"] for s in steps["steps"]]
        assert int(t.steps["dur_ns"].median()) == steps["median_ns"]
    idle = t.idle
    for device in doc["idle_attribution"]["devices"]:
        mine = idle[(idle["device"] == device["device"]) & idle["stream"].isna()]
        assert int(mine["idle_ns"].sum()) == device["idle_ns"]
    # each kernel of the steps was launched in one: the steps' kernels are the window's
    in_steps = k[k["step"].notna()]
    if steps["source"] != "window" and doc["window"] == "steps":
        assert int(in_steps["dur_ns"].sum()) == doc["gpu_hotspots"]["total_ns"]


@pytest.mark.parametrize("name", GPU_TRACES[:2])
def test_the_tables_agree_with_a_count_of_the_raw_json(name, traces) -> None:
    """Independent of profkit's loader: kernels and CPU ops counted and summed from the
    trace's JSON by hand."""
    events = [e for e in _raw_events(name) if e.get("ph") == "X"]
    kernels = [e for e in events if str(e.get("cat", "")).lower() == "kernel"]
    t = traces[name]
    mine = t.kernels[t.kernels["kind"] == "kernel"]
    assert len(mine) == len(kernels)
    assert int(mine["dur_ns"].sum()) == sum(ns(e["dur"]) for e in kernels)
    cpu_ops = [e for e in events if str(e.get("cat", "")).lower() in ("cpu_op", "operator")]
    assert len(t.ops) == len(cpu_ops)
    assert int(t.ops["dur_ns"].sum()) == sum(ns(e["dur"]) for e in cpu_ops)
    launched = t.kernels[t.kernels["launch_ns"].notna()]
    assert (launched["queued_ns"] == launched["start_ns"] - launched["launch_ns"]).all()


def test_ops_keep_their_recorded_shapes_and_nesting() -> None:
    t = pk.load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    ops = t.ops
    conv = ops[ops["name"] == "aten::conv2d"].iloc[0]
    assert json.loads(conv["input_dims"])[0] and conv["depth"] >= 1 and conv["parent"]
    assert (ops["self_ns"] <= ops["dur_ns"]).all() and (ops["depth"] >= 0).all()
    assert set(ops["step"].dropna()) <= set(t.steps["step"])


def test_the_ranks_of_a_job_load_together(tmp_path) -> None:
    job = pk.load(DATA / "two_ranks")
    assert isinstance(job, pk.Traces) and job.labels == ["rank0", "rank1"]
    kernels = job.kernels
    assert list(kernels.columns)[0] == "trace"
    assert kernels.groupby("trace").size().to_dict() == {
        t.label: len(t.kernels) for t in job}
    assert job["rank1"] is job[1] and job.job is not None
    comms = job.comms
    assert len(comms) and set(comms["trace"]) == {"rank0", "rank1"}


def test_figures_are_the_reports_charts(traces) -> None:
    go = pytest.importorskip("plotly.graph_objects")
    t = traces["h100_vit_image_classification.json.gz"]
    for name in ("hotspots", "idle", "steps", "timeline"):
        fig = t.figure(name)
        assert isinstance(fig, go.Figure) and fig.data, name
    from profiler_kit.render.html import trace_charts

    chart = trace_charts.class_breakdown_chart([t.analysis], "gpu")
    assert [d.y for d in t.figure("hotspots").data] == [tuple(x["y"]) for x in chart.data]
    with pytest.raises(ValueError, match="no figure named 'nope'"):
        t.figure("nope")
    cpu = pk.load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    with pytest.raises(ValueError, match="no modules figure"):
        cpu.figure("modules")


def test_whatif_and_compare_are_the_commands(traces) -> None:
    from profiler_kit import api
    from profiler_kit.analysis.whatif.changes import CudaGraphs

    name = "h100_vit_image_classification.json.gz"
    mine = traces[name].whatif(cuda_graphs=True)
    (theirs,) = api.whatif(DATA / name, [CudaGraphs()])
    assert mine.gains == theirs.result.gains
    with pytest.raises(ValueError, match="name a change"):
        traces[name].whatif()
    a, b = (DATA / f"cpu_slow_loader_workers{n}.pt.trace.json.gz" for n in (0, 4))
    c = pk.compare(a, b)
    theirs = api.compare([a, b])
    assert list(c.metrics.columns[3:]) == list(theirs.labels)
    step = next(m for m in theirs.metrics if m.key == "step_median_ns")
    assert c.metrics.loc["step_median_ns", theirs.labels[1]] == step.values[1]
    waterfall = c.steps
    assert len(waterfall) and waterfall["delta_ns"].sum() == pytest.approx(
        theirs.steps.waterfalls[1].delta_ns)


def test_a_trace_shows_its_answer_in_a_notebook(traces) -> None:
    t = traces["v100_resnet50_train.json.gz"]
    html = t._repr_html_()
    assert t.label in html and "median" in html and "kernels" in html
    assert rules.title(t.analysis.recommendations[0]).split()[0] in html


def test_loading_imports_neither_torch_nor_pandas_before_a_table_is_asked_for() -> None:
    code = ("import sys, profiler_kit as pk\n"
            f"t = pk.load({str(DATA / 'cpu_concurrent_sequential.pt.trace.json.gz')!r})\n"
            "t.analysis\n"
            "print('pandas' in sys.modules, 'torch' in sys.modules)\n"
            "t.ops\n"
            "print('pandas' in sys.modules, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "True", "False"]


def test_without_pandas_one_line_says_how_to_get_it(monkeypatch) -> None:
    from profiler_kit.errors import MissingDependency

    t = pk.load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingDependency, match=r"pip install 'profkit\[notebook\]'"):
        _ = t.kernels


def test_kernels_name_the_users_line_the_code_view_charges_them_to(traces) -> None:
    """Where the trace has Python frames, each kernel names its line; per line, their GPU
    time is what ``profkit analyze`` lists for it (forward kernels only: backward work is
    charged to its forward op's line in both)."""
    t = pk.load(DATA / "h100_bert_small.json.gz")
    k = t.kernels
    assert (k["line"] != "").any()
    by_line = k[k["line"] != ""].groupby("line")["dur_ns"].sum()
    for line in t.analysis.code.lines[:5]:
        assert by_line[line.site] == line.device_ns + line.backward_device_ns, line
    assert (traces["a100_ddp_nccl_rank0.json.gz"].kernels["line"] == "").all()


def test_the_counters_table_is_the_raw_samples_of_either_format() -> None:
    """A .pftrace loads in a notebook as its JSON twin does, counters included: the table
    holds every "C" event of the JSON, as written."""
    pair = DATA / "pftrace" / "a100_triton_kernel_counters"
    with gzip.open(f"{pair}.json.gz", "rt") as fh:
        raw = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "C"]
    for path in (f"{pair}.json.gz", f"{pair}.pftrace"):
        t = pk.load(path)
        table = t.counters
        assert sorted(zip(table["series"], table["value"], strict=True)) == sorted(
            (e["name"], float(e["args"][""])) for e in raw)
        assert set(table["device"]) == {0}
        assert t.kernels["name"].tolist() == ["triton_poi_fused_add_cos_sin_0"]
    assert pk.load(DATA / "a100_alexnet.json.gz").counters.empty


def test_the_recommendations_table_is_what_analyze_writes(tmp_path) -> None:
    """Each rule that fired, in analyze's order, with the words its JSON carries, then the
    rules held back under the minimum gain (named in analyze's note)."""
    name = "h100_bert_small.json.gz"  # three rules shown, one held back
    doc, recs = _document(name, tmp_path), pk.load(DATA / name).recommendations
    shown = recs[~recs["held_back"]]
    assert shown[["rule", "scope", "title", "advice"]].to_dict("records") == [
        {k: r[k] for k in ("rule", "scope", "title", "advice")} for r in doc["recommendations"]]
    assert shown["predicted_gain_pct"].tolist()[0] == pytest.approx(
        doc["recommendations"][0]["predicted_gain_pct"])
    (held,) = recs[recs["held_back"]].itertuples()
    assert len(shown) == 3 and f"{held.rule} [{held.scope}]" in " ".join(doc["notes"])
