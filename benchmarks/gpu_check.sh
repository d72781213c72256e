#!/usr/bin/env bash
# Run profkit on this machine's GPU with CUDA defaults, the seeds' experiments included, and
# keep what it measured, to be committed.
#
#   bash benchmarks/gpu_check.sh [OUT]               # OUT: default benchmarks/results/<gpu-name>
#   bash benchmarks/gpu_check.sh --device cpu [OUT]  # the rehearsal: every step on the CPU,
#                                                    # small and quick (OUT: a temporary folder)
#
# The steps, most important first (GPU_CHECK_STEPS="a b ..." picks others, in its order),
# each under its own time limit; once GPU_CHECK_BUDGET_S
# seconds (default 600) have passed, the steps left are skipped and named in OUT/status.txt
# (a step never runs past the budget):
#   main        the README's main job: concurrent --amp --streams (two models, batch 200)
#   pytest-gpu  pytest -m gpu
#   multimodel  N parallel linear models (N = 1, 8, 32, 64), --amp
#   ddp         nccl at world size 1 (no-ddp against ddp), the bucket sweep (25 and 1 MB)
#   batch400    concurrent --amp --streams --batch-size 400
#   snapshot    concurrent with --memory-snapshot, then `profkit memory RUN --json`
#   tune-resnet profkit tune examples/tune_resnet.py --quick (every knob, the CUDA ones too)
#   record      profkit record -- a CNN training script on CUDA
#   train       concurrent --amp --streams --train (the gradient scaler)
#   counters    a CNN recorded by torch's cupti_monitor backend with the GPU counters,
#               exported as JSON and .pftrace (benchmarks/gpu_counters_trace.py), both
#               analyzed; then profkit record --counters and run concurrent --counters
#   tune-transformer, pipeline, snapshot-overhead (benchmarks/memory_snapshot_overhead.py)
# Each run keeps run.json, summary.md, report.html, its console output and
# `profkit analyze RUN --json` (gzipped) under OUT/<step>/; the traces stay in the work
# folder (large). Rehearsed on the 2-core CPU machine: every step passes in 290-345 s.
# A step that fails or runs out of time is recorded in OUT/status.txt and the others still
# run; the script exits 1 if any failed or was skipped.
set -uo pipefail
cd "$(dirname "$0")/.."

device=cuda
if [ "${1:-}" = "--device" ]; then
    device=$2
    shift 2
fi
if ! python -c 'import torch' 2>/dev/null; then
    echo "gpu_check: torch is not importable: activate profkit's environment first" >&2
    exit 2
