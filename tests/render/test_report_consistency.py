"""report.html says what the console and summary.md say: no waterfall where they withhold
the explanation (the same sentence instead), the console's units on the waterfall, a
colour per strategy that means it in every chart, a memory caption naming only what is
drawn, and an answer line first for a ``profkit record`` folder too. Checked on the real
run folder of tests/data and on constructed cases, in the page's chart data."""

from __future__ import annotations

import gzip
import html
import io
import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest
from concurrent_run import concurrent_run
from rich.console import Console

from profiler_kit import api
from profiler_kit.analysis.compare import compare
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.console import run as run_console
from profiler_kit.render.html import diff_charts, figures, trace_charts, whatif_charts
from profiler_kit.render.html import report as html_report
from profiler_kit.render.markdown.run import render_markdown
from profiler_kit.render.wording import record_answer, rules, units
from profiler_kit.render.wording.diff_views import signed_duration, strategy_verdict
from profiler_kit.results import RunResult, read_run
from profiler_kit.sources import after_run
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
STRATEGIES = ("sequential", "sequential+amp", "threads", "threads+amp")


def charts_of(text: str) -> list[dict]:
    payload = text.split('<script type="application/json" id="profkit-charts">')[1]
    return json.loads(payload.split("</script>")[0])


def body_of(text: str) -> str:
    return text[text.index("<main"):text.index('<script type="application/json"')]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The real run folder as its run.json is in tests/data: recorded before run.json
    kept verdicts, so no strategy has one."""
    return concurrent_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def page(folder) -> str:
    return api.report_html([folder])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, RunResult]:
    """The same run with the verdicts ``profkit run`` writes after measuring (rewritten
    into its run.json): the profiled steps of threads say -99.3 % where its timed medians
    say -95.9 %, so its explanation is withheld."""
    where = concurrent_run(tmp_path_factory.mktemp("judged"))
    result = after_run.step_changes(msgspec.structs.replace(read_run(where), run_dir=where))
    return where, result


def test_the_run_withholds_threads_explanation(judged) -> None:
    where, result = judged
    by = {s.name: strategy_verdict(s) for s in result.strategies}
    assert by["threads"] == (
        "threads: explanation withheld: the profiled steps say -99.3% where the timed "
        "medians say -95.9%; rerun with more --profile-active steps (or on a quieter "
        "machine)")
    assert by["sequential+amp"].startswith("sequential+amp: CPU step −601 ms")
    assert by["threads+amp"].startswith("threads+amp: CPU step −3.44 s")


def test_run_json_keeps_the_figures_and_the_formats_word_them(judged) -> None:
    """run.json holds each strategy's step change term by term (or the reason it is
    withheld), never a rendered line; read back, it words as before."""
    where, result = judged
    doc = {s["name"]: s for s in json.loads((where / "run.json").read_text())["strategies"]}
    assert "verdict" not in doc["threads"] and "verdict" not in doc["threads+amp"]
    assert doc["threads"]["explanation"] is None
    assert doc["threads"]["explanation_withheld"].startswith("the profiled steps say -99.3%")
    fall = doc["threads+amp"]["explanation"]
    assert fall["side"] == "cpu" and fall["delta_ns"] == pytest.approx(
        doc["threads+amp"]["step_change_ns"]["step"])
    assert sum(t["delta_ns"] for t in fall["terms"]) == pytest.approx(fall["delta_ns"])
    again = {s.name: strategy_verdict(s) for s in read_run(where).strategies}
    assert again == {s.name: strategy_verdict(s) for s in result.strategies}


def test_the_report_withholds_it_with_the_same_sentence(judged) -> None:
    """The waterfall of threads is not drawn; the sentence run.json, the console and
    summary.md carry stands in its section; the other strategies' waterfalls stay."""
    where, result = judged
    text = api.report_html([where])
    sentence = next(strategy_verdict(s) for s in result.strategies if s.name == "threads")
    titles = [c["title"] for c in charts_of(text) if c["section"] == diff_charts.STEP_CHANGE]
    assert titles == ["sequential+amp against sequential", "threads+amp against sequential"]
    body = body_of(text)
    section = body[body.index(f">{diff_charts.STEP_CHANGE}</h2>"):]
    assert section.index(f'<p class="withheld">{html.escape(sentence)}</p>') \
        < section.index("<h2")
    assert body.count("explanation withheld") == 1
    buf = io.StringIO()
    run_console.render(Console(file=buf, width=200, color_system=None), result)
    assert sentence in buf.getvalue()
    assert f"- {sentence}" in render_markdown(result)



