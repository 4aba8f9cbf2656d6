"""The backward pass of iLQR and DDP (compiled): the quadratic model of the value function
from the last knot to the first, and the feedback policy u = u_bar + alpha k + K dx.

Q_x = l_x + F_x^T V_x',  Q_u = l_u + F_u^T V_x',
Q_xx = l_xx + F_x^T V_xx' F_x,  Q_ux = F_u^T V_xx' F_x,  Q_uu = l_uu + F_u^T V_xx' F_u,
and for DDP the dynamics' curvature contracted with lambda = V_x' (Tassa et al. 2012;
Nganga & Wensing 2021): f is linear in a = aba(q, v, u) (v' = v + a dt, q' = q + v' dt),
so lambda^T f_** = mu^T a_** with mu = dt lambda_v + dt^2 lambda_q: Q_xx gains
[[mu.a_qq, mu.a_qv], [mu.a_qv^T, mu.a_vv]], Q_ux gains [mu.a_uq, 0] (a is affine in u:
a_uu = 0, and M^-1 does not depend on v: a_uv = 0). Those four contractions come from
aba_second_order_contraction's kernel at each knot (V_x' is known only once the pass
reaches it), O(N d) a knot and no tensor (issue 27).
The gains use Tassa et al. 2012's regularisation, reg on V_xx' (it reaches Q_uu through
F_u, so it scales with the dynamics): k = -Q~_uu^-1 Q_u, K = -Q~_uu^-1 Q~_ux with
Q~_uu = Q_uu + reg F_u^T F_u, Q~_ux = Q_ux + reg F_u^T F_x (Cholesky; a failure returns the
knot so the caller raises reg); the value from the plain Q's (their eq. 11, right for any
k, K): V_x = Q_x + K^T Q_uu k + K^T Q_u + Q_ux^T k,
V_xx = Q_xx + K^T Q_uu K + K^T Q_ux + Q_ux^T K.
"""

import numpy as np

from ..kernels.contraction import SC_SIZE, aba_contraction
from ..kernels.jit import entry, helper, kernel
from ..kernels.workspace import W_WIDTH, workspace_rows


@helper
def _rows4(C, i, j0, B, k, a0, a1, a2, a3):
    """C[i, j0:] += a0 B[k, j0:] + ... + a3 B[k + 3, j0:]: four rows of B per pass over
    C's row (C cannot be kept in registers: it may alias B; a pass per row of B measured
    2.5x slower on 36 x 36 products)."""
    for j in range(j0, C.shape[1]):
        C[i, j] += a0 * B[k, j] + a1 * B[k + 1, j] + a2 * B[k + 2, j] + a3 * B[k + 3, j]


@helper
def _row1(C, i, j0, B, k, a):
    for j in range(j0, C.shape[1]):
        C[i, j] += a * B[k, j]


@kernel
def _mm(A, B, C, beta):
    """C = beta C + A B (loops into C: numba's @ needs SciPy's BLAS; beta 0 ignores C's
    old contents, NaN included)."""
    n, inner, m = A.shape[0], A.shape[1], B.shape[1]
    for i in range(n):
        for j in range(m):
            C[i, j] = beta * C[i, j] if beta != 0.0 else 0.0
        k = 0
        while k + 4 <= inner:
            _rows4(C, i, 0, B, k, A[i, k], A[i, k + 1], A[i, k + 2], A[i, k + 3])
            k += 4
        while k < inner:
            _row1(C, i, 0, B, k, A[i, k])
            k += 1


@kernel
def _mtm(A, B, C, beta):
    """C = beta C + A^T B."""
    inner, n, m = A.shape[0], A.shape[1], B.shape[1]
    for i in range(n):
        for j in range(m):
            C[i, j] = beta * C[i, j] if beta != 0.0 else 0.0
        k = 0
        while k + 4 <= inner:
            _rows4(C, i, 0, B, k, A[k, i], A[k + 1, i], A[k + 2, i], A[k + 3, i])
            k += 4
        while k < inner:
            _row1(C, i, 0, B, k, A[k, i])
            k += 1


