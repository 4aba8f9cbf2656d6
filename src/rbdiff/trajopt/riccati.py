"""The backward pass of iLQR and DDP (compiled): the quadratic model of the value function
from the last knot to the first, and the feedback policy u = u_bar + alpha k + K dx.

Q_x = l_x + F_x^T V_x',  Q_u = l_u + F_u^T V_x',
Q_xx = l_xx + F_x^T V_xx' F_x,  Q_ux = F_u^T V_xx' F_x,  Q_uu = l_uu + F_u^T V_xx' F_u,
and for DDP the dynamics' curvature contracted with lambda = V_x' (Tassa et al. 2012;
Nganga & Wensing 2021): f is linear in a = aba(q, v, u) (v' = v + a dt, q' = q + v' dt),
so lambda^T f_** = mu^T a_** with mu = dt lambda_v + dt^2 lambda_q: Q_xx gains
[[mu.a_qq, mu.a_qv], [mu.a_qv^T, mu.a_vv]], Q_ux gains [mu.a_uq, 0] (a is affine in u:
a_uu = 0, and M^-1 does not depend on v: a_uv = 0). Those four contractions come from
the RNEA contraction at the rollout's qdd with mu = Minv c at each knot (V_x' is known
only once the pass reaches it; kernels/contraction.rnea_contraction), O(N d) a knot and
no tensor (issue 27), and the ABA listing's products on the knot's own Jacobian blocks
(_add_contraction: ABA, Minv and the first-order derivatives are not computed twice).
The gains use Tassa et al. 2012's regularisation, reg on V_xx' (it reaches Q_uu through
F_u, so it scales with the dynamics): k = -Q~_uu^-1 Q_u, K = -Q~_uu^-1 Q~_ux with
Q~_uu = Q_uu + reg F_u^T F_u, Q~_ux = Q_ux + reg F_u^T F_x (Cholesky; a failure returns the
knot so the caller raises reg); the value from the plain Q's (their eq. 11, right for any
k, K): V_x = Q_x + K^T Q_uu k + K^T Q_u + Q_ux^T k,
V_xx = Q_xx + K^T Q_uu K + K^T Q_ux + Q_ux^T K; at the floor (no regularisation) the
gains solve Q_uu's own system and those reduce to V_x = Q_x + Q_ux^T k,
V_xx = Q_xx + Q_ux^T K (_value).

Speed: every product runs on C-contiguous arrays whose rows are the products' inner
loops (unit stride: vectorised), the nv x nv blocks side by side where that makes rows
longer (_q_blocks); a short row costs its loop's overhead as much as its arithmetic.
FDDP's pass (backward_pass_fddp: floating bases, contact and impulse knots) runs on the
same blocks and helpers, with the Euler step's configuration rows as a factor
S = [[Jq, dt Jv], [0, I]] of integrate's Jacobians applied to V_x' and V_xx' first
(_st_rows: the identity off the free flyers' and spherical joints' blocks).
"""

import numpy as np

from ..kernels.contact_dynamics import backward_rows, cholesky_solve, forward_rows
from ..kernels.contraction import CONTRACTION_WIDTH, SC_SIZE, rnea_contraction
from ..kernels.jit import entry, helper, kernel
from ..kernels.rows import add_row1, add_rows4, add_rows4x2
from ..kernels.workspace import workspace_rows
from .boxqp import box_qp, factor


@helper
def _rows4(C, i, c0, B, k, b0, nb, a0, a1, a2, a3):
    """C[i, c0 + j] += a0 B[k, b0 + j] + ... + a3 B[k + 3, b0 + j] for j < nb: four rows
    of B per pass over C's row (a pass per row of B measured 2.5x slower on 36 x 36
    products), on row views (2-D indexing with offsets ran 2-3x slower)."""
    e = b0 + nb
    add_rows4(C[i, c0:c0 + nb], B[k, b0:e], B[k + 1, b0:e], B[k + 2, b0:e],
              B[k + 3, b0:e], a0, a1, a2, a3)


@helper
def _rows4x2(C, i, c0, B, k, b0, nb, a0, a1, a2, a3, e0, e1, e2, e3):
    """_rows4 on rows i and i + 1 of C at once (coefficients a* and e*): each row of B
    loaded once for both."""
    e = b0 + nb
    add_rows4x2(C[i, c0:c0 + nb], C[i + 1, c0:c0 + nb], B[k, b0:e], B[k + 1, b0:e],
                B[k + 2, b0:e], B[k + 3, b0:e], a0, a1, a2, a3, e0, e1, e2, e3)


@helper
def _row1(C, i, c0, B, k, b0, nb, a):
    """C[i, c0 + j] += a B[k, b0 + j] for j < nb (_rows4's remainder)."""
    add_row1(C[i, c0:c0 + nb], B[k, b0:b0 + nb], a)


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
            _rows4(C, i, 0, B, k, 0, m, A[i, k], A[i, k + 1], A[i, k + 2], A[i, k + 3])
            k += 4
        while k < inner:
            _row1(C, i, 0, B, k, 0, m, A[i, k])
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
            _rows4(C, i, 0, B, k, 0, m, A[k, i], A[k + 1, i], A[k + 2, i], A[k + 3, i])
            k += 4
        while k < inner:
            _row1(C, i, 0, B, k, 0, m, A[k, i])
            k += 1