def test_the_report_says_the_runs_verdicts_where_it_draws_their_waterfalls(judged) -> None:
    """Each waterfall drawn comes with the verdict the console and summary.md say, in the
    same section, before the next one; the one withheld has its sentence only."""
    where, result = judged
    body = body_of(api.report_html([where]))
    section = body[body.index(f">{diff_charts.STEP_CHANGE}</h2>"):]
    section = section[:section.index("<h2")]
    said = [html.unescape(x) for x in re.findall(r"<p><strong>(.*?)</strong></p>", section)]
    assert said == [strategy_verdict(s) for s in result.strategies
                    if s.name in ("sequential+amp", "threads+amp")]


def test_a_comparison_report_marks_a_whole_trace_as_the_console_does() -> None:
    """A trace without steps: † by its name in the comparison table, and the note."""
    from profiler_kit.render.wording.trace_words import WHOLE_TRACE_NOTE

    traces = [DATA / "a100_alexnet.json.gz", DATA / "v100_resnet50_tb_sample_step.json.gz"]
    analyses = api.analyze(traces, jobs=1)
    c = api.compare(analyses)
    assert c.windows == ("trace", "steps")
    body = body_of(html_report.render("compare", analyses, comparison=c))
    table = body[body.index('id="comparison"'):]
    assert "<th>a100_alexnet † (baseline)</th>" in table
    assert "<th>v100_resnet50_tb_sample_step</th>" in table
    assert f'<p class="muted">{html.escape(WHOLE_TRACE_NOTE)}.</p>' in table


def test_a_run_recorded_before_verdicts_is_withheld_alike(page, judged) -> None:
    """run.json as tests/data has it (no verdict): the report compares the profiled steps
    with the timed medians itself, as the run does, and says the same sentence."""
    _, result = judged
    sentence = next(strategy_verdict(s) for s in result.strategies if s.name == "threads")
    assert f'<p class="withheld">{html.escape(sentence)}</p>' in page
    assert "threads against sequential" not in {c["title"] for c in charts_of(page)}


def test_run_json_decides_for_the_runs_own_comparison(folder, judged) -> None:
    """Where run.json has threads' explanation (a quieter run), the report draws it: the
    run's verdicts decide for the comparison the run made, so the formats cannot part."""
    where, result = judged
    analyses = api.analyze([where])
    analyses = api._in_run_order(list(analyses), result, where)
    comparison = compare(analyses)
    explained = msgspec.structs.replace(result, strategies=tuple(
        msgspec.structs.replace(s, explanation_withheld=None,
                                verdict="threads: CPU step −3.44 s (-99.3 %)")
        if s.name == "threads" else s for s in result.strategies))
    assert diff_charts.withheld_explanations(comparison, analyses, [explained]) == {}
    assert list(diff_charts.withheld_explanations(comparison, analyses, [result])) == [
        next(a.label for a in analyses if a.path.endswith(
            next(s.trace_files[0] for s in result.strategies if s.name == "threads")))]
    # traces of no run: nothing to withhold against
    assert diff_charts.withheld_explanations(comparison, analyses, []) == {}


_DURATION = re.compile(r"^[+−]?(\d+|\d+\.\d+) (s|ms|µs|ns)$")


def test_waterfall_labels_read_as_the_consoles(page) -> None:
    """``+10.98 ms`` beside ``+0.0009813 ms`` once; now each label is the console's
    duration (3 significant digits in the unit that fits), signed as its verdict line."""
    falls = [c for c in charts_of(page) if c["id"].startswith("waterfall")]
    assert falls
    for chart in falls:
        (trace,) = chart["data"]
        ms_values = trace["y"]
        expected = [units.duration(ms_values[0] * 1e6),
                    *(signed_duration(v * 1e6) for v in ms_values[1:-1]),
                    units.duration(ms_values[-1] * 1e6)]
        assert trace["text"] == expected
        for label in trace["text"]:
            assert _DURATION.match(label), label
            assert len(re.sub(r"\D", "", label).lstrip("0")) <= 3, label
    # sequential+amp's reduction term: -0.04258 ms once, the console's "−42.6 µs" now
    (amp,) = [c for c in falls if c["title"] == "sequential+amp against sequential"]
    assert amp["data"][0]["text"][0] == "3.46 s" and "−42.6 µs" in amp["data"][0]["text"]


