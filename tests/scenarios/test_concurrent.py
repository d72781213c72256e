"""The concurrent scenario: strategies agree, threads join and propagate errors, params check."""

from __future__ import annotations

import pytest
import torch

from profiler_kit.errors import UsageError
from profiler_kit.measure import equivalence
from profiler_kit.scenario import RunConfig, builtin

SMALL = {"batch_size": 2, "image_size": 32, "models": "resnet18,resnet18",
         "train": False}


def _strategy(scenario, name: str):
    base = next(s for s in scenario.strategies if s.name == name.removesuffix("+amp"))
    return base.amp_twin() if name.endswith("+amp") else base


def _build(scenario, name: str, **params):
    amp = "bfloat16" if name.endswith("+amp") else None
    config = RunConfig(params={**SMALL, **params}, device="cpu", amp_dtype=amp, seed=3)
    return scenario.build(_strategy(scenario, name), config)


def test_threads_and_amp_compute_what_sequential_computes() -> None:
    scenario = builtin("concurrent")
    base = _build(scenario, "sequential")
    ref = equivalence.snapshot(base.outputs())
    assert [tuple(t.shape) for t in ref] == [(2, 1000), (2, 1000)]
    assert base.items_per_step == 4 and base.devices == [torch.device("cpu")]
    threads = _build(scenario, "threads")
    try:
        assert equivalence.compare(ref, threads.outputs(), None).ok
        threads.step()  # a timed step runs both models
        assert len(threads.last) == 2
    finally:
        threads.close()
    amp = _build(scenario, "threads+amp")
    try:
        result = equivalence.compare(ref, amp.outputs(), "bfloat16")
        assert result.ok and result.max_rel_error > 0
    finally:
        amp.close()


def test_training_outputs_include_gradients_and_leave_the_timed_models_untouched() -> None:
    scenario = builtin("concurrent")
    seq = _build(scenario, "sequential", train=True)
    before = [p.detach().clone() for p in seq.models[0].parameters()]
    ref = equivalence.snapshot(seq.outputs())
    assert len(ref) == 4  # logits and flattened gradients of both models
    n_params = sum(p.numel() for p in seq.models[0].parameters())
    assert ref[2].numel() == n_params
    assert all(torch.equal(a, b) for a, b in zip(before, seq.models[0].parameters(),
                                                 strict=True))
    seq.step()  # forward, backward and an SGD step change the weights
    assert not all(torch.equal(a, b) for a, b in zip(before, seq.models[0].parameters(),
                                                     strict=True))
    threads = _build(scenario, "threads", train=True)
    try:
        assert equivalence.compare(ref, threads.outputs(), None).ok
    finally:
        threads.close()


def test_threads_propagate_a_failing_model_after_joining() -> None:
    scenario = builtin("concurrent")
    w = _build(scenario, "threads")
    w.inputs[1] = torch.randn(2, 5, 32, 32)  # wrong channel count for model 1
    try:
        with pytest.raises(RuntimeError):
            w.step()
    finally:
        w.close()


def test_model_names_are_checked() -> None:
    scenario = builtin("concurrent")
    with pytest.raises(UsageError, match="unknown torchvision classification model"):
        scenario.validate({**SMALL, "models": "resnet18,not_a_model"})
    with pytest.raises(UsageError, match="two or more"):
        scenario.validate({**SMALL, "models": "resnet18"})


def test_cpu_and_cuda_defaults() -> None:
    scenario = builtin("concurrent")
    batch = scenario.param("batch_size")
    assert batch.default_for("cuda") == 200 and batch.default_for("cpu") <= 8
    assert scenario.param("image_size").default == 32
    assert scenario.param("models").default == "densenet121,resnet101"
    assert scenario.param("train").default is False
    assert {s.name: s.requires for s in scenario.strategies} == {
        "sequential": (), "threads": (), "streams": ("cuda",), "devices": ("cuda", "multi_gpu")}