@kernel
def _mtm_sym(A, B, C):
    """C += A^T B for a product known to be symmetric (A^T V A): the upper triangle
    accumulated (rows of B contiguous), then mirrored."""
    inner, n = A.shape[0], A.shape[1]
    for i in range(n):
        k = 0
        while k + 4 <= inner:
            _rows4(C, i, i, B, k, A[k, i], A[k + 1, i], A[k + 2, i], A[k + 3, i])
            k += 4
        while k < inner:
            _row1(C, i, i, B, k, A[k, i])
            k += 1
    for i in range(n):
        for j in range(i):
            C[i, j] = C[j, i]


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
def _add_contracted(H, Qxx, Qux):
    """DDP: Q_xx += [[H_qq, H_qv], [H_qv^T, H_vv]], Q_ux[:, :nv] += H_uq for the
    contractions H (4, nv, nv) of aba_second_order_contraction (the same sums as
    _curvature's, without the tensors)."""
    nv = H.shape[1]
    for j in range(nv):
        for c in range(nv):
            Qxx[j, c] += H[0, j, c]
            Qxx[nv + j, nv + c] += H[1, j, c]
            Qxx[j, nv + c] += H[2, j, c]
            Qxx[nv + c, j] += H[2, j, c]
            Qux[j, c] += H[3, j, c]


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


@kernel
def _gains(t, us, lo, hi, Qu, Qr, G, L, K_fb, k_ff):
    """Knot t's gains from Qr (Q_uu regularised, nu x nu) and G = [Q_ux | Q_u]: the
    clamped controls' rows held (_clamp_rows), then K_fb[t], k_ff[t] = -Qr^-1 G by
    Cholesky (both backward passes). False when Qr is not positive definite."""
    nx = G.shape[1] - 1
    _clamp_rows(t, us, lo, hi, Qu, Qr, G)
    if not _cholesky(Qr, L):
        return False
    _neg_cho_solve(L, G)
    for i in range(G.shape[0]):         # loops: a kernel has no runtime to copy slices
        for j in range(nx):
            K_fb[t, i, j] = G[i, j]
        k_ff[t, i] = G[i, nx]
    return True


@kernel
def _sts(Vxx, dt, W):
    """W = S^T Vxx S with S = [[I, dt I], [0, I]] (q' = q + dt v': the map from the
    velocity-updated state to the next one)."""
    n = Vxx.shape[0] // 2
    for i in range(n):
        for j in range(n):
            v11, v12 = Vxx[i, j], Vxx[i, n + j]
            v21, v22 = Vxx[n + i, j], Vxx[n + i, n + j]
            W[i, j] = v11
            W[i, n + j] = dt * v11 + v12
            W[n + i, j] = dt * v11 + v21
            W[n + i, n + j] = dt * dt * v11 + dt * v12 + dt * v21 + v22


@kernel
def _grad_x(lxt, Vx, Pq, Pv, dt, out):
    """out = l_x + F_x^T Vx = l_x + [[I, Pq^T], [0, Pv^T]] S^T Vx."""
    n = Pq.shape[0]
    for i in range(n):
        sq = lxt[i] + Vx[i]
        sv = lxt[n + i]
        for k in range(n):
            wv = dt * Vx[k] + Vx[n + k]
            sq += Pq[k, i] * wv
            sv += Pv[k, i] * wv
        out[i] = sq
        out[n + i] = sv