def _colours(trace: dict) -> list[str]:
    found: list[str] = []
    for part in (trace.get("marker") or {}, trace.get("line") or {}):
        c = part.get("color")
        found += c if isinstance(c, list) else [c] if isinstance(c, str) else []
    for key in ("increasing", "decreasing", "totals"):
        c = ((trace.get(key) or {}).get("marker") or {}).get("color")
        found += [c] if c else []
    return found


def test_each_strategy_has_one_colour_that_means_it_in_every_chart(page) -> None:
    """orange was threads+amp's bar, then the profiled median's; blue sequential's bar and
    the step-time boxes. Now every chart that draws a strategy draws it in its colour and
    nothing else takes one."""
    charts = charts_of(page)
    seen: dict[str, set[str]] = {}
    others: set[str] = set()
    for chart in charts:
        if chart["kind"] == "timeline":
            others |= set(chart["timeline"]["colors"])
            continue
        for trace in chart["data"]:
            colours = _colours(trace)
            if chart["id"] in ("throughput", "overhead"):
                for x, c in zip(trace["x"], colours, strict=True):
                    seen.setdefault(x, set()).add(c)
            elif chart["id"] == "step-time" and trace["type"] == "box":
                seen.setdefault(trace["name"], set()).update(colours)
            elif chart["id"].startswith("memory"):
                owner = trace["legendgroup"]
                seen.setdefault(owner, set()).update(colours)
            else:
                others |= set(colours)
    assert set(seen) == set(STRATEGIES)
    assert all(len(c) == 1 for c in seen.values()), seen
    mine = {next(iter(c)) for c in seen.values()}
    assert len(mine) == len(STRATEGIES)
    assert mine <= set(figures.STRATEGY_COLORS)
    assert not mine & others, mine & others
    # the passes of the overhead chart are told apart by pattern, not by a colour
    overhead = next(c for c in charts if c["id"] == "overhead")
    timed, profiled = overhead["data"]
    assert timed["marker"]["color"] == profiled["marker"]["color"]
    assert profiled["marker"]["pattern"]["shape"] and "pattern" not in timed["marker"]
    step = next(c for c in charts if c["id"] == "step-time")
    assert {tuple(_colours(t)) for t in step["data"] if t["type"] != "box"} == {
        (figures.NEUTRAL,), (figures.NEUTRAL_SAMPLES,)}


def test_no_other_series_can_take_a_strategys_colour() -> None:
    """The palettes of classes, op families, step parts and other series, and the fixed
    colours of the waterfall and the what-if charts, share none with the strategies'."""
    taken = {*figures.CLASS_COLORS.values(), *figures.FAMILY_COLORS.values(),
             *figures.STEP_PART_COLORS.values(), *figures.SERIES_COLORS, figures.NEUTRAL,
             whatif_charts._REPLAYED, whatif_charts._NOT_TRUSTED, "#e15759", "#59a14f",
             "#4e79a7"}
    assert len(set(figures.STRATEGY_COLORS)) == len(figures.STRATEGY_COLORS)
    assert not set(figures.STRATEGY_COLORS) & {c.lower() for c in taken}
    names = ["a", "b", "a", "c"]
    assert list(figures.strategy_colors(names).values()) == list(figures.STRATEGY_COLORS[:3])


@pytest.fixture(scope="module")
def analyses():
    names = ("h100_vit_image_classification.json.gz", "cpu_torch_profiler.pt.trace.json.gz")
    return [analyze_table(load(DATA / n), label=n.split(".")[0]) for n in names]