@kernel
def _mtm_sym(A, B, C):
    """C += A^T B for a product known to be symmetric (A^T V A): the upper triangle
    accumulated (rows of B contiguous), then mirrored."""
    inner, n = A.shape[0], A.shape[1]
    for i in range(n):
        k = 0
        while k + 4 <= inner:
            _rows4(C, i, i, B, k, i, n - i, A[k, i], A[k + 1, i], A[k + 2, i],
                   A[k + 3, i])
            k += 4
        while k < inner:
            _row1(C, i, i, B, k, i, n - i, A[k, i])
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
def _neg_cho_solve(L, B):
    """B = -(L L^T)^-1 B in place (B: (n, m)), all columns at once, by the contact
    solve's row operations (unit stride, vectorised)."""
    n = B.shape[0]
    forward_rows(L, n, B)
    backward_rows(L, n, B)
    for i in range(n):
        for c in range(B.shape[1]):
            B[i, c] = -B[i, c]


@kernel
def _gains(t, us, lo, hi, box, Qu, Qr, G, L, K_fb, k_ff, bx, free):
    """Knot t's gains from Qr (Q_uu regularised, nu x nu) and G = [Q_ux | Q_u] (both
    backward passes): K_fb[t], k_ff[t] = -Qr^-1 G by Cholesky, or with ``box`` (the
    control bounds lo, hi (nu,) hold at this pass) Tassa et al. 2014's control-limited
    gains, as Crocoddyl's SolverBoxFDDP: where the plain step leaves the box, k_ff[t]
    the box QP's solution (boxqp.box_qp: min 1/2 k'Qr k + Q_u'k, lo <= us[t] + k <= hi,
    warm-started from the previous pass's k; where it stays inside, it is that
    solution), the free rows of K_fb[t] -Qr_ff^-1 Q_ux,f and its clamped rows 0. Then
    Q_uu k + Q_u and Q_uu K + Q_ux vanish on the free rows and K's clamped rows are 0,
    so _value's exact shortcut holds and k.Q_u + k.Q_uu k / 2 is the QP's value: the
    expected change is the model's own (Crocoddyl zeroes Q_u's clamped rows there, which
    drops a step onto a bound's descent: iLQR's stop test then fired before its first
    step on a bounded iiwa reach). bx (6, nu), free (nu,) int64: scratch.
    False when Qr (or its free block) is not positive definite."""
    nu, nx = G.shape[0], G.shape[1] - 1
    for i in range(nu):
        for j in range(i + 1):
            L[i, j] = Qr[i, j]
    ok = factor(L, nu)
    if ok and box:      # the plain step inside the box is the QP's solution (all free):
        x = bx[2]       # the QP only where a bound binds (it costs 3x the plain gains)
        for i in range(nu):
            x[i] = -Qu[i]
        cholesky_solve(L, nu, x)
        box = False
        for i in range(nu):
            if not lo[i] <= us[t, i] + x[i] <= hi[i]:
                box = True
    if not box:
        if not ok:
            return False
        _neg_cho_solve(L, G)
        for i in range(nu):         # loops: a kernel has no runtime to copy slices
            for j in range(nx):
                K_fb[t, i, j] = G[i, j]
            k_ff[t, i] = G[i, nx]
        return True
    lb, ub, x = bx[0], bx[1], bx[2]
    for i in range(nu):
        lb[i] = lo[i] - us[t, i]
        ub[i] = hi[i] - us[t, i]
        x[i] = k_ff[t, i]
    nf = box_qp(Qr, Qu, lb, ub, x, free, L, bx[3], bx[4], bx[5])
    if nf < 0:
        return False
    for a in range(nf):             # the free rows to the top (free[a] >= a: in place)
        for j in range(nx):
            G[a, j] = G[free[a], j]
    forward_rows(L, nf, G)          # all of G: a column slice is strided (not vectorised,
    backward_rows(L, nf, G)         # 2x slower); its Q_u column comes along unused
    for i in range(nu):
        k_ff[t, i] = x[i]
        for j in range(nx):
            K_fb[t, i, j] = 0.0
    for a in range(nf):
        for j in range(nx):
            K_fb[t, free[a], j] = -G[a, j]
    return True


@kernel
def _bounded(lo, hi):
    """True when any control has a finite bound."""
    for i in range(lo.shape[0]):
        if lo[i] > -np.inf or hi[i] < np.inf:
            return True
    return False


@kernel
def _w_blocks(Vxx, dt, W12, W22):
    """The blocks of W = S^T Vxx S, S = [[I, dt I], [0, I]] (q' = q + dt v': the map from
    the velocity-updated state to the next one): W11 = Vqq (read in place),
    W12 = dt Vqq + Vqv, W21 = W12^T, W22 = dt^2 Vqq + dt (Vqv + Vvq) + Vvv."""
    n = W12.shape[0]
    for i in range(n):
        for j in range(n):
            v11, v12 = Vxx[i, j], Vxx[i, n + j]
            v21, v22 = Vxx[n + i, j], Vxx[n + i, n + j]
            W12[i, j] = dt * v11 + v12
            W22[i, j] = dt * dt * v11 + dt * v12 + dt * v21 + v22


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