fi
if [ "$device" = cuda ]; then
    gpu=$(python -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")')
    if [ -z "$gpu" ]; then
        echo "gpu_check: no CUDA device visible to torch (bash $0 --device cpu rehearses)" >&2
        exit 2
    fi
    slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-//; s/-$//')
    out=${1:-benchmarks/results/$slug}
    quick=()  # the scenarios' CUDA defaults
    big_batch=400
    step_limit=240
else
    gpu="none (rehearsal on the $device)"
    out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/profkit-gpu-rehearsal.XXXXXX")}
    quick=(--iterations 2 --warmup 1 --repeats 1)
    big_batch=4
    step_limit=300
fi
budget=${GPU_CHECK_BUDGET_S:-600}
work=${GPU_CHECK_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/profkit-gpu-check.XXXXXX")}
mkdir -p "$out"
status_file="$out/status.txt"
{
    echo "gpu: $gpu"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    python -c 'import torch; print("torch:", torch.__version__, "cuda:", torch.version.cuda)'
    python -c "import importlib.util as u; print('cupti_monitor (torch.profiler._cupti):', u.find_spec('torch.profiler._cupti') is not None)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
        | sed 's/^/nvidia-smi: /'
} > "$status_file"

failed=0
began=$SECONDS

step() {  # step NAME LIMIT_S COMMAND...: run it unless the budget is spent; record how it ended
    local name=$1 limit=$2
    shift 2
    local left=$((budget - (SECONDS - began)))
    if [ "$left" -lt 30 ]; then  # too little left for any step to finish
        echo "$name: skipped, the budget of $budget s is spent" >> "$status_file"
        failed=1
        return 1
    fi
    [ "$left" -lt "$limit" ] && limit=$left  # no step runs past the budget
    echo "== $name: $*"
    mkdir -p "$out/$name"
    local start=$SECONDS
    timeout --kill-after=20 "$limit" "$@" 2>&1 | tee "$out/$name/console.txt"
    local rc=${PIPESTATUS[0]}
    local how="exit $rc"
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && how="out of time ($limit s)"
    echo "$name: $how in $((SECONDS - start)) s ($*)" >> "$status_file"
    [ "$rc" -eq 0 ] || failed=1
    return "$rc"
}

kept=""
keep() {  # keep NAME: the newest run under the work folder of NAME (then in $kept), its
    # reports and analysis
    local name=$1
    kept=$(dirname "$(ls -t "$work/$name"/*/*/run.json 2>/dev/null | head -1)")
    if [ -z "$kept" ] || [ "$kept" = "." ]; then
        kept=""
        return
    fi
    for f in run.json summary.md report.html ddp_report.json pipeline_report.json; do
        [ -f "$kept/$f" ] && cp "$kept/$f" "$out/$name/"
    done
    analyze "$name" "$kept"
}

analyze() {  # analyze NAME PATH: profkit analyze --json of PATH, gzipped, into OUT/NAME
    if profkit analyze "$2" --json "$out/$1/analysis.json" > /dev/null 2>&1; then
        gzip -f "$out/$1/analysis.json"
    else
        echo "$1: profkit analyze failed on $2" >> "$status_file"
        failed=1
    fi
}

run() {  # run NAME SCENARIO ARGS...: one profkit run on the device, kept
    local name=$1
    shift
    step "$name" "$step_limit" profkit run "$@" --device "$device" --out "$work/$name" \
        "${quick[@]}"
    keep "$name"
}

step_main() { run main concurrent --amp --streams; }
step_pytest_gpu() {
    # GPU_CHECK_PYTEST_K: a -k expression (the GPU tests to run, spaces and all)
    local only=()
    [ -n "${GPU_CHECK_PYTEST_K:-}" ] && only=(-k "$GPU_CHECK_PYTEST_K")
    [ "$device" = cuda ] && step pytest-gpu 300 env PYTHONPATH=benchmarks python -m pytest -v -m gpu -rs \
        -p pytest_failures_now -o faulthandler_timeout=90 "${only[@]}"
}
step_multimodel() { run multimodel multimodel --amp; }
step_ddp() { run ddp ddp --bucket-cap-mb 25,1; }
step_batch400() { run batch400 concurrent --amp --streams --batch-size "$big_batch"; }
step_snapshot() {  # the allocator's snapshot (CUDA only: the rehearsal records memory by
    # category instead)
    local memory_source=--memory-snapshot
    [ "$device" = cuda ] || memory_source=--with-stack
    run snapshot concurrent --strategies sequential "$memory_source"
    if [ -n "$kept" ]; then
        step snapshot-memory 120 profkit memory "$kept" --json "$out/snapshot/memory.json"
    fi
}
tune_args=(${GPU_CHECK_TUNE_ARGS:---quick})  # GPU_CHECK_TUNE_ARGS: other knobs, say
[ "$device" = cuda ] || tune_args=(--quick --knobs channels_last --no-batch-sweep)
tune() {  # tune NAME EXAMPLE
    step "$1" "$step_limit" profkit tune "examples/$2" --device "$device" \
        --out "$work/$1" "${tune_args[@]}"
    cp "$work/$1"/*/*/{tune.json,summary.md} "$out/$1/" 2>/dev/null
}
step_tune_resnet() { tune tune-resnet tune_resnet.py; }
step_record() {
    step record "$step_limit" profkit record -o "$work/record" --top 10 -- \
        python tests/record_scripts/cnn_dataloader.py --device "$device" --epochs 3 --batches 8
    cp "$work"/record/{record.json,summary.md} "$out/record/" 2>/dev/null
    [ -d "$work/record" ] && analyze record "$work/record"
}
step_train() { run train concurrent --amp --streams --train; }
step_counters() {  # CUDA only: the counters are a GPU's
    [ "$device" = cuda ] || return 0
    step counters "$step_limit" python benchmarks/gpu_counters_trace.py "$work/counters"
    for f in "$work"/counters/*.json.gz "$work"/counters/*.pftrace; do
        [ -e "$f" ] || continue
        local base
        base=$(basename "$f")
        mkdir -p "$out/counters/$base"
        profkit analyze "$f" > "$out/counters/$base/console.txt" 2>&1
        analyze "counters/$base" "$f"
    done
    step record-counters "$step_limit" profkit record --counters -o "$work/record-counters" \
        -- python tests/record_scripts/cnn_dataloader.py --device "$device" --epochs 2 \
        --batches 8
    [ -d "$work/record-counters" ] && analyze record-counters "$work/record-counters"
    run run-counters concurrent --counters
}
step_tune_transformer() { tune tune-transformer tune_transformer.py; }
step_pipeline() { run pipeline pipeline; }
step_snapshot_overhead() {
    [ "$device" = cuda ] && step snapshot-overhead 180 python benchmarks/memory_snapshot_overhead.py
}

# GPU_CHECK_STEPS picks the steps and their order (a rerun after a first run, say)
steps=${GPU_CHECK_STEPS:-main pytest-gpu multimodel ddp batch400 snapshot tune-resnet record train counters tune-transformer pipeline snapshot-overhead}
for name in $steps; do
    fn="step_${name//-/_}"
    if declare -F "$fn" > /dev/null; then
        "$fn"
    else
        echo "gpu_check: no step named $name" >&2
        failed=1
    fi
done

echo "results in $out (traces in $work); took $((SECONDS - began)) s"
echo "total: $((SECONDS - began)) s, budget $budget s" >> "$status_file"
exit $failed
