"""Inductor's own provenance for the graphs ``torch.compile`` built in this process, saved
beside the trace (``<worker>.inductor_provenance.json``) so ``analyze`` can put each
generated kernel under the user's lines (``analysis.code.provenance``).

:func:`enable` turns on, before anything compiles, Inductor's provenance tracking
(``torch._inductor.config.trace.provenance_tracking_level``: each compiled graph keeps,
per generated kernel, the stack traces of the FX nodes it fused, also through the FX
graph cache) and, for C++ kernels, its kernel profiling
(``cpp.enable_kernel_profile``: each kernel a ``graph_0_cpp_fused_...`` op in the trace;
without it a C++ kernel is no event at all), and turns Inductor's and AOTAutograd's
caches off (a cached graph's stacks are those of the compile that wrote it, the lines of
an older file: seen on torch 2.14). All are compile-time settings: a graph compiled before
:func:`enable` has none. :func:`write_beside` reads the compiled
graphs still alive (their FX cache key, direction and provenance) and writes the file.
Everything here is best effort: a PyTorch without these settings gets no file.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any

from profiler_kit.analysis.code.provenance import PROVENANCE_SUFFIX

FORMAT_VERSION = 1


def enable() -> bool:
    """Turn Inductor's provenance tracking and C++ kernel profiling on; False where this
    PyTorch has no such settings (or no Inductor)."""
    try:
        import torch._inductor.config as config
    except Exception:  # noqa: BLE001 - no Inductor: nothing compiles with it
        return False
    ok = False
    trace = getattr(config, "trace", None)
    if trace is not None and hasattr(trace, "provenance_tracking_level"):
        if not trace.provenance_tracking_level:
            trace.provenance_tracking_level = 1
        ok = True
    cpp = getattr(config, "cpp", None)
    if cpp is not None and hasattr(cpp, "enable_kernel_profile"):
        cpp.enable_kernel_profile = True
    if ok:  # a cached graph keeps the stacks of the compile that wrote it: stale lines
        _no_cache(config)
    return ok


def _no_cache(config: Any) -> None:
    """Inductor's FX graph cache and AOTAutograd's cache off: their key leaves out the
    source lines, so a graph from the cache names the lines of an older file."""
    if hasattr(config, "fx_graph_cache"):
        config.fx_graph_cache = False
    try:
        import torch._functorch.config as functorch_config

        if hasattr(functorch_config, "enable_autograd_cache"):
            functorch_config.enable_autograd_cache = False
    except Exception:  # noqa: BLE001
        pass


def enable_if_compiling() -> bool:
    """:func:`enable` where ``torch.compile`` has been called in this process (it imports
    ``torch._dynamo``; it compiles at the first call), so that a process that compiles
    nothing never pays for importing Inductor."""
    return "torch._dynamo" in sys.modules and enable()


def graphs() -> list[dict[str, Any]]:
    """The compiled graphs alive in this process that carry provenance."""
    module = sys.modules.get("torch._inductor.output_code")
    cls = getattr(module, "CompiledFxGraph", None) if module is not None else None
    if cls is None:
        return []
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, bool]] = set()
    for obj in gc.get_objects():
        if not issubclass(type(obj), cls):  # type(): no proxy or lazy module answers
            continue
        text = getattr(obj, "inductor_provenance_stack_traces_str", None)
        if not text:
            continue
        key = getattr(obj, "_fx_graph_cache_key", None)
        backward = bool((getattr(obj, "fx_kwargs", None) or {}).get("is_backward", False))
        if (key, backward) in seen:
            continue
        seen.add((key, backward))
        try:
            stacks = json.loads(text)
            nodes = _kernel_nodes(getattr(obj, "inductor_provenance_mapping_str", None))
        except ValueError:
            continue
        kernels: dict[str, dict[str, Any]] = {}
        for handle, traces in stacks.items():
            name = handle.rsplit(":", 1)[0]
            k = kernels.setdefault(name, {"nodes": [], "stacks": []})
            for n in nodes.get(handle, []):
                if n not in k["nodes"]:
                    k["nodes"].append(n)
            for t in traces or []:
                frames = parse_stack(t)
                if frames and frames not in k["stacks"]:
                    k["stacks"].append(frames)
        out.append({"key": key, "backward": backward, "kernels": kernels})
    return out


def _kernel_nodes(text: str | None) -> dict[str, list[str]]:
    """Kernel (``name:handle``) to the post-grad FX nodes it fused, from the node mappings."""
    if not text:
        return {}
    doc = json.loads(text)
    out: dict[str, list[str]] = {}
    for field in ("cppCodeToPost", "tritonKernelToPost"):
        for k, v in (doc.get(field) or {}).items():
            if isinstance(v, list):
                out.setdefault(k, []).extend(str(x) for x in v)
    return out


def parse_stack(text: str) -> list[list[Any]]:
    """``[file, line, function]`` per frame of a Python stack trace (outermost first), the
    file shortened as the profiler shortens it (relative to its sys.path entry)."""
    frames = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith('File "'):
            continue
        try:
            file, rest = line[6:].split('", line ', 1)
            number, _, func = rest.partition(", in ")
            frames.append([short_path(file), int(number), func.strip()])
        except ValueError:
            continue
    return frames


def short_path(file: str) -> str:
    for entry in sorted((p for p in sys.path if p), key=len, reverse=True):
        prefix = entry.rstrip("/") + "/"
        if file.startswith(prefix):
            return file[len(prefix):]
    return file


def write_beside(folder: str | os.PathLike[str], worker: str) -> str | None:
    """Write ``<folder>/<worker>.inductor_provenance.json`` when this process compiled
    graphs with provenance; its path, or None."""
    found = graphs()
    if not found:
        return None
    try:
        import torch

        version = str(torch.__version__)
    except Exception:  # noqa: BLE001
        version = "?"
    path = os.path.join(os.fspath(folder), worker + PROVENANCE_SUFFIX)
    doc = {"version": FORMAT_VERSION, "torch": version, "graphs": found}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
    return path
