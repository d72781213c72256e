#!/usr/bin/env bash
# On a GPU machine without network whose python3 holds torch with CUDA: install profkit
# (editable, as the README does) and the wheels benchmarks/gpu_wheels.sh put in .whl/, run
# benchmarks/gpu_check.sh, and pack what it kept and the traces it left into DEST, to
# carry back:
#
#   bash benchmarks/gpu_offline.sh DEST
#
# DEST/results.tgz holds benchmarks/results/<gpu-name>/; DEST/traces.tgz.N the run
# folders (traces included), most important step first, in pieces of 15 MB (at most three:
# a gzipped tar cut short still gives back every file before the cut).
set -uo pipefail
cd "$(dirname "$0")/.."
dest=${1:?usage: gpu_offline.sh DEST}
mkdir -p "$dest"
export PIP_BREAK_SYSTEM_PACKAGES=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || exit 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-build-isolation -e . \
    || exit 2
bin=$(mktemp -d)
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > "$bin/python"  # gpu_check.sh calls python
chmod +x "$bin/python"
export PATH="$bin:$(dirname "$(command -v python3)"):$PATH"
python3 -m pip list 2>/dev/null | grep -iE '^(torch|numpy|scipy|msgspec|rich|pandas|tensorboard|plotly|torch-tb-profiler|nvidia-ml-py|psutil) ' \
    > "$dest/packages.txt"

export GPU_CHECK_WORK=$(mktemp -d)
bash benchmarks/gpu_check.sh 2>&1 | tee "$dest/gpu_check.log"
rc=${PIPESTATUS[0]}

tar -czf "$dest/results.tgz" benchmarks/results
cd "$GPU_CHECK_WORK"
steps=()
for s in main tune-resnet record counters ddp train batch400 multimodel snapshot tune-transformer pipeline; do
    [ -e "$s" ] && steps+=("$s")
done
tar -cf - "${steps[@]}" | gzip -1 | split -b 15M -d -a 1 - "$dest/traces.tgz."
for piece in "$dest"/traces.tgz.[3-9]; do  # what comes back: 8 files, 64 MiB in all
    [ -e "$piece" ] && rm "$piece" && echo "gpu_offline: dropped $piece (too many pieces)"
done
echo "gpu_offline: packed into $dest; gpu_check exit $rc"
exit "$rc"
