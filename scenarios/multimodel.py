"""Scenario ``multimodel``: N small independent models trained at once, five ways.

The question: is a loop of ``Linear`` layers, a loop of ``Conv1d(k=1)``, one grouped
``Conv1d(groups=N)``, one batched matmul, or ``torch.func.vmap`` the fastest way to
train N small models side by side? Every strategy starts from the same weights and
computes the same outputs and gradients; only the way the work is laid out differs.
Inputs live in the per-model layout ``[N, batch, (seq,) d_in]``, so layout changes a
strategy needs (the grouped convolution's permute/reshape) are part of its time.

This module stays free of torch so listing scenarios and checking arguments stay
light; the models and the training step live in ``multimodel_workload``.
"""

from __future__ import annotations

from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


class MultiModel(Scenario):
    """N parallel ``d_in -> d_out`` linear models, trained with SGD on an MSE loss."""

    name = "multimodel"
    description = (
        "N independent linear models trained at once: Linear loop, Conv1d loop, "
        "grouped Conv1d, batched matmul, vmap"
    )
    item_unit = "samples"
    baseline = "linear"
    params = (
        Param(
            "n_model",
            int,
            (1, 8, 32),
            "number of independent models",
            cuda_default=(1, 8, 32, 64),
            sweep=True,
            min_value=1,
        ),
        Param("d_in", int, 64, "input features of each model", cuda_default=256, min_value=1),
        Param("d_out", int, 128, "output features of each model", cuda_default=512, min_value=1),
        Param("batch", int, 32, "samples per model per step", min_value=1),
        Param(
            "seq_len",
            int,
            0,
            "sequence length of each sample (0: no sequence dimension)",
            min_value=0,
        ),
        Param("lr", float, 0.01, "SGD learning rate", min_value=0.0),
        Param("momentum", float, 0.9, "SGD momentum", min_value=0.0),
    )
    strategies = (
        Strategy("linear", "ModuleList of nn.Linear, outputs stacked"),
        Strategy("conv1d", "ModuleList of nn.Conv1d(kernel_size=1), outputs stacked"),
        Strategy(
            "gconv1d",
            "one nn.Conv1d(N*d_in, N*d_out, kernel_size=1, groups=N), layout changes timed",
        ),
        Strategy("bmm", "stacked weights [N, d_in, d_out], one torch.baddbmm"),
        Strategy("vmap", "torch.func.stack_module_state + functional_call + vmap"),
    )

    def build(self, strategy: Strategy, config: RunConfig) -> Workload:
        from profiler_kit.scenarios.multimodel_workload import MultiModelWorkload

        return MultiModelWorkload(strategy, config)
