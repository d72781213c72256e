"""The scenario contract as the user guide documents it (docs/scenarios/your-own.md): a
scenario written from that page alone runs, and a workload that lacks what the runner
needs stops the run before anything is measured, with one line naming what is missing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_kit.errors import UsageError
from profiler_kit.measure import runner
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.measure.runner import RunRequest
from profiler_kit.scenario import from_file

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "scenarios" / "your-own.md"
TINY = MeasureOptions(repeats=1, iterations=2, warmup=0, profile_wait=0, profile_warmup=0,
                      profile_active=1)


def guide_scenario() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## The scenario contract"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_guide_scenario_runs(tmp_path: Path) -> None:
    path = tmp_path / "matmul.py"
    path.write_text(guide_scenario())
    result = runner.run(RunRequest(from_file(path), {"size": 32}, device="cpu", options=TINY,
                        out=tmp_path / "runs"))
    assert [(s.name, s.status) for s in result.strategies] == [("whole", "ok"),
                                                               ("blocks", "ok")]
    blocks = result.strategies[1]
    assert blocks.equivalence.ok and blocks.items_per_step == 32
    assert result.item_unit == "rows"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s.replace("        self.devices = [self.a.device]\n", ""),
     "workload MatmulWorkload does not set devices"),
    (lambda s: s.replace("        self.items_per_step = n  # rows of the product\n", ""),
     "workload MatmulWorkload does not set items_per_step"),
    (lambda s: s.replace("self.devices = [self.a.device]", "self.devices = []"),
     "MatmulWorkload.devices must be a non-empty list"),
    (lambda s: s.replace("    def outputs(self)", "    def not_outputs(self)"),
     "abstract method"),
    (lambda s: s.replace("return MatmulWorkload(config, 1 if strategy.name == \"whole\" else 4)",
                         "return torch.nn.Linear(2, 2), torch.randn(2)"),
     "build() returned tuple, which is not a profiler_kit.scenario.Workload"),
])
def test_a_workload_missing_a_required_attribute_fails_at_build_time(
        tmp_path: Path, edit, message: str) -> None:
    path = tmp_path / "broken.py"
    source = edit(guide_scenario())
    assert source != guide_scenario()
    path.write_text(source)
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        runner.run(RunRequest(from_file(path), {"size": 8}, device="cpu", options=TINY,
                   out=tmp_path / "runs"))
    assert "\n" not in str(caught.value)
    if message == "abstract method":
        assert "outputs" in str(caught.value)


def test_one_line_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text(guide_scenario().replace("        self.devices = [self.a.device]\n", ""))
    r = subprocess.run([sys.executable, "-m", "profiler_kit", "run", str(path), "--out",
                        str(tmp_path / "runs"), "--iterations", "2"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("profkit: error: scenario 'matmul', strategy 'whole': workload "
                           "MatmulWorkload does not set devices")