@kernel
def _acc_nn(A, B, b0, nb, C, c0, upper):
    """C[i, c0 + j] += sum_k A[i, k] B[k, b0 + j] for j < nb: the inner loop runs along
    rows of B and C, four rows of B and two of C a pass (C-contiguous arrays: unit
    stride, vectorised; a sub-block passed as offsets, as a slice would lose that);
    ``upper``: only j >= i (a product whose square part is symmetric: the caller
    mirrors it; a pair's second row gets its entry below the diagonal too)."""
    _acc_tn(A.T, 0, A.shape[0], B, b0, nb, C, 0, c0, upper)     # (A^T)^T B: one loop


@kernel
def _acc_tn(A, a0, na, B, b0, nb, C, r0, c0, upper):
    """C[r0 + i, c0 + j] += sum_k A[k, a0 + i] B[k, b0 + j] for i < na, j < nb (the
    inner loop along rows, four rows of B and two of C a pass, ``upper`` as
    _acc_nn's)."""
    inner = A.shape[0]
    for i in range(0, na - 1, 2):
        a = a0 + i
        s = i if upper else 0
        k = 0
        while k + 4 <= inner:
            _rows4x2(C, r0 + i, c0 + s, B, k, b0 + s, nb - s, A[k, a], A[k + 1, a],
                     A[k + 2, a], A[k + 3, a], A[k, a + 1], A[k + 1, a + 1],
                     A[k + 2, a + 1], A[k + 3, a + 1])
            k += 4
        while k < inner:
            _row1(C, r0 + i, c0 + s, B, k, b0 + s, nb - s, A[k, a])
            _row1(C, r0 + i + 1, c0 + s, B, k, b0 + s, nb - s, A[k, a + 1])
            k += 1
    if na % 2:
        i = na - 1
        a = a0 + i
        s = i if upper else 0
        k = 0
        while k + 4 <= inner:
            _rows4(C, r0 + i, c0 + s, B, k, b0 + s, nb - s, A[k, a], A[k + 1, a],
                   A[k + 2, a], A[k + 3, a])
            k += 4
        while k < inner:
            _row1(C, r0 + i, c0 + s, B, k, b0 + s, nb - s, A[k, a])
            k += 1


@kernel
def _q_blocks(lxx, luu, Vxx, Pq, Pv, Pu, W12, W22, P, WP, C, Qxx, Qux, Quu):
    """Q_xx = l_xx + F_x^T Vxx F_x, Q_ux = F_u^T Vxx F_x, Q_uu = l_uu + F_u^T Vxx F_u on the
    nv x nv blocks (F_x = S [[I, 0], [Pq, Pv]], F_u = S [[0], [Pu]]): with W's blocks and
    C = [C1, C2] = W's lower block row times [[I, 0], [Pq, Pv]],
        C1 = W21 + W22 Pq,  C2 = W22 Pv,
        [Q_qq, Q_qv] = [l_qq + W11, l_qv] + W12 [Pq, Pv] + Pq^T C,  Q_vv = l_vv + Pv^T C2,
        Q_ux = Pu^T C,  Q_uu = l_uu + Pu^T W22 Pu.
    The blocks side by side, P = [Pq, Pv, Pu] (nv, 2nv + nu) and WP = W22 P, make the
    products' rows long (2nv or 3nv): a short row costs its loop's overhead."""
    n, nu = Pq.shape[0], Pu.shape[1]
    nx = 2 * n
    for i in range(n):
        p, pq, pv, pu, wp = P[i], Pq[i], Pv[i], Pu[i], WP[i]
        for j in range(n):
            p[j] = pq[j]
            p[n + j] = pv[j]
        for j in range(nu):
            p[nx + j] = pu[j]
        for j in range(nx + nu):
            wp[j] = 0.0
    _acc_nn(W22, P, 0, nx + nu, WP, 0, False)
    for i in range(n):
        ci, wp, vi = C[i], WP[i], Vxx[i]
        q, qn, li, ln = Qxx[i], Qxx[n + i], lxx[i], lxx[n + i]
        for j in range(n):
            ci[j] = W12[j, i] + wp[j]
            ci[n + j] = wp[n + j]
            q[j] = li[j] + vi[j]
            q[n + j] = li[n + j]
            qn[n + j] = ln[n + j]
    # Q_qq and Q_vv are symmetric: their upper triangles, then mirrored
    _acc_nn(W12, P, 0, nx, Qxx, 0, True)
    _acc_tn(P, 0, n, C, 0, nx, Qxx, 0, 0, True)
    _acc_tn(P, n, n, C, n, n, Qxx, n, n, True)
    for i in range(n):
        for j in range(n):
            Qxx[n + j, i] = Qxx[i, n + j]
        for j in range(i):
            Qxx[i, j] = Qxx[j, i]
            Qxx[n + i, n + j] = Qxx[n + j, n + i]
    for i in range(nu):
        for j in range(nx):
            Qux[i, j] = 0.0
        for j in range(nu):
            Quu[i, j] = luu[i, j]
    _acc_tn(P, nx, nu, C, 0, nx, Qux, 0, 0, False)
    _acc_tn(P, nx, nu, WP, nx, nu, Quu, 0, 0, False)


