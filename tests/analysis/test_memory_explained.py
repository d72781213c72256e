"""``profkit memory`` on real CPU profiles: the peak, what was live, a real leak, what fits.

Every figure is checked against something computed another way: the raw ``[memory]``
events of the trace walked by address here, a hand count of the leaked tensor's bytes,
PyTorch's own ``export_memory_timeline``, and the categories files of two real runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from raw_memory import in_trace_allocated
from torch.profiler import ProfilerActivity, profile, schedule

from profiler_kit import api
from profiler_kit.analysis.core.note import note
from profiler_kit.cli import main
from profiler_kit.measure import memory_categories

HERE = Path(__file__).parents[1]
BATCH, IN, HIDDEN, OUT = 16, 64, 128, 10
STEPS = 5  # profiled: ProfilerStep#1..#5


class Leaky(torch.nn.Module):
    def __init__(self, keep: bool) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(IN, HIDDEN), torch.nn.Linear(HIDDEN, OUT)
        self.keep, self.kept = keep, []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x).relu()  # the leaked activation is allocated here
        if self.keep:
            self.kept.append(h.detach())  # one activation per step, never given back
        return self.fc2(h)


LEAK_LINE = next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                 if "the leaked activation is allocated here" in line)


class Vmapped(torch.nn.Module):
    """Nothing kept: one linear layer applied through ``torch.func.vmap``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(IN, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.vmap(self.fc)(x)


def _profile(folder: Path, keep: bool, model: torch.nn.Module | None = None,
             record_shapes: bool = True) -> dict:
    """Train a few steps under the profiler; the trace, the categories and PyTorch's own
    memory timeline land in ``folder``."""
    folder.mkdir()
    torch.manual_seed(0)
    model = Leaky(keep) if model is None else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, IN)
    reference: dict = {}

    def export(prof) -> None:
        prof.export_chrome_trace(str(folder / "w.pt.trace.json"))
        prof.export_memory_timeline(str(folder / "ref.json"), device="cpu")
        reference["timeline"] = json.loads((folder / "ref.json").read_text())
        (folder / "ref.json").unlink()  # not one of the run's files

    def trace_only(prof) -> None:  # PyTorch's categories need shapes
        prof.export_chrome_trace(str(folder / "w.pt.trace.json"))

    ready = (memory_categories.handler(export, folder, "w", ["cpu"]) if record_shapes
             else trace_only)
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                 schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
                 record_shapes=record_shapes, profile_memory=True, with_stack=True) as prof:
        for _ in range(STEPS + 1):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
    return reference


