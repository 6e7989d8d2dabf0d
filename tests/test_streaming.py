"""Streaming smallest gradient angle against brute force (the full n × n angle matrix), and
the pairs route (closest/farthest pair, the default) against the recursion route.

Tolerance: 1e-12 relative. Both routes evaluate the same recursion on input angles that agree
to the last bits: a blocked Gram product can differ from the full one by an ulp, moving θ₀ by
≲ 1e-16/sin θ₀ ≤ 1e-15 (θ₀ ≥ 0.1 rad off the refined band), and the recursion is
well-conditioned (angles eq. (4)); near 0 and π both routes use the exact route
(``geometry.exact_angles``) on the same rows and pairs, bit for bit. The pair is checked by its brute-force angle (near-ties may pick
either of two pairs whose angles agree to ~1e-16). The pairs route evaluates the same recursion
at the closest/farthest pair, whose angles it rechecks with the same exact route: the same 1e-12.
"""
import json
import tracemalloc

import numpy as np
import pytest

from ntkcond import datasets, gradient_angles
from ntkcond.scale.streaming import streaming_smallest_angles, streaming_smallest_kernel_angle

RTOL = 1e-12


def brute_force(x, depth, activation, trainable="all"):
    phi = gradient_angles(x, depth=depth, activation=activation, trainable=trainable)
    return np.where(np.tri(len(x), dtype=bool), np.inf, phi)


def assert_matches(x, res, trainable="all"):
    for r in res.results:
        phi = brute_force(x, r.depth, r.activation, trainable)
        best = phi.min()
        i, j = r.pair
        assert i < j
        np.testing.assert_allclose(r.angle, best, rtol=RTOL, atol=0)
        np.testing.assert_allclose(phi[i, j], best, rtol=RTOL, atol=0)


@pytest.fixture(scope="module")
def digits300():
    return datasets.load("digits").x[:300]


def planted(rng, n=90, d=12):
    """Gaussian inputs with near-parallel (1e-9 rad), exactly parallel and anti-parallel pairs."""
    x = rng.standard_normal((n, d))
    x[40] = x[7] + 1e-9 * rng.standard_normal(d)  # θ₀ ≈ 1e-9/‖x‖
    x[61] = 3.0 * x[12]  # parallel but for the rounding of 3·x: θ₀ ~ 1e-17
    x[75] = -x[20] + 1e-6 * rng.standard_normal(d)  # θ₀ ≈ π − 1e-6
    x[80] = x[33] + 0.03 * rng.standard_normal(d)  # inside the refined band
    return x


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_digits_equals_brute_force(digits300, backend):
    res = streaming_smallest_angles(digits300, depths=[0, 1, 3, 6], activations=["relu", "linear"],
                                    block=64, backend=backend)  # 300 = 4·64 + 44: a ragged block
    assert res.pairs == 300 * 299 // 2 and len(res.results) == 8
    assert_matches(digits300, res)
    np.testing.assert_allclose(res.input_angle, brute_force(digits300, 0, "linear").min(), rtol=RTOL)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_refined_pairs_equal_brute_force(backend):
    x = planted(np.random.default_rng(1))
    res = streaming_smallest_angles(x, depths=[0, 2, 5], activations=["relu", "leaky_relu:0.2", "linear"],
                                    block=32, backend=backend)
    assert_matches(x, res)
    assert res.get("linear", 0).angle < 1e-12  # the parallel pair (12, 61)
    assert res.input_pair == (12, 61)


def test_trainable_first_and_last_equal_brute_force(digits300):
    for trainable in ("first", "last", (0, 2)):
        res = streaming_smallest_angles(digits300[:150], depths=[2, 4], activations=["relu"],
                                        trainable=trainable, block=50, backend="numpy")
        assert_matches(digits300[:150], res, trainable)


@pytest.mark.parametrize("method", ["pairs", "recursion"])
def test_overflowing_refinement_falls_back_to_host(monkeypatch, method):
    from ntkcond.scale import sharded as sharding

    rng = np.random.default_rng(2)
    base = rng.standard_normal((6, 10))
    x = np.repeat(base, 8, axis=0) + 1e-3 * rng.standard_normal((48, 10))  # many pairs < 0.1 rad
    x[47] = x[3]  # an exact tie at θ = 0 with more than 3 pairs in reach of the float32 margin
    monkeypatch.setattr(sharding, "_REFINE_CAPACITY", 3)
    for dtype in ("float64", "float32"):
        res = streaming_smallest_angles(x, depths=[0, 3], block=16, backend="jax", dtype=dtype,
                                        method=method)
        assert_matches(x, res)


