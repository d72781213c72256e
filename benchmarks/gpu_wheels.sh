#!/usr/bin/env bash
# Download, on a machine with network, the wheels that profkit needs beyond what a GPU
# machine's own Python 3.12 already holds (torch, numpy, scipy, rich, pandas, psutil,
# tensorboard and its protobuf, nvidia-ml-py, pytest, hypothesis), into .whl/ at the
# repository root (perfetto reads .pftrace; cupti-python is what torch's cupti_monitor
# exporter imports, installed there without its CUPTI pin), for a
# GPU machine without network: benchmarks/gpu_offline.sh installs them there.
#
#   bash benchmarks/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    msgspec isal plotly torch-tb-profiler==0.4.3 perfetto "cupti-python==13.4.0" pyelftools
ls -l .whl
