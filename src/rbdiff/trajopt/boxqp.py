"""The control-limited backward pass's subproblem (compiled): a box-constrained QP

    min_x 1/2 x^T H x + q^T x   subject to   lb <= x <= ub      (H positive definite)

by projected Newton (Bertsekas 1982), as in Tassa, Mansard & Todorov 2014's
control-limited DDP and Crocoddyl's BoxQP (SolverBoxFDDP's backward pass):

    g = q + H x;  clamped c: x_i at lb_i with g_i > 0 or at ub_i with g_i < 0;  free f;
    stop when |g_f|_inf <= tol, or when the free set is the one a full Newton step that
    no bound clipped was taken on (x then minimises the QP on that face);
    dx_f = -H_ff^-1 g_f, dx_c = 0;  x <- proj(x + a dx), a = 1, 1/2, ..., 2^-(STEPS-1),
    the first with f(x) - f(x_new) >= ARMIJO g^T (x - x_new).

The QP is strictly convex, so its solution is unique and the iterations identify its
active set in a few steps; H_ff's Cholesky factor at the solution gives the feedback
rows (riccati._gains: K_f = -H_ff^-1 Q_ux,f, K_c = 0).
"""

import numpy as np

from ..kernels.contact_dynamics import cholesky_solve, cholesky_to
from ..kernels.jit import kernel

MAXITER = 100       # projected-Newton iterations (Crocoddyl's BoxQP: 100)
STEPS = 10          # step lengths tried, 1 down to 2^-9
ARMIJO = 0.1        # sufficient decrease (Crocoddyl's th_acceptstep)
RTOL = 1e-10        # stop at |g_f|_inf <= RTOL max(|q|_inf, |H x|_inf): relative to the
                    # gradient's own terms (near an optimum q is tiny: an absolute 1e-10
                    # stopped at a stale warm start and stalled FDDP's line search), not
                    # Crocoddyl's absolute 1e-5


@kernel
def factor(W, n):
    """W[:n, :n] = L L^T in place (L in the lower triangle, read from W's lower
    triangle); False when W[:n, :n] is not positive definite (the strict pivot test, not
    the contacts' rank test: a badly scaled but definite Q_uu is factored, not
    regularised)."""
    return cholesky_to(W, n, 0.0) < 0


@kernel
def _objective(H, q, x):
    """1/2 x^T H x + q^T x."""
    f = 0.0
    for i in range(x.shape[0]):
        s = 0.5 * H[i, i] * x[i]
        for j in range(i):
            s += H[i, j] * x[j]
        f += x[i] * (s + q[i])
    return f


@kernel
def box_qp(H, q, lb, ub, x, free, W, g, dx, xn):
    """Solve the module's QP: H (n, n) symmetric positive definite, q, lb, ub (n,) (+-inf:
    no bound); x (n,): the warm start in (projected onto the box), the solution out.
    Fills free (n,) int64 with the free rows' indices (the first nf, increasing) and W
    (n, n) with H_ff's Cholesky factor in its leading nf x nf lower triangle (at the
    solution); g, dx, xn (n,) scratch. Returns nf, or -1 where H_ff is not positive
    definite (the caller raises its regularisation)."""
    n = x.shape[0]
    for i in range(n):
        x[i] = min(max(x[i], lb[i]), ub[i])
    nf = -1
    exact = False
    for _ in range(MAXITER):
        scale = 0.0
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += H[i, j] * x[j]
            g[i] = q[i] + s
            scale = max(scale, abs(q[i]), abs(s))
        tol = RTOL * scale
        last = nf
        same = nf >= 0
        nf = 0
        gmax = 0.0
        for i in range(n):
            if not ((x[i] <= lb[i] and g[i] > 0.0) or (x[i] >= ub[i] and g[i] < 0.0)):
                if nf >= last or free[nf] != i:
                    same = False
                free[nf] = i
                nf += 1
                gmax = max(gmax, abs(g[i]))
        same = same and nf == last
        if not same:                    # the free set moved: factor its block again
            for a in range(nf):         # (unbounded at the solution: one factor in all)
                for b in range(a + 1):
                    W[a, b] = H[free[a], free[b]]
            if not factor(W, nf):
                return -1
        # a full Newton step that no bound clipped, and the same free set after it: x
        # minimises the QP on that face, the clamped rows still push outwards (KKT)
        if gmax <= tol or (same and exact):
            break
        for a in range(nf):
            xn[a] = -g[free[a]]
        cholesky_solve(W, nf, xn)
        for i in range(n):
            dx[i] = 0.0
        for a in range(nf):
            dx[free[a]] = xn[a]
        f0 = _objective(H, q, x)
        step = 1.0
        moved = False
        for _s in range(STEPS):
            dec = 0.0
            exact = step == 1.0
            for i in range(n):
                y = x[i] + step * dx[i]
                xn[i] = min(max(y, lb[i]), ub[i])
                if xn[i] != y:
                    exact = False
                dec += g[i] * (x[i] - xn[i])
            if f0 - _objective(H, q, xn) >= ARMIJO * dec and dec > 0.0:
                for i in range(n):
                    x[i] = xn[i]
                moved = True
                break
            step *= 0.5
        if not moved:       # no descent left at rounding level: x is the solution
            break
    return nf
