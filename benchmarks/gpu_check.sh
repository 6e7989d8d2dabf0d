#!/usr/bin/env bash
# Accelerator check, under 5 minutes on one modern GPU (JAX with CUDA; TPUs work the same way):
#   1. the empirical-NTK benchmark (benchmarks/bench_empirical_ntk.py --quick), when present;
#   2. the streaming smallest gradient angle over all pairs at MNIST-train size (n = 60,000,
#      1.8e9 pairs), depths 0-10, ReLU and linear, on every visible device, in float64 and in
#      float32 (matmuls at highest precision), with the float32/float64 difference;
#   3. the convolutional kernels (benchmarks/bench_conv.py --skip-flatten): the global-average-
#      pooling NTK of a 4-layer ReLU CNN on 8 CIFAR-10 images, time per kernel entry.
#      ntkcond's convolutional kernels are compiled for the CPU (numba: they run on the
#      machine's cores, not on the GPU); neural-tangents' jitted kernel_fn runs on the GPU where
#      it imports (jax <= 0.5 with CUDA), in float64. A GPU route for ntkcond's convolutional
#      kernels, and their float32 figure, do not exist yet: this step measures what there is.
# Data: MNIST train from tensorflow-datasets when prepared; otherwise 60,000 SYNTHETIC inputs
# made by tiling the 10,000 MNIST test images 6x and adding N(0, 0.02^2) pixel noise (labelled
# as such in the output); otherwise Gaussian inputs.
#   bash benchmarks/gpu_check.sh            # results in benchmarks/results/gpu_check/
#   PYTHON=/path/to/python OUT=dir bash benchmarks/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
OUT=${OUT:-benchmarks/results/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
$PY -c "import jax; print('jax', jax.__version__, jax.devices())"

if [ -f benchmarks/bench_empirical_ntk.py ]; then
  timeout 150 $PY benchmarks/bench_empirical_ntk.py --quick --out "$OUT/empirical_ntk.md" \
    || echo "bench_empirical_ntk.py failed or timed out (continuing)"
else
  echo "benchmarks/bench_empirical_ntk.py absent: skipped"
fi

timeout 240 $PY - "$OUT" <<'PY'
import json, math, os, sys, time
import numpy as np
from ntkcond import datasets
from ntkcond.scale.streaming import streaming_smallest_angles

out = sys.argv[1]
try:
    x, source = datasets.load("mnist", "train").x, "MNIST train (tfds)"
except ValueError:
    test = os.path.join("..", "shared", "data", "mnist_test.npz")
    if os.path.exists(test):
        img = np.load(test)["x"].reshape(10000, -1) / 255.0
        rng = np.random.default_rng(0)
        x = (np.tile(img, (6, 1)) + 0.02 * rng.standard_normal((60000, 784)) - 0.5) / 0.5
        source = "SYNTHETIC: MNIST test tiled 6x + N(0, 0.02^2) pixel noise, (x-0.5)/0.5"
    else:
        x, source = np.random.default_rng(0).standard_normal((60000, 784)), "Gaussian N(0, I)"
x = x[:60000]
print(f"data: {x.shape} {source}", flush=True)
record = {"source": source, "n": len(x)}
for dtype in ("float64", "float32"):
    streaming_smallest_angles(x[:2048], depths=range(11), block=4096, backend="jax", dtype=dtype)  # compile
    t = time.perf_counter()
    res = streaming_smallest_angles(x, depths=range(11), block=4096, backend="jax", dtype=dtype,
                                    progress=True)
    record[dtype] = {"seconds": time.perf_counter() - t, "devices": res.devices,
                     "results": [[r.activation, r.depth, r.angle, list(r.pair)] for r in res.results]}
    print(f"{dtype}: {res.pairs:,} pairs in {record[dtype]['seconds']:.1f} s on {res.devices} device(s)", flush=True)
a64 = np.array([r[2] for r in record["float64"]["results"]])
a32 = np.array([r[2] for r in record["float32"]["results"]])
record["float32_vs_float64_max_rel"] = float(np.max(np.abs(a32 - a64) / a64))
for r in record["float64"]["results"]:
    print(f"{r[0]:>7} L={r[1]:2d} {math.degrees(r[2]):.10g} deg pair {tuple(r[3])}")
print(f"float32 vs float64: max relative difference {record['float32_vs_float64_max_rel']:.2e}")
with open(os.path.join(out, "min_angle_60k.json"), "w") as f:
    json.dump(record, f, indent=1)
PY

timeout 200 $PY benchmarks/bench_conv.py --skip-flatten --rounds 3 --out "$OUT/conv_gap.md" \
  || echo "bench_conv.py failed or timed out (continuing)"