@entry
def backward_pass(Pq, Pv, Pu, lx, lu, lxx, luu, reg, dt, ddp, costate, a_qq, a_vv, a_qv,
                  a_uq, us, lo, hi, k_ff, K_fb, mi, mf, q, v, contract):
    """Fill k_ff (T, nu) and K_fb (T, nu, nx); returns (-1, d1, d2) with the expected cost
    change alpha d1 + alpha^2 d2 of the step alpha, or (knot, 0, 0) where the regularised
    Q_uu is not positive definite.

    The dynamics' Jacobians come as their blocks (T, nv, nv): Pq = dt a_q,
    Pv = I + dt a_v, Pu = dt M^-1, so F_x = S [[I, 0], [Pq, Pv]], F_u = S [[0], [Pu]] with
    S = [[I, dt I], [0, I]]; the products run on those nv x nv blocks (about half the work
    of dense 2nv x 2nv ones). lx (T+1, nx), lxx (T+1, nx, nx): knot T's are the terminal
    cost's. us (T, nu), lo, hi (nu,): the nominal controls and their bounds (+-inf:
    none). ddp: add the curvature terms contracted with V_x' (classical DDP) or, with
    ``costate``, with the open-loop costate lambda_t = l_x + F_x^T lambda_{t+1}
    (Pantoja's stagewise Newton: with reg 0 the step is then exactly Newton's step on
    the controls). With ``contract`` (what solve() does) the contraction is computed at
    each knot as the pass reaches it, from the model (mi, mf) and the trajectory's
    q (T+1, nq), v (T+1, nv) and us (kernels/contraction.aba_contraction: O(N d) a knot,
    no tensor; the costate is only known there); otherwise from the tensors
    a_** (T, nv, nv, nv) (the tensor route, kept as the tests' oracle; ignored, and
    may be (T, 0, 0, 0), with ``contract``)."""
    T, n = Pq.shape[0], Pq.shape[1]
    nx, nu = 2 * n, Pu.shape[2]
    lam = lx[T].copy()
    lam_next = np.empty(nx)
    Vx = lx[T].copy()
    Vxx = lxx[T].copy()
    W = np.empty((nx, nx))
    C1, C2, WPu = np.empty((n, n)), np.empty((n, n)), np.empty((n, nu))
    wv = np.empty(n)
    Qx, Qu = np.empty(nx), np.empty(nu)
    Qxx, Qux, Quu = np.empty((nx, nx)), np.empty((nu, nx)), np.empty((nu, nu))
    Qr, L, G = np.empty((nu, nu)), np.zeros((nu, nu)), np.empty((nu, nx + 1))
    QuuK, KQ = np.empty((nu, nx)), np.empty((nx, nx))
    BB, BA = np.empty((nu, nu)), np.empty((nu, nx))
    Quk = np.empty(nu)
    # the contraction's scratch (kernels/contraction.aba_contraction)
    ws = np.empty((workspace_rows(mi), W_WIDTH))
    sc = np.empty(SC_SIZE)
    qdd, mu, cost = np.empty(n), np.empty(n), np.empty(n)
    Gc, Mt = np.empty((3, n)), np.empty((5, n, n))
    Fc = np.empty((mi[0, 0] + 1, n, 6))
    H = np.empty((4, n, n))
    c = 1.0 + dt * dt                   # S^T S = [[I, dt I], [dt I, c I]]
    d1 = 0.0
    d2 = 0.0
    for t in range(T - 1, -1, -1):
        A_q, A_v, B_u = Pq[t], Pv[t], Pu[t]
        _sts(Vxx, dt, W)
        W11, W12, W21, W22 = W[:n, :n], W[:n, n:], W[n:, :n], W[n:, n:]
        _grad_x(lx[t], Vx, A_q, A_v, dt, Qx)
        for k in range(n):
            wv[k] = dt * Vx[k] + Vx[n + k]
        Qu[:] = lu[t]
        _mtv(B_u, wv, Qu, 1.0)
        C1[:, :] = W21                  # [C1, C2]: the lower block row of W [[I,0],[Pq,Pv]]
        _mm(W22, A_q, C1, 1.0)
        _mm(W22, A_v, C2, 0.0)
        Qxx[:, :] = lxx[t]
        Qqq, Qqv, Qvv = Qxx[:n, :n], Qxx[:n, n:], Qxx[n:, n:]
        for i in range(n):
            for j in range(n):
                Qqq[i, j] += W11[i, j]
        _mm(W12, A_q, Qqq, 1.0)
        _mtm(A_q, C1, Qqq, 1.0)
        _mm(W12, A_v, Qqv, 1.0)
        _mtm(A_q, C2, Qqv, 1.0)
        _mtm_sym(A_v, C2, Qvv)
        for i in range(n):
            for j in range(n):
                Qxx[n + j, i] = Qqv[i, j]
        _mtm(B_u, C1, Qux[:, :n], 0.0)
        _mtm(B_u, C2, Qux[:, n:], 0.0)
        _mm(W22, B_u, WPu, 0.0)
        Quu[:, :] = luu[t]
        _mtm(B_u, WPu, Quu, 1.0)
        if ddp and contract:
            lv = lam if costate else Vx
            for i in range(n):          # f is linear in a (module docstring)
                cost[i] = dt * lv[n + i] + dt * dt * lv[i]
            aba_contraction(mi, mf, q[t], v[t], us[t], cost, None, ws, sc, qdd, mu, Gc,
                            Mt, Fc, H[0], H[1], H[2], H[3])
            _add_contracted(H, Qxx, Qux)
        elif ddp:
            _curvature(t, lam if costate else Vx, dt, a_qq, a_vv, a_qv, a_uq, Qxx, Qux)
        if costate:
            lam_next[:] = lam
            _grad_x(lx[t], lam_next, A_q, A_v, dt, lam)
        if reg > 1e-9:              # the floor (solver.REG_MIN): no regularisation
            _mtm(B_u, B_u, BB, 0.0)                 # F_u^T F_u = c Pu^T Pu
            _mtm(B_u, A_q, BA[:, :n], 0.0)          # F_u^T F_x = Pu^T [dt I + c Pq, c Pv]
            _mtm(B_u, A_v, BA[:, n:], 0.0)
            for i in range(nu):
                for j in range(nu):
                    BB[i, j] *= c
                for j in range(nx):
                    BA[i, j] *= c
                for j in range(n):
                    BA[i, j] += dt * B_u[j, i]
        else:
            BB[:, :] = 0.0
            BA[:, :] = 0.0
        for i in range(nu):
            for j in range(nu):
                Qr[i, j] = Quu[i, j] + reg * BB[i, j]
            for j in range(nx):
                G[i, j] = Qux[i, j] + reg * BA[i, j]
            G[i, nx] = Qu[i]
        if not _gains(t, us, lo, hi, Qu, Qr, G, L, K_fb, k_ff):
            return t, 0.0, 0.0
        K = K_fb[t]
        kf = k_ff[t]
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
        _mtm_sym(K, QuuK, Qxx)
        for i in range(nx):
            for j in range(i, nx):
                s = Qxx[i, j] + KQ[i, j] + KQ[j, i]
                Vxx[i, j] = s
                Vxx[j, i] = s
    return -1, d1, d2


