#!/usr/bin/env bash
# Run profkit's scenarios on this machine's GPU with CUDA defaults and keep what they measured.
#
#   bash benchmarks/gpu_check.sh [OUT]      # OUT: default benchmarks/results/<gpu-name>
#
# Runs the README's main job (`profkit run concurrent --amp --streams`) on CUDA, then
# multimodel, ddp and pipeline with their CUDA defaults, then `pytest -m gpu`, then what
# `--memory-snapshot` costs (benchmarks/memory_snapshot_overhead.py). For each run,
# run.json, summary.md and report.html (when written) are copied to OUT/<scenario>/; the
# traces stay under the work folder (large). A scenario that fails is recorded in
# OUT/status.txt and the others still run; the script exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! python -c 'import torch' 2>/dev/null; then
    echo "gpu_check: torch is not importable: activate profkit's environment first" >&2
    exit 2
fi
gpu=$(python -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")')
if [ -z "$gpu" ]; then
    echo "gpu_check: no CUDA device visible to torch; nothing to do" >&2
    exit 2
fi
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-//; s/-$//')
out=${1:-benchmarks/results/$slug}
work=$(mktemp -d "${TMPDIR:-/tmp}/profkit-gpu-check.XXXXXX")
mkdir -p "$out"
status_file="$out/status.txt"
{
    echo "gpu: $gpu"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    python -c 'import torch; print("torch:", torch.__version__, "cuda:", torch.version.cuda)'
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
        | sed 's/^/nvidia-smi: /'
} > "$status_file"

failed=0
run() {  # run NAME ARGS...: one profkit run, its reports copied to $out/NAME
    local name=$1; shift
    echo "== profkit run $*"
    local start=$SECONDS
    profkit run "$@" --device cuda --out "$work/$name"
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - start)) s (profkit run $*)" >> "$status_file"
    [ $rc -eq 0 ] || failed=1
    local run_dir
    run_dir=$(dirname "$(ls -t "$work/$name"/*/*/run.json 2>/dev/null | head -1)")
    if [ -n "$run_dir" ] && [ "$run_dir" != "." ]; then
        mkdir -p "$out/$name"
        for f in run.json summary.md report.html ddp_report.json pipeline_report.json; do
            [ -f "$run_dir/$f" ] && cp "$run_dir/$f" "$out/$name/"
        done
    fi
}

run concurrent concurrent --amp --streams
run concurrent-train concurrent --amp --streams --train
run multimodel multimodel --amp
run ddp ddp
run pipeline pipeline

echo "== pytest -m gpu"
python -m pytest -q -m gpu -rs 2>&1 | tee "$out/pytest-gpu.txt"
rc=${PIPESTATUS[0]}
echo "pytest -m gpu: exit $rc" >> "$status_file"
[ $rc -eq 0 ] || failed=1

echo "== benchmarks/memory_snapshot_overhead.py"
python benchmarks/memory_snapshot_overhead.py 2>&1 | tee "$out/memory_snapshot_overhead.txt"
rc=${PIPESTATUS[0]}
echo "memory_snapshot_overhead: exit $rc" >> "$status_file"
[ $rc -eq 0 ] || failed=1

echo "results in $out (traces in $work)"
exit $failed