@pytest.fixture(scope="module")
def leaky(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("mem") / "leaky"
    return folder, _profile(folder, keep=True)


def _raw_memory(trace: Path) -> list[dict]:
    events = json.loads(trace.read_text())["traceEvents"]
    mem = [e for e in events if e.get("name") == "[memory]"]
    return sorted(mem, key=lambda e: e["ts"])


def test_a_real_leak_is_named_with_its_line_and_bytes(leaky) -> None:
    folder, _ = leaky
    report = api.memory([folder / "w.pt.trace.json"])
    (growth,) = report.strategies[0].growth
    # by hand: one (BATCH, HIDDEN) float32 activation kept per step
    per_step = BATCH * HIDDEN * 4
    (leak,) = growth.leaks
    assert leak.site.startswith(f"{Path(__file__).name}:{LEAK_LINE} ")
    assert leak.site.endswith("(forward)")
    assert leak.kept_bytes_per_step[1:-1] == (per_step,) * (STEPS - 2)
    assert [s.step for s in growth.steps] == list(range(1, STEPS + 1))
    # the middle steps keep nothing else: gradients are freed by the next zero_grad
    assert [s.kept_bytes for s in growth.steps[1:-1]] == [per_step] * (STEPS - 2)
    assert growth.held_by_profiler is None  # no torch.func transform ran


def test_what_the_profiler_keeps_under_vmap_is_not_called_a_leak(tmp_path, capsys) -> None:
    """vmap keeps nothing, yet with record_shapes on the profiler holds the tensors that
    pass through it (pytorch/pytorch#116697): the same steps profiled with shapes keep
    bytes from every step, and without shapes keep none. The first is reported as kept,
    with the cause, and not as a leak."""
    with_shapes, without = tmp_path / "shapes", tmp_path / "no_shapes"
    for folder, shapes in ((with_shapes, True), (without, False)):
        _profile(folder, keep=False, model=Vmapped(), record_shapes=shapes)
    (held,) = api.memory([with_shapes / "w.pt.trace.json"]).strategies[0].growth
    (clean,) = api.memory([without / "w.pt.trace.json"]).strategies[0].growth
    assert all(s.kept_bytes == 0 for s in clean.steps[1:-1]) and clean.leaks == ()
    # the input of each step's vmap (BATCH x IN float32, drawn once and reused, so it is
    # not among them) and its output (BATCH x OUT) at least
    assert all(s.kept_bytes >= BATCH * OUT * 4 for s in held.steps[1:-1])
    assert held.leaks and held.held_by_profiler == note("growth_held_by_profiler")
    assert main(["memory", str(with_shapes / "w.pt.trace.json")]) == 0
    out = capsys.readouterr().out
    assert "LEAK" not in out and "KEPT" in out
    assert "not called a leak: each step ran a torch.func transform" in " ".join(out.split())


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("mem") / "clean"
    return folder, _profile(folder, keep=False)


def test_no_leak_without_the_list(clean) -> None:
    report = api.memory([clean[0] / "w.pt.trace.json"])
    (growth,) = report.strategies[0].growth
    assert growth.leaks == () and growth.note is None
    assert all(s.kept_bytes == 0 for s in growth.steps[1:-1])


def test_peak_op_and_live_bytes_against_the_raw_events(leaky) -> None:
    """On the CPU the peak is the most bytes allocated in the trace and not yet freed (see
    test_allocated.py for why not the trace's "Total Allocated"): walked here by address."""
    folder, _ = leaky
    trace = folder / "w.pt.trace.json"
    mem = _raw_memory(trace)
    walked = in_trace_allocated(e["args"] for e in mem)
    most = max(walked)
    at = walked.index(most)
    events = json.loads(trace.read_text())["traceEvents"]
    ts = mem[at]["ts"]
    around = [e for e in events if e.get("cat") == "cpu_op" and e["tid"] == mem[at]["tid"]
              and e["ts"] <= ts <= e["ts"] + e["dur"]]
    innermost = min(around, key=lambda e: e["dur"])

    (peak,) = api.memory([trace]).strategies[0].peaks
    assert peak.peak_allocated_bytes == most and not peak.counts_before_trace
    assert peak.request_bytes == mem[at]["args"]["Bytes"]
    assert peak.op == innermost["name"]
    assert peak.live_bytes_seen == most
    assert sum(s.bytes for s in peak.live_ops) == most


def test_categories_at_the_peak_equal_pytorchs_timeline(leaky) -> None:
    folder, reference = leaky
    report = api.memory([folder])
    (cats,) = report.strategies[0].categories
    times, sizes = reference["timeline"]
    top = max(sizes, key=lambda row: sum(row[1:]))
    assert cats.total_bytes == sum(top[1:])
    assert list(cats.by_category.values()) == top[1:]
    # before the profile: PyTorch's first row (its pre-existing tensors), and by hand the
    # two layers' weights and biases and the input drawn before the loop
    names = memory_categories_names()
    assert cats.before_profile == {n: b for n, b in zip(names, sizes[0][1:], strict=True) if b}
    weights = (IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT) * 4
    assert cats.before_profile == {"parameter": weights, "input": BATCH * IN * 4}


def _peak_row(reference: dict) -> dict[str, int]:
    """PyTorch's own timeline at its highest total, by category name."""
    times, sizes = reference["timeline"]
    top = max(sizes, key=lambda row: sum(row[1:]))
    return dict(zip(memory_categories_names(), top[1:], strict=True))


def memory_categories_names() -> list[str]:
    from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX

    return ["unknown" if c is None else c.name.lower() for c in _CATEGORY_TO_INDEX]


def test_compare_and_the_report_show_the_memory_section(leaky, clean, capsys,
                                                         tmp_path) -> None:
    from browser import open_report, require_browser

    from profiler_kit.render.wording.units import nbytes

    (a, ref_a), (b, ref_b) = leaky, clean
    act_a, act_b = _peak_row(ref_a)["activation"], _peak_row(ref_b)["activation"]
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    sign = "+" if act_b >= act_a else "-"
    assert f"clean: {sign}{nbytes(abs(act_b - act_a))} activations vs leaky" in out
    html = tmp_path / "report.html"
    assert main(["report", str(a), str(b), "-o", str(html)]) == 0
    text = html.read_text()
    section = text.split('<h2 id="memory">Memory</h2>')[1].split("<h2")[0]
    total_a = sum(_peak_row(ref_a).values())
    assert f'<td>leaky (cpu)</td><td class="num">{nbytes(total_a)}</td>' in section
    page = open_report(html, tmp_path / "shots", require_browser())
    assert page.errors == [] and all(u.startswith("file://") for u in page.requests)


def test_analyze_json_memory_equals_the_console_and_pytorchs_timeline(leaky, clean, capsys,
                                                                     tmp_path) -> None:
    """``analyze --json``'s ``memory_explained``: bytes by category at the peak as PyTorch's
    own timeline has them, and the same figures ``profkit memory --json`` and the console
    section give for the same folders."""
    from profiler_kit.render.wording.units import nbytes

    (a, ref_a), (b, ref_b) = leaky, clean
    assert main(["analyze", str(a), str(b), "--json", str(tmp_path / "a.json")]) == 0
    section = json.loads((tmp_path / "a.json").read_text())["memory_explained"]
    assert main(["memory", str(a), str(b), "--json", str(tmp_path / "m.json")]) == 0
    full = json.loads((tmp_path / "m.json").read_text())
    assert main(["analyze", str(a), str(b)]) == 0
    console = capsys.readouterr().out
    for got, whole, ref in zip(section["strategies"], full["strategies"], (ref_a, ref_b),
                               strict=True):
        (peak,) = got["categories"]
        assert peak["by_category"] == _peak_row(ref)
        assert got["categories"] == whole["categories"]
        assert nbytes(peak["total_bytes"]) in console
    (d,) = section["deltas"]
    act = {r: _peak_row(ref)["activation"] for r, ref in (("a", ref_a), ("b", ref_b))}
    assert (d["what"], d["delta_bytes"]) == ("activation", act["b"] - act["a"])
    sign = "+" if d["delta_bytes"] >= 0 else "-"
    assert f"clean: {sign}{nbytes(abs(d['delta_bytes']))} activations vs leaky" in console


QUICK = ["--iterations", "2", "--warmup", "0", "--repeats", "1", "--profile-wait", "0",
         "--profile-warmup", "1", "--profile-active", "2", "--with-stack"]


def test_what_fits_from_two_real_runs(tmp_path, capsys) -> None:
    example = HERE.parent / "examples" / "my_scenario.py"
    runs = {}
    for batch in (2, 6):
        out = tmp_path / f"b{batch}"
        assert main(["run", str(example), "--out", str(out), "--batch-size", str(batch),
                     "--strategies", "contiguous", *QUICK]) == 0
        runs[batch] = next(out.rglob("run.json")).parent
    memory = 64 << 20
    report = api.memory([runs[2], runs[6]], device_memory=memory)
    # by hand, from the two runs' category files
    peaks, acts = {}, {}
    for batch, run in runs.items():
        (f,) = run.rglob(f"*{memory_categories.SUFFIX}")
        peak = json.loads(f.read_text())["devices"]["cpu"]["peak"]
        peaks[batch], acts[batch] = peak["total_bytes"], peak["by_category"]["activation"]
    per_item = (peaks[6] - peaks[2]) / 4
    fixed = peaks[2] - 2 * per_item
    fit = report.fit
    assert fit.method == "two batch sizes"
    assert fit.bytes_per_item == pytest.approx(per_item)
    assert fit.activation_bytes_per_item == pytest.approx((acts[6] - acts[2]) / 4)
    assert fit.fixed_bytes == round(fixed)
    assert fit.largest_batch == math.floor((memory - round(fixed)) / per_item)
    assert fit.bytes_per_item > 0
    # and the command says it, as an estimate with its assumptions
    assert main(["memory", str(runs[2]), str(runs[6]), "--device-memory", "64MiB"]) == 0
    out = capsys.readouterr().out
    assert f"about {fit.largest_batch} (estimate)" in out and "assumes" in out


# Every real trace here with memory events, and why no leak verdict (LEAK or KEPT) may
# fire on it: the vmap run above is the only trace where KEPT must, the leaky one the
# only one where LEAK must.
SILENT = {
    "gloo_straggler/rank0.pt.trace.json.gz": "3 steps of a DDP loop that frees what it makes",
    "gloo_straggler/rank1.pt.trace.json.gz": "the same job's other rank",
    "cpu_concurrent_sequential.pt.trace.json.gz": "2 profiled steps: too few for a verdict",
    "cpu_concurrent_sequential_amp.pt.trace.json.gz": "2 profiled steps",
    "cpu_torch_profiler.pt.trace.json.gz": "2 profiled steps",
    "h100_bert_small.json.gz": "1 profiled step",
    "h100_owlv2_dataloader.json.gz": "1 profiled step",
    "h100_vit_image_classification.json.gz": "1 profiled step",
    "mi300_bert_small.json.gz": "1 profiled step",
    "mi300_normalization_layers.json.gz": "no ProfilerStep#k ranges",
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_no_leak_verdict_on_the_real_traces(name: str) -> None:
    (strategy,) = api.memory([HERE / "data" / name]).strategies
    assert strategy.growth, "the trace has memory events"
    for g in strategy.growth:
        assert g.leaks == () and g.held_by_profiler is None, (name, SILENT[name])
        if len(g.steps) < 3:
            assert g.note is not None  # says why no verdict is given