@entry
def backward_pass_fddp(Fx, Fu, lx, lu, lxx, luu, lxu, fs, reg, feasible, us, lo, hi, k_ff,
                       K_fb, Vx, Vxx):
    """FDDP's backward pass (Crocoddyl's SolverDDP::backwardPass with SolverFDDP's gaps)
    on the dense Jacobians F_x (T, nx, nx), F_u (T, nx, nu) of the tangent dynamics:

        Q_x = l_x + F_x^T V_x',  Q_u = l_u + F_u^T V_x',  Q_xx = l_xx + F_x^T V_xx' F_x,
        Q_ux = l_xu^T + F_u^T V_xx' F_x,  Q_uu = l_uu + F_u^T V_xx' F_u + reg I,
        k = -Q_uu^-1 Q_u,  K = -Q_uu^-1 Q_ux,
        V_x = Q_x + K^T Q_u,  V_xx = sym(Q_xx + Q_ux^T K) + reg I,

    V_x += V_xx fs_t at each knot when not ``feasible`` (fs (T+1, nx) the gaps
    x_t (-) f(x_{t-1}, u_{t-1})), the terminal V_xx = l_xx + reg I. Control bounds as
    backward_pass (_clamp_rows). Fills k_ff (T, nu), K_fb (T, nu, nx), Vx (T+1, nx),
    Vxx (T+1, nx, nx); returns (-1, sum Q_u.k, sum k.Q_uu.k) or (knot, 0, 0) where Q_uu is
    not positive definite (then the caller raises reg)."""
    T, nx, nu = Fx.shape[0], Fx.shape[1], Fu.shape[2]
    FxV, VFu = np.empty((nx, nx)), np.empty((nx, nu))
    Qx, Qu = np.empty(nx), np.empty(nu)
    Qxx, Qux, Quu = np.empty((nx, nx)), np.empty((nu, nx)), np.empty((nu, nu))
    Qr, L, G = np.empty((nu, nu)), np.zeros((nu, nu)), np.empty((nu, nx + 1))
    Quk = np.empty(nu)
    cross = lxu.shape[1] > 0             # l_xu (T, nx, nu); (T, 0, 0): none
    Vxx[T, :, :] = lxx[T]
    for i in range(nx):
        Vxx[T, i, i] += reg
    Vx[T, :] = lx[T]
    if not feasible:
        _mv_add(Vxx[T], fs[T], Vx[T])
    dg = 0.0
    dq = 0.0
    for t in range(T - 1, -1, -1):
        A, B = Fx[t], Fu[t]
        # V_xx' F_x, V_xx' F_u, then the symmetric F^T (V_xx' F) by their upper
        # triangles: a fifth fewer products than F^T V_xx' first
        _mm(Vxx[t + 1], A, FxV, 0.0)
        _mm(Vxx[t + 1], B, VFu, 0.0)
        Qx[:] = lx[t]
        _mtv(A, Vx[t + 1], Qx, 1.0)
        Qxx[:, :] = lxx[t]
        _mtm_sym(A, FxV, Qxx)
        Qu[:] = lu[t]
        _mtv(B, Vx[t + 1], Qu, 1.0)
        Quu[:, :] = luu[t]
        _mtm_sym(B, VFu, Quu)
        for i in range(nu):
            Quu[i, i] += reg
        _mtm(B, FxV, Qux, 0.0)
        if cross:
            for i in range(nu):
                for j in range(nx):
                    Qux[i, j] += lxu[t, j, i]
        for i in range(nu):
            for j in range(nu):
                Qr[i, j] = Quu[i, j]
            for j in range(nx):
                G[i, j] = Qux[i, j]
            G[i, nx] = Qu[i]
        if not _gains(t, us, lo, hi, Qu, Qr, G, L, K_fb, k_ff):
            return t, 0.0, 0.0
        K = K_fb[t]
        kf = k_ff[t]
        for i in range(nu):
            s = 0.0
            for j in range(nu):
                s += Quu[i, j] * kf[j]
            Quk[i] = s
            dg += Qu[i] * kf[i]
            dq += kf[i] * s
        Vx[t, :] = Qx
        _mtv(K, Qu, Vx[t], 1.0)
        _mtm(Qux, K, FxV, 0.0)                 # Q_ux^T K
        V = Vxx[t]
        for i in range(nx):
            for j in range(i, nx):
                s = Qxx[i, j] + 0.5 * (FxV[i, j] + FxV[j, i])
                if j != i:
                    s = 0.5 * (Qxx[i, j] + Qxx[j, i]) + 0.5 * (FxV[i, j] + FxV[j, i])
                V[i, j] = s
                V[j, i] = s
            V[i, i] += reg
        if not feasible:
            _mv_add(V, fs[t], Vx[t])
    return -1, dg, dq


@kernel
def _mv_add(A, x, y):
    """y += A x."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] += s