def test_the_memory_caption_names_only_the_lines_drawn(page, analyses) -> None:
    """The CPU has no caching allocator: no reserved line, and the caption said one was
    dashed. Now it says reserved (dashed) only where some trace draws it, and for which
    traces when not all do."""
    cpu = next(c for c in charts_of(page) if c["id"].startswith("memory"))
    assert not any("reserved" in t["name"] for t in cpu["data"])
    assert "dashed" not in cpu["caption"] and "reserved by the caching" not in cpu["caption"]
    assert cpu["caption"].startswith("Bytes allocated (the traces record no reserved bytes")
    cpu_chart, cuda_chart = trace_charts.memory_charts(analyses)
    assert [t["line"].get("dash") for t in cuda_chart.data if t["mode"] == "lines"] == [
        None, "dash"]
    assert "reserved by the caching allocator (dashed) on cuda:0" in cuda_chart.caption
    assert "dashed" not in cpu_chart.caption
    vit = analyses[0]
    series = vit.memory_timeline.devices[1]
    twin = msgspec.structs.replace(vit, path="other.json", label="other",
                                   memory_timeline=msgspec.structs.replace(
                                       vit.memory_timeline, devices=(msgspec.structs.replace(
                                           series, reserved_bytes=()),)))
    (mixed,) = [c for c in trace_charts.memory_charts([vit, twin]) if "cuda" in c.title]
    assert "(dashed, recorded for h100_vit_image_classification only)" in mixed.caption
    assert sum(t["line"].get("dash") == "dash" for t in mixed.data if t["mode"] == "lines") == 1


def test_a_record_folders_report_starts_with_its_answer(tmp_path) -> None:
    """A ``profkit record`` folder (record.json beside the traces it wrote) gets an answer
    line first, as a run folder's report does: the step, where it goes, what to try."""
    folder = tmp_path / "train" / "20260101-000000-abcd"
    (folder / "traces").mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps({"schema": "profkit.record/1"}))
    trace = folder / "traces" / "main.pt.trace.json"
    trace.write_bytes(gzip.decompress((DATA / "cpu_torch_profiler.pt.trace.json.gz")
                                      .read_bytes()))
    text = api.report_html([folder])
    body = body_of(text)
    (a,) = api.analyze([trace])
    line = (f"Answer: a step takes {units.duration(a.steps.headline_median_ns)} (CPU-side "
            f"median of {a.steps.count} recorded steps), convolution the most of the CPU op "
            f"self time ({units.percent(a.cpu.classes[0].share)}); first recommendation: "
            f"{rules.title(a.recommendations[0])}")
    assert f'<p class="answer"><strong>{html.escape(line)}</strong></p>' in body
    assert body.index('<p class="answer">') < body.index("<h2")
    # a folder of traces that is no recording has no answer to give
    plain = tmp_path / "plain"
    shutil.copytree(folder / "traces", plain)
    assert '<p class="answer">' not in api.report_html([plain])


def test_a_gpu_recording_answers_with_its_busy_share_and_predicted_gain(analyses) -> None:
    vit = analyses[0]
    line = record_answer.answer([vit])
    assert line.startswith(f"Answer: a step takes {units.duration(vit.steps.headline_median_ns)}"
                           " (device-side median of 1 recorded step), the GPU busy ")
    assert f"gemm the most of the GPU time ({units.percent(vit.gpu.classes[0].share)})" in line
    assert ("; first recommendation: GPU waits while the CPU runs model code (host-bound) "
            "(step ") in line and "with cuda-graphs)" in line
    ranked = [msgspec.structs.replace(vit, rank=1, world_size=2),
              msgspec.structs.replace(analyses[1], rank=0, world_size=2)]
    assert record_answer.answer(ranked).startswith("Answer (rank 0 of 2): ")
    assert record_answer.answer([]) is None


def test_the_record_command_passes_its_answer(tmp_path, analyses) -> None:
    """``profkit record`` writes report.html from the analyses it has, before record.json
    (written when the script ends): the folder is told by its ``.record`` folder, and the
    answer comes from those analyses, as from a report of the folder."""
    folder = tmp_path / "rec"
    (folder / ".record").mkdir(parents=True)
    text = api.report_html([folder], title="profkit record: train.py",
                           analyses=analyses[1:], comparison=None, job_views=())
    assert f"<strong>{html.escape(record_answer.answer(analyses[1:]))}</strong>" in text
    assert html_report.render("t", analyses[1:]).count('<p class="answer">') == 0