def ties_and_near_duplicates(rng, n=70, d=9):
    """Exact duplicates (θ = 0 ties), near-duplicates at 1e-12 and 1e-7, a near-antipodal pair."""
    x = rng.standard_normal((n, d))
    x[30] = x[4]
    x[31] = x[4]
    x[52] = x[9]
    x[40] = x[11] + 1e-12 * rng.standard_normal(d)
    x[41] = x[17] + 1e-7 * rng.standard_normal(d)
    x[60] = -x[2] + 1e-9 * rng.standard_normal(d)
    return x


@pytest.mark.parametrize("activation", ["relu", "leaky:0.2", "linear"])
@pytest.mark.parametrize("trainable", ["all", "first", "last"])
def test_pairs_route_equals_recursion_route(digits300, activation, trainable):
    rng = np.random.default_rng(7)
    data = [digits300[:120], planted(rng), ties_and_near_duplicates(rng), rng.standard_normal((40, 3))]
    for x in data:
        kwargs = dict(depths=range(11), activations=[activation], trainable=trainable, block=16,
                      backend="numpy")
        new = streaming_smallest_angles(x, method="pairs", **kwargs)
        old = streaming_smallest_angles(x, method="recursion", **kwargs)
        assert new.method == "pairs" and new.fallback == () and old.method == "recursion"
        assert new.input_pair == old.input_pair
        for a, b in zip(new.results, old.results):
            assert (a.activation, a.depth, a.pair) == (b.activation, b.depth, b.pair)
            np.testing.assert_allclose(a.angle, b.angle, rtol=RTOL, atol=0)


def test_pairs_route_with_layer_indices(digits300):
    x = ties_and_near_duplicates(np.random.default_rng(8))
    for trainable in ((0, 2), (1, 2)):
        kwargs = dict(depths=range(2, 9), activations=["relu", "leaky:0.2"], trainable=trainable,
                      block=16, backend="numpy")
        new = streaming_smallest_angles(x, **kwargs)
        old = streaming_smallest_angles(x, method="recursion", **kwargs)
        assert [r.pair for r in new.results] == [r.pair for r in old.results]
        np.testing.assert_allclose([r.angle for r in new.results], [r.angle for r in old.results],
                                   rtol=RTOL, atol=0)


def test_uncovered_targets_fall_back_to_the_recursion(monkeypatch, tmp_path):
    from ntkcond.infinite import extremes, unimodal

    def refuse(activation, depths, trainable="all", max_cost=None):  # planted: depth 3 only
        return tuple(unimodal.Certificate(activation.name, L, trainable, "floor" if L == 3 else "proof",
                                          0.1, 3.1, 0.0, 1) for L in sorted(depths))

    monkeypatch.setattr(extremes, "certify", refuse)
    x = planted(np.random.default_rng(1))  # θ_hi > π/2: certificates are consulted
    path = tmp_path / "ckpt.json"
    res = streaming_smallest_angles(x, depths=[1, 3], activations=["relu", "leaky:0.2", "linear"],
                                    block=32, backend="numpy", checkpoint=str(path))
    assert res.method == "pairs" and res.fallback == (("relu", 3), ("leaky:0.2", 3))
    assert_matches(x, res)
    assert path.exists() and not (tmp_path / "ckpt.json.recursion").exists()


def test_pairs_checkpoint_resumes_to_the_same_result(tmp_path, digits300):
    x = digits300[:200]
    path = tmp_path / "ckpt.json"
    kwargs = dict(depths=[0, 2], block=40, backend="numpy", checkpoint=str(path))
    partial = streaming_smallest_angles(x, max_row_blocks=2, **kwargs)
    state = json.loads(path.read_text())
    assert state["next_row_block"] == 2 and partial.resumed_from_row_block == 0
    assert state["kind"].endswith(".pairs")
    assert partial.pairs == 200 * 199 // 2  # as the recursion route: rows done so far only
    resumed = streaming_smallest_angles(x, **kwargs)
    assert resumed.resumed_from_row_block == 2
    full = streaming_smallest_angles(x, depths=[0, 2], block=40, backend="numpy")
    assert resumed.results == full.results
    # a pairs checkpoint does not depend on the targets: other depths resume from it too
    other = streaming_smallest_angles(x, depths=[5], activations=["leaky:0.2"], block=40,
                                      backend="numpy", checkpoint=str(path))
    assert other.resumed_from_row_block == 5 and other.results[0] == streaming_smallest_angles(
        x, depths=[5], activations=["leaky:0.2"], block=40, backend="numpy").results[0]
    with pytest.raises(ValueError, match="another run.*block"):
        streaming_smallest_angles(x, depths=[0, 2], block=50, backend="numpy", checkpoint=str(path))
    with pytest.raises(ValueError, match="checkpoint of the other method"):
        streaming_smallest_angles(x, depths=[0, 2], block=40, backend="numpy", checkpoint=str(path),
                                  method="recursion")


