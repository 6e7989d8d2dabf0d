"""The matrix-free route's dense algebra: row-split products, Cholesky-QR2, LOBPCG blocks."""
import numpy as np
import pytest

from ntkcond import datasets
from ntkcond._core.threads import single_threaded_blas
from ntkcond.scale._lobpcg import Lobpcg, RowSplit, cholesky_qr, orthonormal
from ntkcond.scale.conditioning import exact_conditioning
from ntkcond.scale.matrix_free import matrix_free_conditioning

EPS = np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(0)


def test_row_split_products_equal_plain_products(rng):
    A, B, C = rng.standard_normal((1000, 7)), rng.standard_normal((1000, 5)), rng.standard_normal((7, 3))
    with single_threaded_blas(), RowSplit(2, min_rows=8) as rs:
        # A·C: every row is the same dot products as in one GEMM; AᵀB sums two row halves, so
        # it may differ by rounding: |error| ≤ n·eps·|A|ᵀ|B| entrywise (the standard bound)
        np.testing.assert_allclose(rs.mm(A, C), A @ C, rtol=0, atol=10 * EPS * np.abs(A).max() * np.abs(C).sum(0).max())
        bound = A.shape[0] * EPS * (np.abs(A).T @ np.abs(B))
        assert np.all(np.abs(rs.tmm(A, B) - A.T @ B) <= bound)
        # deterministic: fixed slices, summed in order
        assert np.array_equal(rs.tmm(A, B), rs.tmm(A, B))
    with RowSplit(2, min_rows=2000) as rs:  # below min_rows: the plain product, bit for bit
        assert np.array_equal(rs.tmm(A, B), A.T @ B) and np.array_equal(rs.mm(A, C), A @ C)
    assert rs.pool is None  # closed by the with block


@pytest.mark.parametrize("cond", [1.0, 1e6])
def test_cholesky_qr_is_orthonormal_with_the_same_span(rng, cond):
    n, m = 1500, 40
    Q0 = np.linalg.qr(rng.standard_normal((n, m)))[0]
    W0 = np.linalg.qr(rng.standard_normal((m, m)))[0]
    V = Q0 @ np.diag(np.logspace(0, -np.log10(cond), m)) @ W0  # cond(V) = cond
    with single_threaded_blas(), RowSplit(2) as rs:
        Q = cholesky_qr(V, rs)
    # Cholesky-QR2 is orthogonal to O(eps) for cond ≲ 1e7 (Yamamoto et al. 2015): 100·m·eps
    assert np.linalg.norm(Q.T @ Q - np.eye(m)) <= 100 * m * EPS
    assert np.linalg.norm(V - Q @ (Q.T @ V)) <= 100 * m * EPS * np.linalg.norm(V)


def test_cholesky_qr_falls_back_to_householder_on_a_rank_deficient_block(rng):
    V = rng.standard_normal((300, 6))
    V[:, 5] = V[:, 0]  # VᵀV singular: Cholesky fails, Householder QR takes over
    Q = cholesky_qr(V)
    assert Q.shape == (300, 6)
    assert np.linalg.norm(Q.T @ Q - np.eye(6)) <= 100 * 6 * EPS


def test_orthonormal_drops_lost_directions_and_removes_the_given_basis(rng):
    Y = np.linalg.qr(rng.standard_normal((200, 3)))[0]
    V = rng.standard_normal((200, 5))
    V[:, 4] = V[:, 1] + 1e-12 * V[:, 2]  # within 1e-7 of the others' span: dropped
    W = orthonormal(V, (Y,))
    assert W.shape == (200, 4)
    assert np.linalg.norm(W.T @ W - np.eye(4)) <= 100 * EPS
    assert np.linalg.norm(Y.T @ W) <= 100 * EPS


def test_lobpcg_block_finds_a_prescribed_smallest_eigenvalue(rng):
    n = 400
    lam = np.concatenate([[1e-3, 2e-3], np.linspace(1.0, 1e3, n - 2)])
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    K = (Q * lam) @ Q.T
    none = np.zeros((n, 0))
    low = Lobpcg(orthonormal(rng.standard_normal((n, 8))), largest=False)
    low.start(K @ low.X)
    for _ in range(200):
        R, r = low.residuals()
        if r[0] <= 1e-10 * lam[-1]:
            break
        W = low.directions(R, lambda R: R / (np.diag(K)[:, None] + 1e-3), none)  # Jacobi
        low.update(W, K @ W)
    # residual ≤ 1e-10·λ_max bounds the eigenvalue error by it (symmetric K): 1e-7 absolute
    assert abs(low.theta[0] - lam[0]) <= 1e-10 * lam[-1]
    assert abs(low.theta[1] - lam[1]) <= 1e-6


def test_matrix_free_on_two_workers_equals_one_worker(rng):
    # n = 1100 ≥ RowSplit's 1024 rows: the dense algebra is split over the two threads
    x = datasets.load("digits").x[:1100]
    one = matrix_free_conditioning(x, depth=2, workers=1)
    two = matrix_free_conditioning(x, depth=2, workers=2)
    exact = exact_conditioning(x, depths=[2])[2]
    # same iteration up to rounding in the split sums; both within the solver's accuracy of
    # the exact route (lobpcg_tol = 1e-10: κ_eff to ~1e-12, asserted at 1e-9)
    assert one.converged and two.converged
    assert one.kappa_eff == pytest.approx(exact.kappa_eff, rel=1e-9, abs=0)
    assert two.kappa_eff == pytest.approx(exact.kappa_eff, rel=1e-9, abs=0)
    assert abs(one.matvecs - two.matvecs) <= 1
