"""The dense algebra of the matrix-free route: LOBPCG blocks, orthonormalisation, Nyström.

Everything here works on tall n × m blocks (m ≪ n) and small m × m matrices; the kernel
enters only through products K·V computed elsewhere (``scale.matrix_free.KernelOperator``).
The tall products go through ``RowSplit``: row slices on worker threads with BLAS at one
thread each, so the cores the kernel passes use are not idle between passes, and no
multi-threaded BLAS is left spinning into the next pass.
"""
from __future__ import annotations

import concurrent.futures
import math

import numpy as np

__all__ = ["Lobpcg", "RowSplit", "cholesky_qr", "nystrom", "orthonormal"]


class RowSplit:
    """Tall-skinny products split by rows over ``workers`` threads (deterministic).

    ``mm(A, B)`` = A·B for A (n, p), B (p, q): each thread writes its rows of the result.
    ``tmm(A, B)`` = AᵀB for A (n, p), B (n, q): partial products over fixed row slices,
    summed in slice order, so the result is the same on every run with the same workers.
    Below ``min_rows`` rows, or with one worker, a plain product. The caller keeps BLAS at
    one thread (``_core.threads.single_threaded_blas``) while it is used; ``close()`` (or
    ``with``) ends the threads.
    """

    def __init__(self, workers: int, min_rows: int = 1024):
        self.workers = max(1, int(workers))
        self.min_rows = min_rows
        self.pool = (concurrent.futures.ThreadPoolExecutor(self.workers)
                     if self.workers > 1 else None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def _slices(self, n):
        if self.pool is None or n < self.min_rows:
            return None
        edges = np.linspace(0, n, self.workers + 1).astype(int)
        return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]

    def mm(self, A, B):
        parts = self._slices(A.shape[0])
        if parts is None:
            return A @ B
        out = np.empty((A.shape[0], B.shape[1]), dtype=np.result_type(A, B))
        list(self.pool.map(lambda s: np.matmul(A[s], B, out=out[s]), parts))
        return out

    def tmm(self, A, B):
        parts = self._slices(A.shape[0])
        if parts is None:
            return A.T @ B
        products = list(self.pool.map(lambda s: A[s].T @ B[s], parts))
        out = products[0]
        for p in products[1:]:
            out += p
        return out


SERIAL = RowSplit(1)


def orthonormal(V, against=(), drop: float = 1e-7, rs: RowSplit = SERIAL):
    """Columns spanning V minus its components along the (orthonormal) ``against`` bases,
    orthonormal: two rounds of Gram–Schmidt, then twice V ← V·Q·w^(−1/2) from the eigenpairs
    (w, Q) of VᵀV (Cholesky-QR2 by eigenvalues: n·m² flops in one GEMM, against n·m²·O(10)
    for an SVD), the first time dropping directions with singular values below ``drop`` of the
    largest (w below drop²·w_max): their direction is lost to rounding."""
    for _ in range(2):
        for B in against:
            if B is not None and B.shape[1]:
                V = V - rs.mm(B, rs.tmm(B, V))
    for rounds in range(2):
        if V.shape[1] == 0:
            return V
        w, Q = np.linalg.eigh(rs.tmm(V, V))
        keep = w > max(drop * drop * w[-1], 1e-300) if rounds == 0 else slice(None)
        V = rs.mm(V, Q[:, keep] / np.sqrt(w[keep]))
    return V


def cholesky_qr(V, rs: RowSplit = SERIAL):
    """Q of V = QR with orthonormal columns and no rank decision: Cholesky-QR2 (Fukaya et al.
    2014: R from chol(VᵀV), twice; orthogonal to rounding for cond(V) ≲ 10⁷, in GEMMs only),
    falling back to Householder QR when VᵀV is not numerically positive definite."""
    import scipy.linalg

    for _ in range(2):
        try:
            R = np.linalg.cholesky(rs.tmm(V, V)).T
        except np.linalg.LinAlgError:
            return np.linalg.qr(V)[0]
        V = rs.mm(V, scipy.linalg.solve_triangular(R, np.eye(R.shape[0])))
    return V