def test_checkpoint_resumes_to_the_same_result(tmp_path, digits300):
    x = digits300[:200]
    path = tmp_path / "ckpt.json"
    kwargs = dict(depths=[0, 2], block=40, backend="numpy", checkpoint=str(path), method="recursion")
    partial = streaming_smallest_angles(x, max_row_blocks=2, **kwargs)
    state = json.loads(path.read_text())
    assert state["next_row_block"] == 2 and partial.resumed_from_row_block == 0
    resumed = streaming_smallest_angles(x, **kwargs)
    assert resumed.resumed_from_row_block == 2
    full = streaming_smallest_angles(x, depths=[0, 2], block=40, backend="numpy", method="recursion")
    assert resumed.results == full.results
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    with pytest.raises(ValueError, match="another run.*depths"):
        streaming_smallest_angles(x, depths=[0, 3], block=40, backend="numpy", checkpoint=str(path),
                                  method="recursion")
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        streaming_smallest_angles(x, **kwargs)


@pytest.mark.parametrize("method", ["pairs", "recursion"])
def test_memory_is_blockwise_not_quadratic(method):
    x = np.random.default_rng(3).standard_normal((3000, 8))
    tracemalloc.start()
    streaming_smallest_angles(x, depths=[1], activations=["relu"], block=128, backend="numpy", workers=1,
                              method=method)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3000 * 3000 * 8 / 4  # an n × n float64 array would be 72 MB; blocks need ~5 MB


def test_kernel_features_equal_dense_kernel_angle():
    from ntkcond import smallest_pairwise_angle

    rng = np.random.default_rng(4)
    feats = [(rng.standard_normal((70, 5)), rng.standard_normal((70, 3))),
             (np.abs(rng.standard_normal((70, 6))), None)]  # None: the read-out, D = 1
    K = sum((H @ H.T) * (1.0 if D is None else D @ D.T) for H, D in feats)
    angle, i, j = streaming_smallest_kernel_angle(feats, block=16)
    expected = smallest_pairwise_angle(K)
    np.testing.assert_allclose(angle, expected[0], rtol=1e-12)
    assert (i, j) == expected[1:]


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [(dict(x=np.ones((1, 3))), ValueError, "n >= 2"),
     (dict(block=1), ValueError, "block size >= 2"),
     (dict(backend="gpu"), ValueError, "backend 'auto'"),
     (dict(backend="numpy", dtype="float32"), ValueError, "numpy backend computes in float64"),
     (dict(method="closest"), ValueError, "method 'pairs' or 'recursion'"),
     (dict(x=np.zeros((3, 2))), ValueError, "nonzero rows"),
     (dict(depths=[]), ValueError, "at least one depth"),
     (dict(x="abc"), TypeError, "streaming_smallest_angles")],
)
def test_bad_input(kwargs, exc, message):
    args = dict(x=np.eye(3), depths=[1])
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        streaming_smallest_angles(args.pop("x"), **args)


def test_jax_float32_is_close_to_float64(digits300):
    # Recursion route: float32 blocks (eps 1.2e-7): cos θ₀ carries ~d·eps = 1e-5 absolute error
    # at worst (d = 64 products), θ₀ ≥ 0.1 rad off the refined band turns that into ≤ 1e-4
    # relative, and the recursion is well-conditioned; the flagged band is recomputed in float64.
    x = digits300[:200]
    res = streaming_smallest_angles(x, depths=[0, 3], block=64, backend="jax", dtype="float32",
                                    method="recursion")
    assert res.dtype == "float32"
    for r in res.results:
        best = brute_force(x, r.depth, r.activation).min()
        np.testing.assert_allclose(r.angle, best, rtol=1e-4)


