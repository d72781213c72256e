"""The time window's profiler is never started or stopped inside torch.compile: the check
that defers it must hold for the whole compilation, forward and the backward compiled at
the first backward(), and must let go once the compiled code has returned."""

import torch
from torch._dynamo.backends.common import aot_autograd

from profiler_kit.record.hooks import _importing_or_compiling


def test_compiling_is_seen_in_every_part_of_the_compilation_and_not_after():
    seen: dict[str, bool] = {}

    def compiler(name):
        def compile_graph(gm, example_inputs):
            seen[name] = _importing_or_compiling()
            return gm.forward
        return compile_graph

    def backend(gm, example_inputs):
        seen["dynamo"] = _importing_or_compiling()
        return aot_autograd(fw_compiler=compiler("forward"),
                            bw_compiler=compiler("backward"))(gm, example_inputs)

    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    compiled = torch.compile(model, backend=backend)
    compiled(torch.randn(4, 8)).sum().backward()
    assert seen == {"dynamo": True, "forward": True, "backward": True}
    assert not _importing_or_compiling()  # user code between steps: the window may start
    torch._dynamo.reset()