class Lobpcg:
    """One LOBPCG block (Knyazev 2001) in an orthonormal basis [X, P, W]: the smallest
    (``largest`` False) or largest ``k`` Ritz pairs of K on the complement of ``Y``.

    P is the part of the previous X outside the new one, formed in the small coefficient
    space (Hetmaniuk & Lehoucq 2006), so every basis column stays orthonormal and every
    product K·(basis) is a combination of computed products with orthonormal coefficients."""

    def __init__(self, X, largest: bool, rs: RowSplit = SERIAL):
        self.X, self.AX, self.P, self.AP = X, None, None, None
        self.largest = largest
        self.theta = None
        self.rs = rs

    def start(self, AX):
        self._ritz([self.X], [AX], self.X.shape[1], keep_p=False)

    def residuals(self):
        R = self.AX - self.X * self.theta
        return R, np.linalg.norm(R, axis=0)

    def directions(self, R, precondition, Y):
        W = R if precondition is None else precondition(R)
        return orthonormal(W, (Y, self.X, self.P), rs=self.rs)

    def update(self, W, AW):
        parts = [self.X] + ([self.P] if self.P is not None else []) + ([W] if W.shape[1] else [])
        aparts = [self.AX] + ([self.AP] if self.P is not None else []) + ([AW] if W.shape[1] else [])
        self._ritz(parts, aparts, self.X.shape[1], keep_p=True)

    def _ritz(self, parts, aparts, k, keep_p):
        rs = self.rs
        S, AS = np.hstack(parts), np.hstack(aparts)
        H = rs.tmm(S, AS)
        H = 0.5 * (H + H.T)
        theta, C = np.linalg.eigh(H)
        pick = slice(len(theta) - k, None) if self.largest else slice(0, k)
        Cx = C[:, pick]
        if self.largest:
            Cx, theta = Cx[:, ::-1], theta[pick][::-1]
        else:
            theta = theta[pick]
        kx = parts[0].shape[1]
        Z = np.zeros((S.shape[1], 0))
        if keep_p and S.shape[1] > kx:
            # span{X_old, X_new} = span{X_new, P}: X_old's coefficients outside Cx, orthonormal
            Z = np.zeros((S.shape[1], kx))
            Z[:kx] = np.eye(kx)
            # singular values: sines of the angles between old and new X; below 1e-10 the
            # direction is rounding, not a step (its singular vector is arbitrary)
            Z, sines, _ = np.linalg.svd(Z - Cx @ (Cx.T @ Z), full_matrices=False)
            Z = Z[:, sines > 1e-10]
        coefficients = np.hstack([Cx, Z])  # X and P in one product each with S and AS
        SC, ASC = rs.mm(S, coefficients), rs.mm(AS, coefficients)
        X, AX = SC[:, :k], ASC[:, :k]
        if keep_p:
            self.P, self.AP = (self._clean_against(SC[:, k:], ASC[:, k:], X, AX)
                               if Z.shape[1] else (None, None))
        self.X, self.AX, self.theta = X, AX, theta

    def _clean_against(self, P, AP, X, AX):
        """P made orthonormal to X again, AP following it: near convergence P = S·Z is
        orthogonal to X only to eps/‖Z before normalising‖. One Gram–Schmidt step against X
        (AP − AX·C, no division), columns that were mostly X dropped, then a QR whose R is
        close to I."""
        import scipy.linalg

        rs = self.rs
        C = rs.tmm(X, P)
        P, AP = P - rs.mm(X, C), AP - rs.mm(AX, C)
        keep = np.linalg.norm(P, axis=0) > 0.5  # the columns had norm 1
        if not np.any(keep):
            return None, None
        P, AP = P[:, keep], AP[:, keep]
        # PᵀP = I + O(rounding): one Cholesky-QR step, R = chol(PᵀP)ᵀ close to I, P ← P·R⁻¹
        R = np.linalg.cholesky(rs.tmm(P, P)).T
        R_inv = scipy.linalg.solve_triangular(R, np.eye(R.shape[0]))
        return rs.mm(P, R_inv), rs.mm(AP, R_inv)


def nystrom(op, n, r, power, Y, rng, k, top, rs: RowSplit = SERIAL):
    """Randomised Nyström approximation K ≈ U diag(lam) Uᵀ of rank r on the complement of Y
    (Tropp, Yurtsever, Udell & Cevher 2017, with the shift ν for stability): 1 + power passes
    of ``op`` (V ↦ K·V).

    The passes' products also start both LOBPCG blocks without a pass of their own: the k
    lowest Ritz pairs on the random span of the first pass, the ``top`` highest on the span
    of the last.

    Returns:
      U, lam, (X0, K·X0) for the bottom block, (Z0, K·Z0) for the top block.
    """
    import scipy.linalg

    def ritz(omega, prods, count, lowest):
        H = rs.tmm(omega, prods)
        _, C = np.linalg.eigh(0.5 * (H + H.T))
        C = C[:, :count] if lowest else C[:, ::-1][:, :count]
        return rs.mm(omega, C), rs.mm(prods, C)

    def orth(V):  # Ω needs orthonormal columns, not a rank decision
        if Y.shape[1]:
            V = V - rs.mm(Y, rs.tmm(Y, V))
        return cholesky_qr(V, rs)

    omega = orth(rng.standard_normal((n, r)))
    sketch = op(omega)
    low = ritz(omega, sketch, k, True)
    for _ in range(power):
        omega = orth(sketch)
        del sketch
        sketch = op(omega)
    high = ritz(omega, sketch, top, False)
    nu = math.sqrt(n) * np.finfo(np.float64).eps * np.linalg.norm(sketch)  # ≥ its 2-norm
    shifted = sketch + nu * omega
    core = rs.tmm(omega, shifted)
    chol = np.linalg.cholesky(0.5 * (core + core.T))
    # B = shifted·chol⁻ᵀ
    B = rs.mm(shifted, scipy.linalg.solve_triangular(chol, np.eye(chol.shape[0]), lower=True).T)
    # B = UΣVᵀ from the r × r eigenproblem BᵀB = VΣ²Vᵀ (U = BVΣ⁻¹; the preconditioner needs
    # U and Σ² to a few digits, not an SVD's accuracy): n·r² GEMMs instead of an n × r SVD
    w, V = np.linalg.eigh(rs.tmm(B, B))
    w, V = w[::-1], V[:, ::-1]
    keep = w > w[0] * np.finfo(np.float64).eps * r
    U = rs.mm(B, V[:, keep] / np.sqrt(w[keep]))
    return U, np.maximum(w[keep] - nu, 0.0), low, high