@kernel
def _add_block(B, A):
    """A[:n, :n] += B (n, n)."""
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            A[i, j] += B[i, j]


@kernel
def _add_contracted(H, Qxx, Qux):
    """DDP: Q_xx += [[H_qq, H_qv], [H_qv^T, H_vv]], Q_ux[:, :nv] += H_uq for the
    contractions H (4, nv, nv) of aba_second_order_contraction."""
    n = H.shape[1]
    for j in range(n):
        for c in range(n):
            Qxx[j, c] += H[0, j, c]
            Qxx[n + j, n + c] += H[1, j, c]
            Qxx[j, n + c] += H[2, j, c]
            Qxx[n + c, j] += H[2, j, c]
            Qux[j, c] += H[3, j, c]


@kernel
def _add_contraction(C, P, dt, Z, Qxx, Qux):
    """DDP's curvature from the RNEA contractions C = (C_Q, C_V, C_X, C_D) (4, nv, nv) at
    qdd with mu = Minv c (the ABA listing of kernels/contraction.py, its products on this
    knot's blocks P = [Pq, Pv, Pu] = [dt a_q, I + dt a_v, dt Minv] instead of a second
    M^-1 and IDSVA's first-order fill): with Y = C_D / dt (in C_D's place) and
    Z = Y^T P ((nv, 2nv + nu), one product, its rows P's: long unit-stride rows),
        mu.a_qq = -(C_Q + a_q^T C_D + C_D^T a_q) = -(C_Q + Pq^T Y + Y^T Pq),
        mu.a_vv = -C_V,
        mu.a_qv = -(C_X + C_D^T a_v) = -(C_X + Y^T Pv - Y^T),
        mu.a_uq = -Minv C_D = -Pu Y  (Pu symmetric: (Pu Y)[j, c] = Z[c, 2nv + j]),
    added to Q_xx, Q_ux as _add_contracted does."""
    n, m = C.shape[1], P.shape[1]
    Y = C[3]
    for i in range(n):
        for j in range(n):
            Y[i, j] /= dt
    for j in range(n):
        Zj = Z[j]               # a row view: the compiler keeps its address in a register
        for i in range(m):
            Zj[i] = 0.0
        for k in range(n):
            a = Y[k, j]
            Pk = P[k]
            for i in range(m):
                Zj[i] += a * Pk[i]
    for j in range(n):
        for c in range(n):
            Qxx[j, c] -= C[0, j, c] + Z[c, j] + Z[j, c]
            Qxx[n + j, n + c] -= C[1, j, c]
            x = C[2, j, c] + Z[j, n + c] - Y[c, j]
            Qxx[j, n + c] -= x
            Qxx[n + c, j] -= x
            Qux[j, c] -= Z[c, 2 * n + j]


@kernel
def _curvature(t, Vx, dt, a_qq, a_vv, a_qv, a_uq, H):
    """DDP's contractions from the tensors (the tests' oracle route): H (4, nv, nv) =
    mu.[a_qq, a_vv, a_qv, a_uq] with mu = dt Vx_v + dt^2 Vx_q (module doc)."""
    nv = a_qq.shape[1]
    for i in range(nv):
        for j in range(nv):
            for c in range(nv):
                H[0, j, c] = 0.0
                H[1, j, c] = 0.0
                H[2, j, c] = 0.0
                H[3, j, c] = 0.0
    for i in range(nv):
        mu = dt * Vx[nv + i] + dt * dt * Vx[i]
        for j in range(nv):
            for c in range(nv):
                H[0, j, c] += mu * a_qq[t, i, j, c]
                H[1, j, c] += mu * a_vv[t, i, j, c]
                H[2, j, c] += mu * a_qv[t, i, j, c]
                H[3, j, c] += mu * a_uq[t, i, j, c]


@kernel
def _regularised(Qux, Qu, Quu, Pq, Pv, Pu, reg, dt, Qr, G, BB, BA):
    """The gains' system Qr = Q_uu + reg F_u^T F_u, G = [Q_ux + reg F_u^T F_x | Q_u]
    (module doc; no regularisation at the floor, reg <= 1e-9), with
    F_u^T F_u = c Pu^T Pu and F_u^T F_x = Pu^T [dt I + c Pq, c Pv], c = 1 + dt^2
    (S^T S = [[I, dt I], [dt I, c I]])."""
    n, nu = Pq.shape[0], Pu.shape[1]
    nx = 2 * n
    if reg > 1e-9:              # the floor (solver.REG_MIN): no regularisation
        c = 1.0 + dt * dt
        _mtm(Pu, Pu, BB, 0.0)
        _mtm(Pu, Pq, BA[:, :n], 0.0)
        _mtm(Pu, Pv, BA[:, n:], 0.0)
        for i in range(nu):
            for j in range(nu):
                BB[i, j] *= c
            for j in range(nx):
                BA[i, j] *= c
            for j in range(n):
                BA[i, j] += dt * Pu[j, i]
        for i in range(nu):
            for j in range(nu):
                Qr[i, j] = Quu[i, j] + reg * BB[i, j]
            for j in range(nx):
                G[i, j] = Qux[i, j] + reg * BA[i, j]
            G[i, nx] = Qu[i]
    else:
        _system(Qux, Qu, Quu, nu, nx, Qr, G)


