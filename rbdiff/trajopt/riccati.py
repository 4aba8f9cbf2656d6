"""The backward pass of iLQR and DDP (compiled): the quadratic model of the value function
from the last knot to the first, and the feedback policy u = u_bar + alpha k + K dx.

Q_x = l_x + F_x^T V_x',  Q_u = l_u + F_u^T V_x',
Q_xx = l_xx + F_x^T V_xx' F_x,  Q_ux = F_u^T V_xx' F_x,  Q_uu = l_uu + F_u^T V_xx' F_u,
and for DDP the dynamics' curvature contracted with lambda = V_x' (Tassa et al. 2012;
Nganga & Wensing 2021): f is linear in a = aba(q, v, u) (v' = v + a dt, q' = q + v' dt),
so lambda^T f_** = mu^T a_** with mu = dt lambda_v + dt^2 lambda_q: Q_xx gains
[[mu.a_qq, mu.a_qv], [mu.a_qv^T, mu.a_vv]], Q_ux gains [mu.a_uq, 0] (a is affine in u:
a_uu = 0, and M^-1 does not depend on v: a_uv = 0).
The gains use Tassa et al. 2012's regularisation, reg on V_xx' (it reaches Q_uu through
F_u, so it scales with the dynamics): k = -Q~_uu^-1 Q_u, K = -Q~_uu^-1 Q~_ux with
Q~_uu = Q_uu + reg F_u^T F_u, Q~_ux = Q_ux + reg F_u^T F_x (Cholesky; a failure returns the
knot so the caller raises reg); the value from the plain Q's (their eq. 11, right for any
k, K): V_x = Q_x + K^T Q_uu k + K^T Q_u + Q_ux^T k,
V_xx = Q_xx + K^T Q_uu K + K^T Q_ux + Q_ux^T K.
"""

import numpy as np

from ..kernels.jit import entry, kernel


@kernel
def _mm(A, B, C, beta):
    """C = beta C + A B (loops into C: numba's @ needs SciPy's BLAS; beta 0 ignores C's
    old contents, NaN included)."""
    n, inner, m = A.shape[0], A.shape[1], B.shape[1]
    for i in range(n):
        for j in range(m):
            C[i, j] = beta * C[i, j] if beta != 0.0 else 0.0
        for k in range(inner):
            a = A[i, k]
            for j in range(m):
                C[i, j] += a * B[k, j]


@kernel
def _mtm(A, B, C, beta):
    """C = beta C + A^T B."""
    inner, n, m = A.shape[0], A.shape[1], B.shape[1]
    for i in range(n):
        for j in range(m):
            C[i, j] = beta * C[i, j] if beta != 0.0 else 0.0
    for k in range(inner):
        for i in range(n):
            a = A[k, i]
            for j in range(m):
                C[i, j] += a * B[k, j]


@kernel
def _mtv(A, x, y, beta):
    """y = beta y + A^T x."""
    for i in range(A.shape[1]):
        y[i] = beta * y[i] if beta != 0.0 else 0.0
    for k in range(A.shape[0]):
        for i in range(A.shape[1]):
            y[i] += A[k, i] * x[k]


