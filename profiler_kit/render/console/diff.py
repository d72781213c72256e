"""Rich console output for ``profkit diff``: metadata side by side, then per model the
p50 to p95 seconds per iteration and aggregate examples/s of each configuration, with the
noise verdicts and the model behind them. Formats, never computes."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from profiler_kit.ddp_benchmark.diff import (
    BenchmarkDiff,
    ConfigurationDiff,
    NoiseVerdict,
    ReportDiff,
)
from profiler_kit.noise import BETWEEN_RUNS, NOT_TESTED, ONE_RUN_EACH
from profiler_kit.render.console.fit import TEXT, WORDS, FitTable
from profiler_kit.render.wording import units

_TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False, "title_justify": "left",
          "title_style": "bold"}


def _plain(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return units.significant(v, 6)
    if isinstance(v, (list, tuple)):
        return ", ".join(_plain(x) for x in v) or "-"
    return str(v)


def metadata_table(d: ReportDiff) -> Table:
    t = FitTable(title="Metadata", kinds={"": WORDS, d.base_label: TEXT, d.test_label: TEXT},
                 **_TABLE)
    t.add_column("")
    t.add_column(d.base_label, overflow="fold")
    t.add_column(d.test_label, overflow="fold")
    for row in d.metadata:
        style = "yellow" if row.differs else None
        t.add_row(row.key, _plain(row.base), _plain(row.test), style=style)
    return t


_NOISE = "beyond noise [95 % CI, %]"  # the verdict column's header, on two lines


def _noise(n: NoiseVerdict) -> Text:
    if n.beyond_noise is None:
        return Text("n/a", style="dim")
    low, high = n.ci_low_fraction or 0.0, n.ci_high_fraction or 0.0
    interval = f" [{100 * low:+.0f}, {100 * high:+.0f}]"
    if n.beyond_noise:
        return Text("yes" + interval, style="bold")
    return Text("no" + interval, style="dim")


def _change(fraction: float | None, lower_is_better: bool) -> Text:
    text = units.signed_percent(fraction, digits=0)
    if fraction is None or fraction == 0:
        return Text(text)
    better = fraction < 0 if lower_is_better else fraction > 0
    return Text(text, style="green" if better else "red")


def _examples(per_s: float | None) -> str:
    return "-" if per_s is None else units.significant(per_s, 4)


def _p_value(c: ConfigurationDiff) -> str:
    return "-" if c.mann_whitney_p is None else f"{c.mann_whitney_p:.2g}"


def _runs(c: ConfigurationDiff) -> str:
    """How many independent runs stand behind each side (shown under the configuration)."""
    return f"{c.base_repeats}/{c.test_repeats} runs"


def benchmark_table(b: BenchmarkDiff, base_label: str, test_label: str) -> Table:
    bucket = _plain(b.base_bucket_size)
    if b.test_bucket_size != b.base_bucket_size:
        bucket = f"{bucket} → {_plain(b.test_bucket_size)}"
    # narrow: a verdict's interval goes below its word, whole
    intervals = [_noise(p.noise).plain.partition(" ")[2] for c in b.configurations
                 for p in c.percentiles]
    t = FitTable(title=f"Benchmark: {b.model}, batch {b.batch_size} per rank, bucket {bucket} MB",
                 caption=f"base: {base_label}   test: {test_label}", caption_justify="left",
                 kinds={"config": WORDS, _NOISE: WORDS},
                 least={_NOISE: max(map(len, intervals), default=0)}, **_TABLE)
    t.add_column("config", no_wrap=True)
    t.add_column("", no_wrap=True)
    t.add_column("base\ns/iter", justify="right", no_wrap=True)
    t.add_column("test\ns/iter", justify="right", no_wrap=True)
    t.add_column("\nΔ", justify="right", no_wrap=True)
    t.add_column("test\nex/s", justify="right", no_wrap=True)
    t.add_column("\nΔ", justify="right", no_wrap=True)
    t.add_column(_NOISE.replace(" [", "\n[", 1), no_wrap=True)
    t.add_column("MW\np", justify="right", no_wrap=True)
    for c in b.configurations:
        for i, p in enumerate(c.percentiles):
            first = i == 0
            t.add_row(
                c.configuration if first else _runs(c) if i == 1 else "",
                f"p{p.percentile}",
                units.duration(p.base_ns),
                units.duration(p.test_ns),
                _change(p.change_fraction, lower_is_better=True),
                _examples(p.test_examples_per_s),
                _change(p.examples_change_fraction, lower_is_better=False),
                _noise(p.noise),
                _p_value(c) if first else "",
                end_section=i == len(c.percentiles) - 1,
            )
    return t


def render(console: Console, d: ReportDiff) -> None:
    console.print(Text(f"profkit diff: {d.base_label} (base) vs {d.test_label} (test)",
                       style="bold"))
    console.print(metadata_table(d))
    for b in d.benchmarks:
        console.print(benchmark_table(b, d.base_label, d.test_label))
        for name in b.only_in_base:
            console.print(Text(f"  {name}: only in {d.base_label}", style="dim"))
        for name in b.only_in_test:
            console.print(Text(f"  {name}: only in {d.test_label}", style="dim"))
    for line in d.unmatched:
        console.print(Text(line, style="dim"))
    console.print(Text(_legend(d), style="dim"))


def _legend(d: ReportDiff) -> str:
    """What the columns mean and which noise model judged the verdicts shown."""
    models = {c.noise_model for b in d.benchmarks for c in b.configurations}
    level = f"{100 * (1 - d.alpha):g} %"
    lines = ["Δ: test against base (green is better); n/m runs: independent runs (repeats) "
             "behind base/test; ex/s: examples/s of all ranks at that percentile's step time."]
    if BETWEEN_RUNS in models:
        lines.append(
            f"Beyond noise, between runs: the {level} Welch t interval of the change of the "
            f"repeats' percentiles (shown, in %) lies beyond "
            f"+-{100 * d.min_effect_repeated_fraction:g} % (the drift between runs that "
            f"repeats run back to back cannot measure; --min-effect sets it); with one run "
            f"on a side, the other side's spread between runs stands for both (a t interval "
            f"with its runs - 1 degrees of freedom).")
    if ONE_RUN_EACH in models:
        lines.append(
            "n/a with 1/1 runs: one run a side is not judged, since the drift between runs "
            "is unknown and dwarfs what one run's samples show; run profkit run --repeats 3 "
            "on both sides (or give several runs a side). MW p: Mann-Whitney U test of the "
            f"whole distributions of the two runs (< {d.alpha:g}: they differ, which a drift "
            "between runs does too).")
    if NOT_TESTED in models or not models:
        lines.append("n/a: a report has percentiles only.")
    return "\n".join(lines)