@helper
def _system(Qux, Qu, Quu, nu, nx, Qr, G):
    """The unregularised gains' system Qr = Q_uu, G = [Q_ux | Q_u] (nu x nu, nu x nx)."""
    for i in range(nu):
        for j in range(nu):
            Qr[i, j] = Quu[i, j]
        for j in range(nx):
            G[i, j] = Qux[i, j]
        G[i, nx] = Qu[i]


@kernel
def _value(Qx, Qu, Qxx, Qux, Quu, K, kf, exact, Z, Quk, Vx, Vxx):
    """V_x = Q_x + K^T Q_uu k + K^T Q_u + Q_ux^T k, V_xx = Q_xx + K^T Q_uu K + K^T Q_ux
    + Q_ux^T K (Tassa et al. 2012's eq. 11, right for any k, K), its upper triangle
    mirrored (exactly symmetric). ``exact``: the gains solve the
    unregularised system (Q_uu k = -Q_u, Q_uu K = -Q_ux on the free controls; a clamped
    control's rows of k, K are zero), where K^T (Q_uu k + Q_u) and K^T (Q_uu K + Q_ux)
    vanish: V_x = Q_x + Q_ux^T k, V_xx = Q_xx + Q_ux^T K, a third of the products.
    Returns (k.Q_u, k.Q_uu k / 2), the step's expected change terms."""
    nu, nx = K.shape
    d1 = 0.0
    d2 = 0.0
    for i in range(nu):
        s = 0.0
        for j in range(nu):
            s += Quu[i, j] * kf[j]
        Quk[i] = s
        d1 += kf[i] * Qu[i]
        d2 += 0.5 * kf[i] * s
    for j in range(nx):
        Vx[j] = Qx[j]
    # the upper triangle's sums, then mirrored (exactly symmetric); Q_xx copied whole
    for i in range(nx):
        for j in range(nx):
            Vxx[i, j] = Qxx[i, j]
    if exact:
        for l in range(nu):
            b = kf[l]
            for j in range(nx):
                Vx[j] += Qux[l, j] * b
        _acc_tn(Qux, 0, nx, K, 0, nx, Vxx, 0, 0, True)      # Q_ux^T K is symmetric
    else:
        _mm(Quu, K, Z, 0.0)                  # Z = Q_uu K + Q_ux
        for l in range(nu):
            b = kf[l]
            g = Quk[l] + Qu[l]
            for j in range(nx):
                Z[l, j] += Qux[l, j]
                Vx[j] += K[l, j] * g + Qux[l, j] * b
            for i in range(nx):
                a = K[l, i]
                c = Qux[l, i]
                for j in range(nx):
                    Vxx[i, j] += a * Z[l, j] + c * K[l, j]
    for i in range(nx):
        for j in range(i):
            Vxx[i, j] = Vxx[j, i]
    return d1, d2


