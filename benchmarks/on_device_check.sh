#!/bin/bash
# One call on a lent GPU machine (issue #22): versions, install, the triton tests on the GPU, the GPU
# table; every log under $OUT. T_TESTS, T_PROFILE and T_BENCH bound the stages (seconds).
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi -L; python3 --version; python3 -m pip list 2>/dev/null |
    grep -iE "^(triton|cupy-cuda[0-9x]+|torch|jax|jaxlib|numpy|sympy|cloudpickle|pytest|pytest-xdist|pytest-timeout) "; } \
    > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
bash benchmarks/on_device.sh python3 -c "import dynamo._C; print('installed', dynamo.__file__)" || exit 1
export PYTHONPATH=/tmp/site
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    DYNAMO_TEST_GPU=1 timeout "${T_TESTS:-170}" python3 -m pytest -q -n "${WORKERS:-16}" -p no:cacheprovider \
        --timeout 150 --tb=short -rfE ${TESTS:-tests/backends/test_triton_*.py tests/dynamo/test_device_arrays.py} \
        > "$OUT/tests.txt" 2>&1
    echo "tests rc=$?"; grep -E "passed|failed|error" "$OUT/tests.txt" | tail -3
fi
timeout "${T_PROFILE:-60}" python3 benchmarks/gpu_profile.py > "$OUT/profile.txt" 2>&1
echo "profile rc=$?"; grep "us per call" "$OUT/profile.txt"
timeout "${T_BENCH:-240}" python3 benchmarks/gpu.py --json "$OUT/gpu.json" ${BENCH_ARGS:-} > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"; tail -25 "$OUT/bench.txt"