@kernel
def _cholesky(A, L):
    """L L^T = A (lower); False when A is not positive definite."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return True


@kernel
def _neg_cho_solve(L, B):
    """B = -(L L^T)^-1 B in place (B: (n, m))."""
    n, m = B.shape
    for c in range(m):
        for i in range(n):              # L y = b
            t = B[i, c]
            for k in range(i):
                t -= L[i, k] * B[k, c]
            B[i, c] = t / L[i, i]
        for i in range(n - 1, -1, -1):  # L^T x = y
            t = B[i, c]
            for k in range(i + 1, n):
                t -= L[k, i] * B[k, c]
            B[i, c] = t / L[i, i]
        for i in range(n):
            B[i, c] = -B[i, c]


@kernel
def _curvature(t, Vx, dt, a_qq, a_vv, a_qv, a_uq, Qxx, Qux):
    """DDP: Q_xx += mu.[a_qq, a_qv; a_qv^T, a_vv], Q_ux[:, :nv] += mu.a_uq (module doc)."""
    nv = a_qq.shape[1]
    for i in range(nv):
        mu = dt * Vx[nv + i] + dt * dt * Vx[i]
        for j in range(nv):
            for c in range(nv):
                Qxx[j, c] += mu * a_qq[t, i, j, c]
                Qxx[nv + j, nv + c] += mu * a_vv[t, i, j, c]
                Qxx[j, nv + c] += mu * a_qv[t, i, j, c]
                Qxx[nv + c, j] += mu * a_qv[t, i, j, c]
                Qux[j, c] += mu * a_uq[t, i, j, c]


@kernel
def _clamp_rows(t, us, lo, hi, Qu, Qr, G):
    """Control bounds (Tassa et al. 2014's clamped set, one pass): a control at its bound
    that the gradient pushes further out stays put: its row and column of the regularised
    Q_uu become the identity's and its row of G (the right-hand sides) zero, so k and K
    leave it alone and the free controls are solved for with it held."""
    nu = Qu.shape[0]
    for i in range(nu):
        if (us[t, i] <= lo[i] and Qu[i] > 0.0) or (us[t, i] >= hi[i] and Qu[i] < 0.0):
            for j in range(nu):
                Qr[i, j] = 0.0
                Qr[j, i] = 0.0
            Qr[i, i] = 1.0
            for j in range(G.shape[1]):
                G[i, j] = 0.0


@entry
def backward_pass(Fx, Fu, lx, lu, lxx, luu, reg, dt, ddp, costate, a_qq, a_vv, a_qv, a_uq,
                  us, lo, hi, k_ff, K_fb):
    """Fill k_ff (T, nu) and K_fb (T, nu, nx); returns (-1, d1, d2) with the expected cost
    change alpha d1 + alpha^2 d2 of the step alpha, or (knot, 0, 0) where the regularised
    Q_uu is not positive definite. lx (T+1, nx), lxx (T+1, nx, nx): knot T's are the
    terminal cost's. us (T, nu), lo, hi (nu,): the nominal controls and their bounds
    (+-inf: none). ddp: add the curvature terms (a_** (T, nv, nv, nv); ignored
    otherwise), contracted with V_x' (classical DDP) or, with ``costate``, with the
    open-loop costate lambda_t = l_x + F_x^T lambda_{t+1} (Pantoja's stagewise Newton:
    with reg 0 the step is then exactly Newton's step on the controls)."""
    T, nx, nu = Fu.shape[0], Fu.shape[1], Fu.shape[2]
    lam = lx[T].copy()
    lam_next = np.empty(nx)
    Vx = lx[T].copy()
    Vxx = lxx[T].copy()
    VA, VB = np.empty((nx, nx)), np.empty((nx, nu))
    Qx, Qu = np.empty(nx), np.empty(nu)
    Qxx, Qux, Quu = np.empty((nx, nx)), np.empty((nu, nx)), np.empty((nu, nu))
    Qr, L, G = np.empty((nu, nu)), np.zeros((nu, nu)), np.empty((nu, nx + 1))
    QuuK, KQ = np.empty((nu, nx)), np.empty((nx, nx))
    BB, BA = np.empty((nu, nu)), np.empty((nu, nx))
    Quk = np.empty(nu)
    d1 = 0.0
    d2 = 0.0
    for t in range(T - 1, -1, -1):
        A = Fx[t]
        B = Fu[t]
        _mm(Vxx, A, VA, 0.0)
        _mm(Vxx, B, VB, 0.0)
        Qx[:] = lx[t]
        _mtv(A, Vx, Qx, 1.0)
        Qu[:] = lu[t]
        _mtv(B, Vx, Qu, 1.0)
        Qxx[:, :] = lxx[t]
        _mtm(A, VA, Qxx, 1.0)
        _mtm(B, VA, Qux, 0.0)
        Quu[:, :] = luu[t]
        _mtm(B, VB, Quu, 1.0)
        if ddp:
            _curvature(t, lam if costate else Vx, dt, a_qq, a_vv, a_qv, a_uq, Qxx, Qux)
        if costate:
            lam_next[:] = lam
            lam[:] = lx[t]
            _mtv(A, lam_next, lam, 1.0)
        _mtm(B, B, BB, 0.0)
        _mtm(B, A, BA, 0.0)
        for i in range(nu):
            for j in range(nu):
                Qr[i, j] = Quu[i, j] + reg * BB[i, j]
            for j in range(nx):
                G[i, j] = Qux[i, j] + reg * BA[i, j]
            G[i, nx] = Qu[i]
        _clamp_rows(t, us, lo, hi, Qu, Qr, G)
        if not _cholesky(Qr, L):
            return t, 0.0, 0.0
        _neg_cho_solve(L, G)
        K = K_fb[t]
        K[:, :] = G[:, :nx]
        kf = k_ff[t]
        kf[:] = G[:, nx]
        _mm(Quu, K, QuuK, 0.0)
        for i in range(nu):
            s = 0.0
            for j in range(nu):
                s += Quu[i, j] * kf[j]
            Quk[i] = s
            d1 += kf[i] * Qu[i]
            d2 += 0.5 * kf[i] * s
        Qu += Quk
        _mtv(K, Qu, Qx, 1.0)
        _mtv(Qux, kf, Qx, 1.0)
        Vx[:] = Qx
        _mtm(K, Qux, KQ, 0.0)
        _mtm(K, QuuK, Qxx, 1.0)
        for i in range(nx):
            for j in range(nx):
                Vxx[i, j] = Qxx[i, j] + KQ[i, j] + KQ[j, i]
        for i in range(nx):
            for j in range(i):
                s = 0.5 * (Vxx[i, j] + Vxx[j, i])
                Vxx[i, j] = s
                Vxx[j, i] = s
    return -1, d1, d2