@entry
def backward_pass(Pq, Pv, Pu, lx, lu, lxx, luu, reg, dt, ddp, costate, a_qq, a_vv, a_qv,
                  a_uq, us, lo, hi, k_ff, K_fb, mi, mf, q, v, acc, hqq, contract):
    """Fill k_ff (T, nu) and K_fb (T, nu, nx); returns (-1, d1, d2) with the expected cost
    change alpha d1 + alpha^2 d2 of the step alpha, or (knot, 0, 0) where the regularised
    Q_uu is not positive definite.

    The dynamics' Jacobians come as their blocks (T, nv, nv): Pq = dt a_q,
    Pv = I + dt a_v, Pu = dt M^-1, so F_x = S [[I, 0], [Pq, Pv]], F_u = S [[0], [Pu]] with
    S = [[I, dt I], [0, I]]; the products run on those nv x nv blocks (about half the work
    of dense 2nv x 2nv ones; _q_blocks). lx (T+1, nx), lxx (T+1, nx, nx): knot T's are the
    terminal cost's. us (T, nu), lo, hi (nu,): the nominal controls and their bounds (+-inf:
    none; where any is finite, the gains come from _gains' box QP). ddp: add the
    curvature terms contracted with V_x' (classical DDP) or, with
    ``costate``, with the open-loop costate lambda_t = l_x + F_x^T lambda_{t+1}
    (Pantoja's stagewise Newton: with reg 0 the step is then exactly Newton's step on
    the controls). With ``contract`` (what solve() does) the contraction is computed at
    each knot as the pass reaches it, from the model (mi, mf) and the trajectory's
    q (T+1, nq), v (T+1, nv) and accelerations acc (T, nv) = aba(q_t, v_t, us_t) (the
    rollout's: kernels/contraction.rnea_contraction at them, then _add_contraction:
    O(N d) a knot, no tensor, no second ABA; the costate is only known there);
    otherwise from the tensors a_** (T, nv, nv, nv) (the tensor route, kept as the
    tests' oracle; ignored, and may be (T, 0, 0, 0), with ``contract``). hqq
    (T+1, nv, nv): the cost residuals' curvature (Problem.cost_curvature), added to l_xx's
    q block with ``ddp`` (so that one l_xx serves both passes), or (0, nv, nv): none."""
    T, n = Pq.shape[0], Pq.shape[1]
    nx, nu = 2 * n, Pu.shape[2]
    lam = lx[T].copy()
    lam_next = np.empty(nx)
    Vx = lx[T].copy()
    Vxx = lxx[T].copy()
    curved = ddp and hqq.shape[0] > 0
    if curved:
        _add_block(hqq[T], Vxx)
    W12, W22 = np.empty((n, n)), np.empty((n, n))
    P, WP, C = np.empty((n, nx + nu)), np.empty((n, nx + nu)), np.empty((n, nx))
    wv = np.empty(n)
    Qx, Qu = np.empty(nx), np.empty(nu)
    Qxx, Qux, Quu = np.empty((nx, nx)), np.empty((nu, nx)), np.empty((nu, nu))
    Qr, L, G = np.empty((nu, nu)), np.zeros((nu, nu)), np.empty((nu, nx + 1))
    Z, BB, BA = np.empty((nu, nx)), np.empty((nu, nu)), np.empty((nu, nx))
    Quk = np.empty(nu)
    bx, free = np.empty((6, nu)), np.empty(nu, np.int64)
    box = _bounded(lo, hi)
    # the contraction's scratch (kernels/contraction.rnea_contraction)
    ws = np.empty((workspace_rows(mi), CONTRACTION_WIDTH))
    sc = np.empty(SC_SIZE)
    mu, wl = np.empty(n), np.empty(n)
    H, PY = np.empty((4, n, n)), np.empty((n, nx + nu))
    exact = not reg > 1e-9              # the floor (solver.REG_MIN): no regularisation
    d1 = 0.0
    d2 = 0.0
    for t in range(T - 1, -1, -1):
        A_q, A_v, B_u = Pq[t], Pv[t], Pu[t]
        _w_blocks(Vxx, dt, W12, W22)
        _grad_x(lx[t], Vx, A_q, A_v, dt, Qx)
        for k in range(n):
            wv[k] = dt * Vx[k] + Vx[n + k]
        Qu[:] = lu[t]
        _mtv(B_u, wv, Qu, 1.0)
        _q_blocks(lxx[t], luu[t], Vxx, A_q, A_v, B_u, W12, W22, P, WP, C, Qxx, Qux, Quu)
        if curved:
            _add_block(hqq[t], Qxx)
        if ddp:
            lv = lam if costate else Vx
            if contract:
                # f is linear in a (module docstring): the costate of a is
                # c = dt lv_v + dt^2 lv_q, and mu = Minv c = Pu (lv_v + dt lv_q)
                for i in range(n):
                    wl[i] = lv[n + i] + dt * lv[i]
                for r in range(n):
                    s = 0.0
                    for c in range(n):
                        s += B_u[r, c] * wl[c]
                    mu[r] = s
                rnea_contraction(mi, mf, q[t], v[t], acc[t], mu, None, ws, sc, H[0], H[1],
                                 H[2], H[3])
                _add_contraction(H, P, dt, PY, Qxx, Qux)
            else:
                _curvature(t, lv, dt, a_qq, a_vv, a_qv, a_uq, H)
                _add_contracted(H, Qxx, Qux)
        if costate:
            lam_next[:] = lam
            _grad_x(lx[t], lam_next, A_q, A_v, dt, lam)
        _regularised(Qux, Qu, Quu, A_q, A_v, B_u, reg, dt, Qr, G, BB, BA)
        if not _gains(t, us, lo, hi, box, Qu, Qr, G, L, K_fb, k_ff, bx, free):
            return t, 0.0, 0.0
        e1, e2 = _value(Qx, Qu, Qxx, Qux, Quu, K_fb[t], k_ff[t], exact, Z, Quk, Vx, Vxx)
        d1 += e1
        d2 += e2
    return -1, d1, d2


@kernel
def _st_rows(X, Jq, Jv, c, blocks, out):
    """out = S^T X (X (2n, m)) for the Euler step's state map S = [[Jq, c Jv], [0, I]]
    (F_x = S [[I, 0], [Pq, Pv]]: backward_pass_fddp), with Jq, Jv (n, n) integrate's
    Jacobians, which are the identity off the diagonal ``blocks`` (nb, 2) (first dof,
    size) of the joints whose configuration space is not a vector space: off them the
    rows are copies, on them small dense products (O(n m) in all, not O(n^2 m))."""
    n, m = Jq.shape[0], X.shape[1]
    for i in range(n):          # row views: the 2-D indexed loops were not vectorised
        x, xn, o, on = X[i], X[n + i], out[i], out[n + i]
        for j in range(m):
            o[j] = x[j]
            on[j] = c * x[j] + xn[j]
    for b in range(blocks.shape[0]):
        s, sz = blocks[b, 0], blocks[b, 1]
        for i in range(sz):
            o, on, xn = out[s + i], out[n + s + i], X[n + s + i]
            for j in range(m):
                o[j] = 0.0 * c
                on[j] = xn[j]
            for k in range(sz):
                a = Jq[s + k, s + i]
                d = c * Jv[s + k, s + i]
                x = X[s + k]
                for j in range(m):
                    o[j] += a * x[j]
                    on[j] += d * x[j]