def test_jax_float32_screening_is_exact(digits300):
    # Pairs route: float32 only screens (with the float32 margin); the answers are rechecked in
    # float64, so they equal the float64 numpy route exactly (same pairs, same floats).
    x = digits300[:200]
    kwargs = dict(depths=[0, 3, 10], activations=["relu", "leaky:0.2", "linear"], block=64)
    res = streaming_smallest_angles(x, backend="jax", dtype="float32", **kwargs)
    ref = streaming_smallest_angles(x, backend="numpy", **kwargs)
    assert res.dtype == "float32" and res.results == ref.results


@pytest.mark.parametrize("trainable", ["all", "first", (1, 2)])
def test_finite_width_streaming_from_empirical_features(trainable, x64):
    # The streamed finite-width minimum must equal the one read off the full empirical NTK.
    import jax

    import ntkcond

    x = ntkcond.datasets.load("digits").x[:150]
    net = ntkcond.mlp(2, 64, "relu")
    params = net.init(jax.random.PRNGKey(3), x.shape[1])
    K = np.asarray(ntkcond.empirical_ntk(net, params, x, trainable=trainable))
    feats = ntkcond.empirical_ntk_features(net, params, x, trainable=trainable)
    got = ntkcond.streaming_smallest_kernel_angle(feats, block=64)
    expected = ntkcond.smallest_pairwise_angle(K)
    # same pair; the angle from blockwise vs whole-matrix contractions differs by rounding only
    assert got[1:] == expected[1:]
    assert got[0] == pytest.approx(expected[0], rel=1e-9, abs=0)


# --- reliability III: options and tampered checkpoints ---------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(workers=0), ValueError, "expected workers as an integer >= 1, got 0"),
    (dict(workers=-1), ValueError, "expected workers as an integer >= 1, got -1"),
    (dict(workers=2.5), TypeError, "expected workers as an integer >= 1, got float 2.5"),
    (dict(workers=True), TypeError, "expected workers as an integer >= 1, got bool True"),
    (dict(max_row_blocks=2.5), TypeError, "expected max_row_blocks as an integer >= 1, got float 2.5"),
    (dict(max_row_blocks=0), ValueError, "expected max_row_blocks as an integer >= 1, got 0"),
    (dict(devices=0), ValueError, "expected devices as an integer >= 1, got 0"),
    (dict(progress="yes"), TypeError, "expected progress as a bool, got str 'yes'"),
    (dict(checkpoint=5), TypeError, "expected checkpoint as a path"),
    (dict(activations=["relu", "ReLU"]), ValueError, r"expected each activation once, got \['relu'\]"),
])
@pytest.mark.parametrize("method", ["pairs", "recursion"])
def test_bad_options_are_refused_naming_them(kwargs, exc, match, method):
    x = np.random.default_rng(0).standard_normal((20, 4))
    with pytest.raises(exc, match=f"streaming_smallest_angles: {match}"):
        streaming_smallest_angles(x, depths=[1], method=method, block=8, **kwargs)


def test_one_activation_given_as_a_str_is_that_activation():
    x = np.random.default_rng(0).standard_normal((20, 4))
    one = streaming_smallest_angles(x, depths=[1, 2], activations="relu", block=8)
    both = streaming_smallest_angles(x, depths=[1, 2], activations=["relu"], block=8)
    assert [r.activation for r in one.results] == ["relu", "relu"] and one.results == both.results


def _tamper(path, change):
    state = json.loads(path.read_text())
    change(state)
    path.write_text(json.dumps(state))


PAIRS_TAMPERING = [
    (lambda s: s.update(next_row_block=10**6), r"next_row_block as an integer in \[0, 5\]"),
    (lambda s: s.update(next_row_block=-1), r"next_row_block as an integer in \[0, 5\]"),
    (lambda s: s.update(next_row_block=2.5), r"next_row_block as an integer"),
    (lambda s: s.pop("next_row_block"), r"next_row_block as an integer"),
    (lambda s: s.pop("fingerprint"), "fingerprint as a JSON object, got None"),
    (lambda s: s.update(seconds="x"), "seconds as a finite number >= 0"),
    (lambda s: s.pop("search"), "search as a JSON object with hi, lo, close, far and margin"),
    (lambda s: s["search"].pop("hi"), "search as a JSON object with hi, lo, close, far and margin"),
    (lambda s: s["search"].update(close=[s["search"]["close"][0], 3, 10**6]), "search.close as a pair"),
    (lambda s: s["search"].update(close=[0.5] + s["search"]["close"][1:]), "search.close as the value"),
    (lambda s: s["search"].update(far=[-3.0] + s["search"]["far"][1:]), "search.far as the value"),
    (lambda s: s["search"].update(hi=5.0), "search.hi as a screened cosine"),
    (lambda s: s["search"].update(margin=1.0), "search.margin as this run's screening margin"),
]


