"""summary.md: the run as a human report (formats only; numbers come from RunResult)."""

from __future__ import annotations

from profiler_kit.analysis.hotspot_summary import CLASSES
from profiler_kit.render.wording import run_answer, speedup_noise, units
from profiler_kit.render.wording.diff_views import strategy_verdict
from profiler_kit.render.wording.predictions import HEAD as PREDICTION_HEAD
from profiler_kit.render.wording.predictions import TITLE as PREDICTION_TITLE
from profiler_kit.render.wording.predictions import prediction_rows
from profiler_kit.render.wording.workload_rows import has_phases, job_lines, workload_rows
from profiler_kit.results import OK, RunResult, StrategyResult, best


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _results(result: RunResult, point: str) -> list[str]:
    rows = result.at(point)
    top = best(rows)
    multi = any(s.world_size > 1 for s in rows)
    lines = [
        "| strategy | n | median | IQR | mean | p50 | p75 | p90 | p95 | min | max "
        f"| {result.item_unit}/s | speedup | noise (95 % CI of speedup) | scaling "
        "| rank medians | profiled median | peak memory | status |",
        "|---|" + "---:|" * 17 + "---|",
    ]
    for s in rows:
        if s.status == OK and s.stats:
            st = s.stats
            name = f"**{s.name}** (best)" if top and s.name == top.name else s.name
            iqr = units.percent(st.iqr_fraction) + (" ⚠ noisy" if st.noisy else "")
            cells = [name, st.n, units.duration(st.median_ns), iqr, units.duration(st.mean_ns),
                     units.duration(st.p50_ns), units.duration(st.p75_ns),
                     units.duration(st.p90_ns), units.duration(st.p95_ns),
                     units.duration(st.min_ns), units.duration(st.max_ns),
                     units.rate(s.throughput_items_per_s, result.item_unit).split(" ")[0],
                     speedup_noise.speedup(s), speedup_noise.interval(s.noise),
                     units.percent(s.scaling_efficiency) if multi else "-",
                     " / ".join(units.duration(v) for v in s.rank_medians_ns) or "-",
                     units.duration(s.profiled.median_ns) if s.profiled else "-",
                     _memory(s), "ok"]
        else:
            why = s.reason or s.error or ""
            cells = [s.name] + ["-"] * 17 + [f"{s.status}: {why}" if why else s.status]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    legend = speedup_noise.legend(rows, result.baseline, top is not None)
    return lines + (["", legend] if legend else [])


def _memory(s: StrategyResult) -> str:
    parts = [f"{dev} {units.nbytes(v.get('allocated_bytes'))}"
             for dev, v in s.peak_memory.items() if v.get("allocated_bytes") is not None]
    why = s.info.get("cpu_memory")  # e.g. threads profiled without memory events
    if why and "cpu" not in s.peak_memory:
        parts.append(f"CPU {why}")
    return ", ".join(parts) or "-"


def _hotspots(result: RunResult, point: str) -> list[str]:
    rows = [s for s in result.at(point) if s.status == OK and s.hotspots]
    if not rows:
        return []
    lines = [f"Hotspots (share of {rows[0].hotspot_basis}, from the trace analysis):", "",
             "| strategy | " + " | ".join(CLASSES) + " |", "|---|" + "---:|" * len(CLASSES)]
    for s in rows:
        lines.append(f"| {s.name} | "
                     + " | ".join(units.percent(s.hotspots.get(c)) for c in CLASSES) + " |")
    return lines


def _predictions(result: RunResult, point: str) -> list[str]:
    found = prediction_rows(result, point)
    if found is None:
        return []
    body, notes = found
    lines = [f"{PREDICTION_TITLE}:", "", "| " + " | ".join(PREDICTION_HEAD) + " |",
             "|---|---|" + "---:|" * (len(PREDICTION_HEAD) - 2)]
    lines += ["| " + " | ".join(_cell(c) for c in cells) + " |" for cells in body]
    return lines + [""] + [f"- {n}" for n in notes] + ([""] if notes else [])


def _phases(result: RunResult, point: str) -> list[str]:
    rows = workload_rows(result, point)
    if rows is None:
        return []
    head, body = rows
    title = "Median time per phase:" if has_phases(result, point) else "Workload:"
    lines = [title, "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    lines += ["| " + " | ".join(_cell(c) for c in cells) + " |" for cells in body]
    return lines


def _rounds(result: RunResult) -> str:
    repeats = int(result.options.get("repeats") or 1)
    return (f", in each of {repeats} independent rounds (the first one profiled)"
            if repeats > 1 else "")


def _param(value: object) -> str:
    """A parameter as given on the command line: a sweep's values comma-separated."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def render_markdown(result: RunResult) -> str:
    env = result.environment
    lines = [f"# profkit run: {result.scenario}", "", result.description, ""]
    if result.interrupted:
        lines += ["**Interrupted**: only the strategies below finished.", ""]
    busy = run_answer.contention_line(result)
    if busy:
        lines += [f"**Busy machine**: {busy}.", ""]
    for point in result.point_labels:
        lines += [f"**{run_answer.answer(result, point)}**", ""]
        lines += [f"- {line}" for line in run_answer.oversubscribed(result, point)]
    if lines[-1] != "":
        lines.append("")
    params = ", ".join(f"{k}={_param(v)}" for k, v in result.params.items() if v != "")
    lines += [
        f"- run: `{result.run_dir.name}` ({result.started_at} to {result.finished_at or '-'})",
        f"- device: {result.device}; parameters: {params or 'none'}",
        f"- timing: {result.options.get('iterations')} samples after "
        f"{result.options.get('warmup')} warm-up iterations{_rounds(result)}; "
        f"baseline `{result.baseline}`; best: the most {result.item_unit}/s, "
        "when beyond noise of every other strategy",
        f"- torch {env.get('torch')}, torchvision {env.get('torchvision')}, "
        f"CUDA {env.get('cuda') or 'none'}; {env.get('device_count', 0)} GPU(s)"
        f"{''.join(' ' + d for d in env.get('devices') or [])}; "
        f"{env.get('cpu_threads')} CPU threads "
        f"on {env.get('hostname')}",
        f"- command: `{env.get('command_line')}`",
        "",
    ]
    for point in result.point_labels:
        if point:
            lines += [f"## {point}", ""]
        lines += _results(result, point) + [""]
        hot = _hotspots(result, point)
        if hot:
            lines += hot + [""]
        phases = _phases(result, point)
        if phases:
            lines += phases + [""]
        jobs = job_lines(result, point)
        if jobs:
            lines += ["Ranks (from the traces):", ""] + [f"- {line}" for line in jobs] + [""]
        verdicts = [v for v in map(strategy_verdict, result.at(point)) if v]
        if verdicts:
            lines += ["Why (the profiled steps' traces against the baseline's, mean per "
                      "step):", ""]
            lines += [f"- {v}" for v in verdicts] + [""]
        lines += _predictions(result, point)
    problems = [f"- skipped `{s.label}`: {s.reason}" for s in result.skipped]
    problems += [f"- failed `{s.label}`: {s.error}" for s in result.failed]
    if problems:
        lines += ["## Skipped and failed", ""] + problems + [""]
    lost = [f"- `{s.label}`: {line}" for s in result.strategies
            for line in s.info.get("files_lost", ())]
    if lost:
        lines += ["## Traces that did not reach the run folder", ""] + lost + [""]
    lines += ["## Traces", "", "```", result.tensorboard_command, "```", ""]
    return "\n".join(lines)