@kernel
def _st_vec(x, Jq, Jv, c, blocks, out):
    """out = S^T x for a vector x (2n,) (_st_rows)."""
    n = Jq.shape[0]
    for i in range(n):
        out[i] = x[i]
        out[n + i] = c * x[i] + x[n + i]
    for b in range(blocks.shape[0]):
        s, sz = blocks[b, 0], blocks[b, 1]
        for i in range(sz):
            sq = 0.0 * c
            sv = x[n + s + i]
            for k in range(sz):
                sq += Jq[s + k, s + i] * x[s + k]
                sv += c * Jv[s + k, s + i] * x[s + k]
            out[s + i] = sq
            out[n + s + i] = sv


@kernel
def _st_w_blocks(Vxx, Jq, Jv, c, blocks, Z, W11, W12, W22):
    """The blocks of W = S^T Vxx S (S = [[Jq, c Jv], [0, I]], _st_rows) for _q_blocks:
    Z = S^T Vxx by rows, then W = Z S by columns into W11, W12, W22 (W21 = W12^T is not
    needed): off the blocks a column of W is a column of Z or c times one plus another."""
    n = Jq.shape[0]
    _st_rows(Vxx, Jq, Jv, c, blocks, Z)
    for i in range(n):
        z, zn, w11, w12, w22 = Z[i], Z[n + i], W11[i], W12[i], W22[i]
        for j in range(n):
            w11[j] = z[j]
            w12[j] = c * z[j] + z[n + j]
            w22[j] = c * zn[j] + zn[n + j]
    for b in range(blocks.shape[0]):
        s, sz = blocks[b, 0], blocks[b, 1]
        for i in range(n):
            for j in range(sz):
                a11 = 0.0 * c
                a12 = Z[i, n + s + j]
                a22 = Z[n + i, n + s + j]
                for k in range(sz):
                    jq, jv = Jq[s + k, s + j], c * Jv[s + k, s + j]
                    a11 += Z[i, s + k] * jq
                    a12 += Z[i, s + k] * jv
                    a22 += Z[n + i, s + k] * jv
                W11[i, s + j] = a11
                W12[i, s + j] = a12
                W22[i, s + j] = a22


@entry
def backward_pass_fddp(Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu, fs, reg,
                       feasible, us, lo, hi, k_ff, K_fb, Vx, Vxx):
    """FDDP's backward pass (Crocoddyl's SolverDDP::backwardPass with SolverFDDP's gaps)
    on the tangent dynamics' Jacobians

        F_x = S [[I, 0], [Pq, Pv]],  F_u = S [[0], [Pu]],  S = [[Jq, c Jv], [0, I]]

    (Pq, Pv (T, nv, nv), Pu (T, nv, nu): the velocity rows; Jq, Jv (T, nv, nv)
    integrate's Jacobians, the identity off the diagonal ``blocks`` (nb, 2) (_st_rows);
    c (T,): dt at a free or contact knot (q' = integrate(q, dt v')), 0 at an impulse knot
    (q' = q, Jq the identity there)):

        Q_x = l_x + F_x^T V_x',  Q_u = l_u + F_u^T V_x',  Q_xx = l_xx + F_x^T V_xx' F_x,
        Q_ux = l_xu^T + F_u^T V_xx' F_x,  Q_uu = l_uu + F_u^T V_xx' F_u + reg I,
        k = -Q_uu^-1 Q_u,  K = -Q_uu^-1 Q_ux,
        V_x = Q_x + Q_ux^T k,  V_xx = sym(Q_xx + Q_ux^T K) + reg I,

    (Crocoddyl's V_x = Q_x + K^T Q_u: the same, Q_uu being the gains' own system), V_x +=
    V_xx fs_t at each knot when not ``feasible`` (fs (T+1, nx) the gaps
    x_t (-) f(x_{t-1}, u_{t-1})), the terminal V_xx = l_xx + reg I. The products run on
    the nv x nv blocks as backward_pass's (_q_blocks on W = S^T V_xx' S, _value with the
    exact shortcut), about half the work of the dense 2nv x 2nv ones. Control bounds
    (lo, hi (nu,), +-inf: none) by the box QP of _gains while ``feasible``, the plain
    gains otherwise (Crocoddyl's SolverBoxFDDP). Fills k_ff (T, nu), K_fb (T, nu, nx),
    Vx (T+1, nx), Vxx (T+1, nx, nx); returns (-1, sum Q_u.k, sum k.Q_uu.k) or (knot, 0,
    0) where Q_uu is not positive definite (then the caller raises reg)."""
    T, n = Pq.shape[0], Pq.shape[1]
    nx, nu = 2 * n, Pu.shape[2]
    sc = (np.empty((nx, nx)), np.empty((n, n)), np.empty((n, n)), np.empty((n, n)),
          np.empty((n, nx + nu)), np.empty((n, nx + nu)), np.empty((n, nx)),
          np.empty(nx), np.empty(nx), np.empty(nu), np.empty((nx, nx)),
          np.empty((nu, nx)), np.empty((nu, nu)), np.empty((nu, nu)),
          np.zeros((nu, nu)), np.empty((nu, nx + 1)), np.empty((nu, nx)), np.empty(nu),
          np.empty((6, nu)), np.empty(nu, np.int64))
    no_h = np.zeros((0, 0))
    Vxx[T, :, :] = lxx[T]
    for i in range(nx):
        Vxx[T, i, i] += reg
    Vx[T, :] = lx[T]
    if not feasible:
        _mv_add(Vxx[T], fs[T], Vx[T])
    dg = 0.0
    dq = 0.0
    for t in range(T - 1, -1, -1):
        ok, e1, e2 = _fddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu,
                                fs, reg, feasible, us, lo, hi, k_ff, K_fb, Vx, Vxx,
                                no_h, sc)
        if not ok:
            return t, 0.0, 0.0
        dg += e1
        dq += 2.0 * e2
    return -1, dg, dq


