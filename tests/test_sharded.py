"""Multi-device runs equal single-device runs: 4 CPU devices forced with XLA_FLAGS, for both
routes of ``streaming_smallest_angles`` (pairs: the jitted block max/min and candidates;
recursion: the jitted recursion) and for ``blockwise_ntk``.

The device count of a JAX process is fixed at start-up, so the 4-device run is a subprocess.
Tolerance 1e-12 relative (the issue's): every device evaluates the same jitted recursion on
the same b × b blocks, only placed differently, so the values agree to the last bit in practice.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from conftest import REPO

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jax
    from ntkcond import datasets
    from ntkcond.scale.streaming import streaming_smallest_angles
    from ntkcond.scale.conditioning import blockwise_ntk
    x = datasets.load("digits").x[:230]
    x[150] = x[3] + 1e-9  # a refined (near-parallel) pair
    out = {"device_count": jax.device_count()}
    for devices in (1, 4):
        for method in ("pairs", "recursion"):
            res = streaming_smallest_angles(x, depths=[0, 1, 4], block=32, backend="jax", devices=devices,
                                            method=method)
            out[f"{method}{devices}"] = [[r.activation, r.depth, r.angle, list(r.pair)] for r in res.results]
        out[f"used{devices}"] = res.devices
        K = blockwise_ntk(x[:150], depths=[3], activation="relu", block=32, backend="jax",
                          devices=devices)[3]
        out[f"kernel{devices}"] = K.tolist()
    json.dump(out, sys.stdout)
    """
)


def test_four_cpu_devices_equal_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["device_count"] == 4 and out["used4"] == 4 and out["used1"] == 1
    assert out["pairs1"] == out["pairs4"]  # rechecked on the host: identical
    for (a1, L1, v1, p1), (a4, L4, v4, p4) in zip(out["recursion1"], out["recursion4"]):
        assert (a1, L1, p1) == (a4, L4, p4)
        np.testing.assert_allclose(v4, v1, rtol=1e-12, atol=0)
    for (a1, L1, v1, p1), (a4, L4, v4, p4) in zip(out["pairs1"], out["recursion4"]):
        assert (a1, L1, p1) == (a4, L4, p4)
        np.testing.assert_allclose(v4, v1, rtol=1e-12, atol=0)
    np.testing.assert_allclose(np.array(out["kernel4"]), np.array(out["kernel1"]), rtol=1e-12, atol=0)
    from ntkcond import infinite_ntk  # and both equal the dense numpy kernel

    from ntkcond import datasets
    np.testing.assert_allclose(np.array(out["kernel1"]), infinite_ntk(datasets.load("digits").x[:150], depth=3),
                               rtol=1e-12, atol=1e-15)


def test_device_mesh_rejects_bad_counts():
    import pytest

    from ntkcond.scale.sharded import device_mesh

    assert device_mesh(1).devices.size == 1
    with pytest.raises(ValueError, match="device_mesh: expected 1 <= devices"):
        device_mesh(10_000)
