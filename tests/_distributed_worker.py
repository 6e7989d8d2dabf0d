"""One process of the two-process checks of ``tests/test_processes.py`` (also run by hand):

    python tests/_distributed_worker.py COORDINATOR NUM_PROCESSES PROCESS_ID DATA.npz OUT.pkl [checks]

Joins JAX's multi-controller runtime (``ntkcond.scale.processes.initialize``: gloo CPU
collectives), runs the whole-data-set routes on the rows ``x`` of DATA.npz and pickles
{check: result} (plus the device counts) to OUT.pkl. Without the ``checks`` argument, all.
"""
from __future__ import annotations

import pickle
import sys


def run_checks(x, checks):
    import numpy as np

    import ntkcond
    from ntkcond.scale.kernel_angle import streaming_smallest_kernel_angle

    out = {}
    if "pairs_numpy" in checks:
        out["pairs_numpy"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="numpy", block=64)
    if "pairs_jax" in checks:
        out["pairs_jax"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="jax", block=64)
    if "recursion_numpy" in checks:
        out["recursion_numpy"] = ntkcond.streaming_smallest_angles(
            x, depths=[0, 3], backend="numpy", block=64, method="recursion", workers=1)
    if "recursion_jax" in checks:
        out["recursion_jax"] = ntkcond.streaming_smallest_angles(
            x, depths=[0, 3], backend="jax", block=64, method="recursion")
    if "kernel_numpy" in checks:
        out["kernel_numpy"] = ntkcond.blockwise_ntk(x, depths=[1, 3], block=48, workers=1)
    if "kernel_jax" in checks:
        out["kernel_jax"] = ntkcond.blockwise_ntk(x, depths=[1, 3], block=48, backend="jax")
    if "exact" in checks:
        out["exact"] = ntkcond.exact_conditioning(x, depths=[1, 2, 3], block=48, workers=1)
    if "matrix_free" in checks:
        out["matrix_free"] = ntkcond.matrix_free_conditioning(x, depth=3, block=48, workers=1)
    if "kernel_angle" in checks:
        rng = np.random.default_rng(1)
        H = rng.standard_normal((len(x), 7))
        D = rng.standard_normal((len(x), 3))
        out["kernel_angle"] = streaming_smallest_kernel_angle([(x, None), (H, D)], block=40)
    if "angles_default" in checks:  # the issue's own calls, default arguments
        out["angles_default"] = ntkcond.streaming_smallest_angles(x, depths=range(11), backend="jax")
    if "kappa_default" in checks:
        out["kappa_default"] = ntkcond.matrix_free_conditioning(x, depth=3)
    return out


ALL = ("pairs_numpy", "pairs_jax", "recursion_numpy", "recursion_jax", "kernel_numpy",
       "kernel_jax", "exact", "matrix_free", "kernel_angle")


def main(argv):
    coordinator, count, index, data, out_path = argv[:5]
    checks = argv[5].split(",") if len(argv) > 5 else ALL  # "none": the runtime only
    import numpy as np

    from ntkcond.scale.processes import initialize

    try:
        share = initialize(coordinator, int(count), int(index))
    except Exception as err:  # noqa: BLE001 (the runtime cannot start here: say why, exit 3)
        print(f"RUNTIME UNAVAILABLE: {type(err).__name__}: {err}", file=sys.stderr)
        return 3
    import jax

    if data.endswith(":mnist2000"):  # the first 2,000 MNIST test images, mnist preset
        import ntkcond

        x = ntkcond.datasets.load(data[: -len(":mnist2000")], preset="mnist").x[:2000]
    else:
        x = np.load(data)["x"]
    result = {"share": (share.index, share.count), "device_count": jax.device_count(),
              "local_device_count": jax.local_device_count(), "results": run_checks(x, checks)}
    with open(out_path, "wb") as f:
        pickle.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