def fddp_scratch(n, nu):
    """The FDDP knot's scratch arrays (_fddp_knot), for ddp_knot's caller."""
    nx = 2 * n
    return (np.empty((nx, nx)), np.empty((n, n)), np.empty((n, n)), np.empty((n, n)),
            np.empty((n, nx + nu)), np.empty((n, nx + nu)), np.empty((n, nx)),
            np.empty(nx), np.empty(nx), np.empty(nu), np.empty((nx, nx)),
            np.empty((nu, nx)), np.empty((nu, nu)), np.empty((nu, nu)),
            np.zeros((nu, nu)), np.empty((nu, nx + 1)), np.empty((nu, nx)), np.empty(nu),
            np.empty((6, nu)), np.empty(nu, np.int64))


@kernel
def _fddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu, fs, reg,
               feasible, us, lo, hi, k_ff, K_fb, Vx, Vxx, Hz, sc):
    """Knot t of backward_pass_fddp (its docstring), from V_x', V_xx' (Vx[t + 1],
    Vxx[t + 1]) to Vx[t], Vxx[t] and the gains; Hz (nx + nu, nx + nu), or (0, 0): none,
    added to [[Q_xx, Q_ux^T], [Q_ux, Q_uu]] before the gains (DDP's curvature of
    lambda'.f, trajopt/curvature.py). Returns (ok, Q_u.k, k.Q_uu.k / 2); ok False where
    Q_uu is not positive definite."""
    Z, W11, W12, W22, P, WP, C, w, Qx, Qu, Qxx, Qux, Quu, Qr, L, G, KZ, Quk, bx, free = sc
    n, nu = Pq.shape[1], Pu.shape[2]
    nx = 2 * n
    A_q, A_v, B_u = Pq[t], Pv[t], Pu[t]
    _st_vec(Vx[t + 1], Jq[t], Jv[t], c[t], blocks, w)
    _grad_x(lx[t], w, A_q, A_v, 0.0, Qx)        # w = S^T V_x': S's part done
    for i in range(nu):
        Qu[i] = lu[t, i]
    _mtv(B_u, w[n:], Qu, 1.0)
    _st_w_blocks(Vxx[t + 1], Jq[t], Jv[t], c[t], blocks, Z, W11, W12, W22)
    _q_blocks(lxx[t], luu[t], W11, A_q, A_v, B_u, W12, W22, P, WP, C, Qxx, Qux, Quu)
    for i in range(nu):
        Quu[i, i] += reg
    if lxu.shape[1] > 0:                # l_xu (T, nx, nu); (T, 0, 0): none
        for i in range(nu):
            for j in range(nx):
                Qux[i, j] += lxu[t, j, i]
    if Hz.shape[0] > 0:
        for i in range(nx):
            for j in range(nx):
                Qxx[i, j] += Hz[i, j]
        for i in range(nu):
            for j in range(nx):
                Qux[i, j] += Hz[nx + i, j]
            for j in range(nu):
                Quu[i, j] += Hz[nx + i, nx + j]
    _system(Qux, Qu, Quu, nu, nx, Qr, G)
    # Crocoddyl's BoxFDDP: the box QP from a feasible trajectory, the plain gains while
    # gaps remain (the rollout clamps either way; the box QP from an infeasible start
    # left the panda reach at 0.175 after 500 iterations, where this takes 72 to 0.135)
    if not _gains(t, us, lo, hi, feasible and _bounded(lo, hi), Qu, Qr, G, L, K_fb, k_ff,
                  bx, free):
        return False, 0.0, 0.0
    e1, e2 = _value(Qx, Qu, Qxx, Qux, Quu, K_fb[t], k_ff[t], True, KZ, Quk, Vx[t],
                    Vxx[t])
    for i in range(nx):
        Vxx[t, i, i] += reg
    if not feasible:
        _mv_add(Vxx[t], fs[t], Vx[t])
    return True, e1, e2


@entry
def ddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu, fs, reg, feasible,
             us, lo, hi, k_ff, K_fb, Vx, Vxx, Hz, sc):
    """One knot of the FDDP pass with DDP's curvature Hz added (_fddp_knot), for the
    DDP pass that trajopt/curvature.py drives knot by knot (Hz needs V_x', known only
    once the pass reaches the knot); sc: fddp_scratch's arrays. Returns (ok, Q_u.k,
    k.Q_uu.k)."""
    ok, e1, e2 = _fddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu, fs,
                            reg, feasible, us, lo, hi, k_ff, K_fb, Vx, Vxx, Hz, sc)
    return ok, e1, 2.0 * e2


@kernel
def _mv_add(A, x, y):
    """y += A x."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] += s