@pytest.mark.parametrize("change, match", PAIRS_TAMPERING)
def test_tampered_pairs_checkpoint_is_refused_naming_the_field(tmp_path, digits300, change, match):
    x = digits300[:200]
    path = tmp_path / "ckpt.json"
    kwargs = dict(depths=[0, 2], block=40, backend="numpy", checkpoint=str(path))
    streaming_smallest_angles(x, max_row_blocks=2, **kwargs)
    _tamper(path, change)
    with pytest.raises(ValueError, match=f"checkpoint .* is damaged or edited: expected {match}"):
        streaming_smallest_angles(x, **kwargs)


RECURSION_TAMPERING = [
    (lambda s: s.update(next_row_block=10**6), r"next_row_block as an integer in \[0, 5\]"),
    (lambda s: s.pop("best"), "best as a JSON object of running minima"),
    (lambda s: s["best"].update(bogus=[0.1, 0, 1]), "best as minima for exactly"),
    (lambda s: s["best"].pop("relu/2"), "best as minima for exactly"),
    (lambda s: s["best"].update(input=[0.1, 0, 10**6]), r"best\['input'\] as a pair"),
    (lambda s: s["best"].update({"relu/2": [1e-9] + s["best"]["relu/2"][1:]}), r"best\['relu/2'\] as the value"),
]


@pytest.mark.parametrize("change, match", RECURSION_TAMPERING)
def test_tampered_recursion_checkpoint_is_refused_naming_the_field(tmp_path, digits300, change, match):
    x = digits300[:200]
    path = tmp_path / "ckpt.json"
    kwargs = dict(depths=[0, 2], block=40, backend="numpy", checkpoint=str(path), method="recursion")
    streaming_smallest_angles(x, max_row_blocks=2, **kwargs)
    _tamper(path, change)
    with pytest.raises(ValueError, match=f"checkpoint .* is damaged or edited: expected {match}"):
        streaming_smallest_angles(x, **kwargs)


def test_convolutional_nets_stream_image_blocks_and_resume_from_a_checkpoint(tmp_path):
    """CNNFamily nets on NHWC images: the block recursion (3-image blocks, so diagonal and
    off-diagonal image blocks) gives the smallest angle of every net and depth of one whole
    kernel (``sweep_images_of``, 1e-12 rad), every target listed in ``fallback``; a run
    stopped after one block row and resumed from its checkpoint gives the same result."""
    from ntkcond.infinite.kernels import sweep_images_of
    from ntkcond.network import resolve_cnns

    x = np.random.default_rng(3).standard_normal((8, 5, 5, 2))
    nets = resolve_cnns(["relu", "linear"], readout="flatten", filter=3, where="test")
    whole = streaming_smallest_angles(x, depths=[0, 2], activations=nets, block=3)
    assert whole.method == "recursion" and len(whole.fallback) == 4
    for net in nets:
        for item in sweep_images_of(x, net, [0, 2]):
            phi = item.angles.copy()
            phi[np.tril_indices(8)] = np.inf
            k = int(np.argmin(phi))
            got = next(r for r in whole.results
                       if (r.activation, r.depth) == (net.name, item.depth))
            assert abs(got.angle - phi.flat[k]) < 1e-12 and got.pair == divmod(k, 8)
    path = str(tmp_path / "ckpt.json")
    part = streaming_smallest_angles(x, depths=[0, 2], activations=nets, block=3,
                                     checkpoint=path, max_row_blocks=1)
    assert part.resumed_from_row_block == 0
    rest = streaming_smallest_angles(x, depths=[0, 2], activations=nets, block=3,
                                     checkpoint=path)
    assert rest.resumed_from_row_block == 1 and rest.results == whole.results
    with pytest.raises(ValueError, match="streaming_smallest_angles: convolutional nets run on "
                                         "backend 'numpy' only"):
        streaming_smallest_angles(x, depths=[1], activations=nets, backend="jax")
    with pytest.raises(ValueError, match="streaming_smallest_angles: convolutional nets run one "
                                         "block at a time on numba's threads"):
        streaming_smallest_angles(x, depths=[1], activations=nets, workers=2)
