"""Contact dynamics: the accelerations and contact forces of a tree whose contact frames
cannot move (Pinocchio's constraintDynamics / forwardDynamics(J, gamma), Carpentier &
Mansard 2018 for the derivatives), solved through the structure:

    [ M   J^T ] [  qdd    ]   [ tau - b(q, v) ]
    [ J    0  ] [ -lambda ] = [ -gamma        ]

    qdd_free = ABA(q, v, tau, fext)             (aba.py)
    M^-1     from ABA's own factorisation        (minverse.minverse_factored)
    Y = M^-1 J^T,  W = J Y + damping I           (the operational-space inverse, nc x nc)
    W lambda = -(gamma + J qdd_free)             (Cholesky; a pivot at rounding level:
                                                  dependent contact rows)
    qdd = qdd_free + Y lambda
gamma + J qdd_free is read off ABA's own pass (the contact frames' classical or spatial
acceleration at qdd_free), so the bodies are placed once: the derivatives reuse ABA's
placements and velocities too.

Contacts (contacts/__init__.py packs them): ``cint`` (ncontacts, CI_WIDTH) int64 rows
[frame, dimension 3 | 6, reference LOCAL | LOCAL_WORLD_ALIGNED, first row, parent joint];
``cflt`` (ncontacts, CF_WIDTH) float64 rows [Kp (6), Kd (6), the reference placement
oMc2 = (R2 (9), p2 (3))]. Everything is solved in LOCAL (the contact frame oMc1 = (R, p)):
a 3D contact's rows are the linear rows of the frame's LOCAL Jacobian and gamma its
classical acceleration at qdd = 0 (a_lin + w x v_lin); a 6D contact's, all six rows and
the spatial acceleration at qdd = 0. Baumgarte (Pinocchio's corrector, in LOCAL):
    e = -Kp * perr - Kd * verr,   J qdd + gamma = e
    3D: perr = R^T (p - p2), verr = v_lin;  6D: perr = log6(oMc2^-1 oMc1), verr = v.
LOCAL_WORLD_ALIGNED rows are the LOCAL ones rotated by R (diag(R, R) for 6D), error
included, so qdd is the same and lambda_lwa = R lambda_local: the kernels rotate the
forces at the end (and their derivatives: d(R f)/dq_m = w_m x (R f) + R df/dq_m, w_m the
world angular column of dof m).

Derivatives (x = q or v), the solution held, LOCAL:
    r1 = RNEA(q, v, qdd, fext + lambda on the contact joints) - tau,
    r2 = a_c - e + damping lambda    (the regularised row: J qdd + gamma - e = -damping lambda)
    A_x = -M^-1 dr1/dx               (IDSVA at qdd with the contact forces, times M^-1)
    dlambda/dx = -W^-1 (J A_x + da_c/dx - de/dx),   dqdd/dx = A_x + Y dlambda/dx
    dlambda/dtau = -W^-1 Y^T,                         dqdd/dtau = M^-1 + Y dlambda/dtau
(W = J Y + damping I: the damping enters through W alone, in LOCAL as in any reference,
R (W + damping I) R^T = R W R^T + damping I) with da_c/dx the frame's LOCAL (classical
for 3D) acceleration derivatives at qdd (frame_motion.py, the true derivatives in LOCAL)
and
    3D: dperr/dq = J_lin + perr x J_ang,  6D: dperr/dq = Jlog6(oMc2^-1 oMc1) J
    dverr/dq = dv/dq (LOCAL), dverr/dv = J.
"""

import numpy as np

from ..model.layout import FM_P, FM_R, MI_IV, MI_NV, MI_PARENT
from .aba import aba
from .aba_derivatives import neg_minv_mul_tree
from .armature import armature_bias_jacobian
from .idsva import idsva_backward_pass, idsva_dynamics_pass
from .configuration import log_placement
from .fk import (acceleration_joint, init_universe_at_base, placement_pass_joint,
                 velocity_joint, world_point)
from .frame_motion import body_acceleration, classical, placed_acceleration_derivatives
from .frames import jacobian_column, joint_frame_pose
from .jit import helper, kernel
from .kinematics_derivatives import LOCAL, LOCAL_WORLD_ALIGNED
from .lie import right_jacobian_inverse_se3
from .minverse import minverse_factored
from .rows import add_rows, add_rows_x2
from .workspace import D_S, W_V

CI_FRAME = 0
CI_DIM = 1
CI_REF = 2
CI_ROW = 3
CI_JOINT = 4
CI_WIDTH = 5
CF_KP = 0
CF_KD = 6
CF_R = 12
CF_P = 21
CF_WIDTH = 24
SINGULAR_RTOL = 1e-11   # a W pivot below this times W's largest diagonal: dependent rows


# ---- kinematics of the contacts --------------------------------------------------------

@helper
def contact_pose(ws, fmf, cint, k):
    """oMc1 = (R, p) of contact k (its frame on its parent joint)."""
    return joint_frame_pose(ws, cint[k, CI_JOINT], fmf[cint[k, CI_FRAME]])


@helper
def rot_t(R, x, y, z):
    """R^T [x, y, z] (R row-major 9)."""
    return (R[0] * x + R[3] * y + R[6] * z, R[1] * x + R[4] * y + R[7] * z,
            R[2] * x + R[5] * y + R[8] * z)


@helper
def rot(R, x, y, z):
    """R [x, y, z]."""
    return (R[0] * x + R[1] * y + R[2] * z, R[3] * x + R[4] * y + R[5] * z,
            R[6] * x + R[7] * y + R[8] * z)


@helper
def quaternion(R):
    """The unit quaternion (x, y, z, w) of the rotation R (Shepperd's branch on the
    largest of the trace and the diagonal, chosen on real parts: analytic for complex R)."""
    t = R[0] + R[4] + R[8]
    tr, r0, r4, r8 = t.real, R[0].real, R[4].real, R[8].real
    if tr >= r0 and tr >= r4 and tr >= r8:
        s = 2.0 * np.sqrt(1.0 + t)
        return (R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s, 0.25 * s
    if r0 >= r4 and r0 >= r8:
        s = 2.0 * np.sqrt(1.0 + R[0] - R[4] - R[8])
        return 0.25 * s, (R[1] + R[3]) / s, (R[2] + R[6]) / s, (R[7] - R[5]) / s
    if r4 >= r8:
        s = 2.0 * np.sqrt(1.0 + R[4] - R[0] - R[8])
        return (R[1] + R[3]) / s, 0.25 * s, (R[5] + R[7]) / s, (R[2] - R[6]) / s
    s = 2.0 * np.sqrt(1.0 + R[8] - R[0] - R[4])
    return (R[2] + R[6]) / s, (R[5] + R[7]) / s, 0.25 * s, (R[3] - R[1]) / s


@helper
def relative_placement(cflt, k, R, p):
    """c2Mc1 = oMc2^-1 oMc1 as (Rr row-major 9, pr 3)."""
    R2 = cflt[k, CF_R:CF_R + 9]
    d = rot_t(R2, p[0] - cflt[k, CF_P], p[1] - cflt[k, CF_P + 1], p[2] - cflt[k, CF_P + 2])
    c0 = rot_t(R2, R[0], R[3], R[6])        # R2^T times R's columns
    c1 = rot_t(R2, R[1], R[4], R[7])
    c2 = rot_t(R2, R[2], R[5], R[8])
    return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2]), d


@helper
def log6(Rr, pr):
    """(nu, w, d): log of the placement (Rr, pr) as kernels/configuration.log_se3."""
    x, y, z, w = quaternion(Rr)
    return log_placement(x, y, z, w, pr[0], pr[1], pr[2])


@helper
def position_error(cflt, k, dim, R, p):
    """perr (6-tuple; 3D: linear part, angular zero) of contact k at oMc1 = (R, p)."""
    if dim == 3:
        e = rot_t(R, p[0] - cflt[k, CF_P], p[1] - cflt[k, CF_P + 1], p[2] - cflt[k, CF_P + 2])
        z = 0.0 * e[0]
        return (e[0], e[1], e[2], z, z, z)
    Rr, pr = relative_placement(cflt, k, R, p)
    nx, ny, nz, wx, wy, wz, _ = log6(Rr, pr)
    return (nx, ny, nz, wx, wy, wz)


@helper
def has_gains(cflt, k):
    g = 0.0
    for r in range(12):
        g += abs(cflt[k, CF_KP + r])
    return g > 0.0


@kernel
def contact_rows(mi, mf, fmf, cint, cflt, ws, J, rhs):
    """J (nc, nv): the contacts' LOCAL rows; rhs (nc,) = a_c - e, a_c the contacts'
    (classical for 3D) acceleration at the accelerations in ws (ABA's at qdd_free: a_c
    = gamma + J qdd_free), from the placements, S, v and a in ws."""
    for r in range(J.shape[0]):
        for m in range(J.shape[1]):
            J[r, m] = 0.0
    for k in range(cint.shape[0]):
        dim = cint[k, CI_DIM]
        r0 = cint[k, CI_ROW]
        j = cint[k, CI_JOINT]
        R, p = contact_pose(ws, fmf, cint, k)
        vel = jacobian_column(ws[j, W_V:W_V + 6], LOCAL, R, p)
        acc = jacobian_column(body_acceleration(mf, ws, j), LOCAL, R, p)
        if dim == 3:
            acc = classical(acc, vel)
        for r in range(dim):
            rhs[r0 + r] = acc[r]
        if has_gains(cflt, k):      # against a world placement: p in the world
            perr = position_error(cflt, k, dim, R, world_point(ws, p))
            for r in range(dim):
                rhs[r0 + r] += cflt[k, CF_KP + r] * perr[r] + cflt[k, CF_KD + r] * vel[r]
    contact_jacobian(mi, fmf, cint, ws, J)


@kernel
def contact_jacobian(mi, fmf, cint, ws, J):
    """The contacts' LOCAL rows of J (nc, nv) on their supports (the other entries are
    left as they are), from the placements and world S in ws."""
    n = mi[0, 0]
    for k in range(cint.shape[0]):
        dim = cint[k, CI_DIM]
        r0 = cint[k, CI_ROW]
        R, p = contact_pose(ws, fmf, cint, k)
        a = cint[k, CI_JOINT]
        while a > 0:
            for d in range(mi[a, MI_IV], mi[a, MI_IV] + mi[a, MI_NV]):
                col = jacobian_column(ws[n + 1 + d, D_S:D_S + 6], LOCAL, R, p)
                for r in range(dim):
                    J[r0 + r, d] = col[r]
            a = mi[a, MI_PARENT]


# ---- the operational-space solve -------------------------------------------------------

@helper
def cholesky(W, n):
    """W[:n, :n] = L L^T in place (L in the lower triangle; symmetric, not Hermitian, for
    complex W: the analytic continuation). Returns the first row whose pivot is at the
    rounding level of W's largest diagonal entry (a row dependent on those before it),
    or -1."""
    return cholesky_to(W, n, SINGULAR_RTOL)


@helper
def cholesky_to(W, n, rtol):
    """cholesky with the pivot test d > rtol max_i |W_ii| (rtol 0: definiteness
    itself)."""
    big = 0.0
    for i in range(n):
        big = max(big, abs(W[i, i].real))
    for j in range(n):
        d = W[j, j]
        for k in range(j):
            d -= W[j, k] * W[j, k]
        if not d.real > rtol * big:
            return j
        d = np.sqrt(d)
        W[j, j] = d
        for i in range(j + 1, n):
            s = W[i, j]
            for k in range(j):
                s -= W[i, k] * W[j, k]
            W[i, j] = s / d
    return -1


@helper
def cholesky_solve(L, n, b):
    """b <- (L L^T)^-1 b for cholesky's factor L."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


@kernel
def operational_space(mi, cint, Minv, J, Yt, W, damping):
    """Yt = Y^T = J M^-1 (nc, nv; stored by rows, so that every product with it runs
    along contiguous rows) and the lower triangle of W = J Y + damping I (nc, nc); Yt
    over each contact's support dofs only (J is zero elsewhere)."""
    nv = Minv.shape[0]
    nc = J.shape[0]
    for k in range(cint.shape[0]):
        r0 = cint[k, CI_ROW]
        for r in range(r0, r0 + cint[k, CI_DIM]):
            y = Yt[r]
            for i in range(nv):
                y[i] = 0.0
            a = cint[k, CI_JOINT]
            while a > 0:
                for m in range(mi[a, MI_IV], mi[a, MI_IV] + mi[a, MI_NV]):
                    c = J[r, m]
                    row = Minv[m]         # M^-1 symmetric: its row m is its column m
                    for i in range(nv):
                        y[i] += c * row[i]
                a = mi[a, MI_PARENT]
    for r in range(nc):
        # W[r, :r + 1] = sum over m of J[r, m] Yt[:r + 1, m] for J's nonzeros, in m's
        # order: the same sums as the dot products J[r] . Yt[c] (the zeros add nothing),
        # as independent accumulators instead of one dependency chain each (~2x faster)
        x = J[r]
        for c in range(r + 1):
            W[r, c] = 0.0 * x[0]  # the dtype's zero (not 0 * W: np.empty may hold NaN)
        for m in range(nv):
            jm = x[m]
            if jm != 0.0:
                for c in range(r + 1):
                    W[r, c] += jm * Yt[c, m]
        W[r, r] += damping


@kernel
def contact_solve(mi, mf, fmf, q, v, tau, fext, cint, cflt, damping, ws, F, Minv, J, Yt, W,
                  qdd, lam):
    """qdd (nv,) and lam (nc,), the contact forces in LOCAL, with M^-1, J (LOCAL rows),
    Yt = J M^-1 and W's Cholesky factor left in Minv, J, Yt, W, and in ws ABA's
    placements, S and velocities. Returns -1, or the first dependent row of J (nothing
    solved then)."""
    nc = J.shape[0]
    aba(mi, mf, q, v, tau, fext, ws, qdd)                     # qdd <- qdd_free
    contact_rows(mi, mf, fmf, cint, cflt, ws, J, lam)        # lam <- gamma + J qdd - e
    minverse_factored(mi, ws, F, Minv)
    operational_space(mi, cint, Minv, J, Yt, W, damping)
    for r in range(nc):
        lam[r] = -lam[r]
    bad = cholesky(W, nc)
    if bad >= 0:
        return bad
    cholesky_solve(W, nc, lam)
    for r in range(nc):
        y = Yt[r]
        x = lam[r]
        for i in range(qdd.shape[0]):
            qdd[i] += x * y[i]
    return -1


@kernel
def reference_forces(fmf, cint, ws, lam, out):
    """out (nc,): lam (LOCAL) in each contact's reference (LOCAL_WORLD_ALIGNED: R lam),
    with the contact placements from the joint placements in ws."""
    for k in range(cint.shape[0]):
        r0 = cint[k, CI_ROW]
        dim = cint[k, CI_DIM]
        if cint[k, CI_REF] == LOCAL_WORLD_ALIGNED:
            R, _ = contact_pose(ws, fmf, cint, k)
            for h in range(0, dim, 3):
                f = rot(R, lam[r0 + h], lam[r0 + h + 1], lam[r0 + h + 2])
                out[r0 + h] = f[0]
                out[r0 + h + 1] = f[1]
                out[r0 + h + 2] = f[2]
        else:
            for r in range(r0, r0 + dim):
                out[r] = lam[r]


@kernel
def contact_dynamics(mi, mf, fmf, q, v, tau, fext, cint, cflt, damping, ws, F, Minv, J, Yt,
                     W, lam, qdd, forces):
    """qdd (nv,) and forces (nc,) in each contact's reference; -1 or the first dependent
    row (contact_solve). Scratch: F (njoints, nv, 6), Minv (nv, nv), J (nc, nv), Yt (nc,
    nv), W (nc, nc), lam (nc,)."""
    bad = contact_solve(mi, mf, fmf, q, v, tau, fext, cint, cflt, damping, ws, F, Minv, J,
                        Yt, W, qdd, lam)
    if bad < 0:
        reference_forces(fmf, cint, ws, lam, forces)
    return bad


# ---- derivatives -----------------------------------------------------------------------

@kernel
def forces_on_joints(fmf, cint, fext, lam, fc):
    """fc (njoints, 6) = fext (None or (0, 6): zero) plus each contact's LOCAL force lam
    on its parent joint, in the joint's frame: (f, n) -> (Rf f, Rf n + pf x Rf f) with
    iMf = (Rf, pf) the frame's placement."""
    for i in range(fc.shape[0]):
        for c in range(6):
            fc[i, c] = 0.0
    if fext is not None:
        if fext.shape[0] > 0:
            for i in range(fc.shape[0]):
                for c in range(6):
                    fc[i, c] = fext[i, c]
    for k in range(cint.shape[0]):
        j = cint[k, CI_JOINT]
        fm = fmf[cint[k, CI_FRAME]]
        Rf = fm[FM_R:FM_R + 9]
        r0 = cint[k, CI_ROW]
        f = rot(Rf, lam[r0], lam[r0 + 1], lam[r0 + 2])
        n = (0.0 * f[0], 0.0 * f[0], 0.0 * f[0])
        if cint[k, CI_DIM] == 6:
            n = rot(Rf, lam[r0 + 3], lam[r0 + 4], lam[r0 + 5])
        px, py, pz = fm[FM_P], fm[FM_P + 1], fm[FM_P + 2]
        fc[j, 0] += f[0]
        fc[j, 1] += f[1]
        fc[j, 2] += f[2]
        fc[j, 3] += n[0] + py * f[2] - pz * f[1]
        fc[j, 4] += n[1] + pz * f[0] - px * f[2]
        fc[j, 5] += n[2] + px * f[1] - py * f[0]


@helper
def log_jacobian(cflt, k, R, p):
    """Jlog6(oMc2^-1 oMc1) (6x6 as a row-major 36-tuple is too long: returned as the two
    3x3 blocks (A, Q) of [[A, -Q], [0, A]], kernels/lie.py's Jr^-1)."""
    Rr, pr = relative_placement(cflt, k, R, p)
    nx, ny, nz, wx, wy, wz, d = log6(Rr, pr)
    return right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, 0.5)


@helper
def _add_j_times(J, r0, dim, lo, hi, A_q, A_v, G):
    """G[0, r] += J[r, lo:hi] A_q[lo:hi], G[1, r] += J[r, lo:hi] A_v[lo:hi] for the rows
    r of one contact (r0 .. r0 + dim, 3 or 6: two at a time, add_rows_x2)."""
    for r in range(r0, r0 + dim - 1, 2):
        add_rows_x2(G[0, r], G[0, r + 1], A_q, 0, lo, hi, J[r], J[r + 1], 1.0)
        add_rows_x2(G[1, r], G[1, r + 1], A_v, 0, lo, hi, J[r], J[r + 1], 1.0)
    if dim % 2:
        r = r0 + dim - 1
        add_rows(G[0, r], A_q, 0, lo, hi, J[r], 1.0)
        add_rows(G[1, r], A_v, 0, lo, hi, J[r], 1.0)


@kernel
def constraint_derivatives(mi, cint, cflt, k, R, p, D6, A_q, A_v, J, G):
    """Rows of contact k in G[0] = J A_q + d(a_c - e)/dq and G[1] = J A_v + d(a_c - e)/dv,
    D6 = the frame's LOCAL (dv_dq, da_dq, da_dv, da_da = J6) at qdd; oMc1 = (R, p) in the
    world (the Baumgarte error's)."""
    nv = A_q.shape[0]
    dim = cint[k, CI_DIM]
    r0 = cint[k, CI_ROW]
    for r in range(dim):
        for m in range(nv):
            G[0, r0 + r, m] = D6[1, r, m]
            G[1, r0 + r, m] = D6[2, r, m]
    a = cint[k, CI_JOINT]       # J A_x over the support dofs (J is zero elsewhere),
    lo = mi[a, MI_IV]           # a chain's adjacent dof ranges merged
    hi = lo + mi[a, MI_NV]
    a = mi[a, MI_PARENT]
    while a > 0:
        if mi[a, MI_IV] + mi[a, MI_NV] != lo:
            _add_j_times(J, r0, dim, lo, hi, A_q, A_v, G)
            hi = mi[a, MI_IV] + mi[a, MI_NV]
        lo = mi[a, MI_IV]
        a = mi[a, MI_PARENT]
    _add_j_times(J, r0, dim, lo, hi, A_q, A_v, G)
    if not has_gains(cflt, k):
        return
    perr = position_error(cflt, k, dim, R, p)
    if dim == 6:
        A, Q = log_jacobian(cflt, k, R, p)
    for m in range(nv):
        j0, j1, j2 = D6[3, 0, m], D6[3, 1, m], D6[3, 2, m]
        w0, w1, w2 = D6[3, 3, m], D6[3, 4, m], D6[3, 5, m]
        if dim == 3:        # dperr = J_lin + perr x J_ang
            dp = (j0 + perr[1] * w2 - perr[2] * w1, j1 + perr[2] * w0 - perr[0] * w2,
                  j2 + perr[0] * w1 - perr[1] * w0, 0.0 * j0, 0.0 * j0, 0.0 * j0)
        else:               # dperr = Jlog6 J6
            dp = (A[0] * j0 + A[1] * j1 + A[2] * j2 - Q[0] * w0 - Q[1] * w1 - Q[2] * w2,
                  A[3] * j0 + A[4] * j1 + A[5] * j2 - Q[3] * w0 - Q[4] * w1 - Q[5] * w2,
                  A[6] * j0 + A[7] * j1 + A[8] * j2 - Q[6] * w0 - Q[7] * w1 - Q[8] * w2,
                  A[0] * w0 + A[1] * w1 + A[2] * w2, A[3] * w0 + A[4] * w1 + A[5] * w2,
                  A[6] * w0 + A[7] * w1 + A[8] * w2)
        for r in range(dim):
            kp = cflt[k, CF_KP + r]
            kd = cflt[k, CF_KD + r]
            G[0, r0 + r, m] += kp * dp[r] + kd * D6[0, r, m]
            G[1, r0 + r, m] += kd * D6[3, r, m]


@kernel
def forward_rows(L, nc, X):
    """X (nc, n) <- L^-1 X for cholesky's factor L, by row operations: the inner loops
    run along X's contiguous rows (all n right-hand sides at once, SIMD), where column
    by column solves would stride through X."""
    n = X.shape[1]
    for i in range(nc):
        xi = X[i]
        add_rows(xi, X, 0, 0, i, L[i], -1.0)
        d = 1.0 / L[i, i]
        for m in range(n):
            xi[m] *= d


@kernel
def backward_rows(L, nc, X):
    """X (nc, n) <- L^-T X, by row operations (forward_rows)."""
    n = X.shape[1]
    for i in range(nc - 1, -1, -1):
        xi = X[i]
        add_rows(xi, X, 0, i + 1, nc, L[:, i], -1.0)
        d = 1.0 / L[i, i]
        for m in range(n):
            xi[m] *= d


@kernel
def solve_rows(W, nc, B, sign, out):
    """out (nc, n) = sign W^-1 B (W: cholesky's factor); B may be any (nc, n) view (a
    transpose), out C-contiguous rows."""
    for r in range(nc):
        for m in range(B.shape[1]):
            out[r, m] = sign * B[r, m]
    forward_rows(W, nc, out)
    backward_rows(W, nc, out)


@kernel
def tau_blocks(W, nc, Yt, Minv, dqdd_dtau, df_dtau):
    """df_dtau = -W^-1 Y^T (nc, nv) and dqdd_dtau = M^-1 - Y W^-1 Y^T (nv, nv) through
    Z = L^-1 Y^T: dqdd_dtau = M^-1 - Z^T Z, symmetric, so one triangle is formed and
    mirrored; df_dtau = -L^-T Z."""
    nv = Minv.shape[0]
    for r in range(nc):
        for m in range(nv):
            df_dtau[r, m] = -Yt[r, m]
    forward_rows(W, nc, df_dtau)              # -Z
    for i in range(0, nv, 2):       # two rows a pass (row i + 1 from column i: mirrored)
        j = min(i + 1, nv - 1)
        row, nxt = dqdd_dtau[i], dqdd_dtau[j]
        for m in range(i, nv):
            row[m] = Minv[i, m]
            nxt[m] = Minv[j, m]
        if j > i:
            add_rows_x2(row[i:], nxt[i:], df_dtau, i, 0, nc, df_dtau[:, i],
                        df_dtau[:, j], -1.0)
        else:
            add_rows(row[i:], df_dtau, i, 0, nc, df_dtau[:, i], -1.0)
        for m in range(i):
            row[m] = dqdd_dtau[m, i]
        for m in range(j):
            nxt[m] = dqdd_dtau[m, j]
    backward_rows(W, nc, df_dtau)


@kernel
def add_y_times(Yt, X, out):
    """out (nv, n) += Y X for Yt = Y^T (nc, nv), X (nc, n)."""
    nc, n = Yt.shape[0], out.shape[0]
    for i in range(0, n - 1, 2):
        add_rows_x2(out[i], out[i + 1], X, 0, 0, nc, Yt[:, i], Yt[:, i + 1], 1.0)
    if n % 2:
        add_rows(out[n - 1], X, 0, 0, nc, Yt[:, n - 1], 1.0)


@kernel
def rotate_force_derivatives(mi, fmf, cint, ws, forces, df_dq, df_dv, df_dtau):
    """LOCAL_WORLD_ALIGNED contacts: d(R f) = R df, plus w_m x (R f) in the q columns of
    the dofs carrying the contact (w_m: dof m's world angular column)."""
    for k in range(cint.shape[0]):
        if cint[k, CI_REF] != LOCAL_WORLD_ALIGNED:
            continue
        R, _ = contact_pose(ws, fmf, cint, k)
        r0 = cint[k, CI_ROW]
        for h in range(r0, r0 + cint[k, CI_DIM], 3):
            for D in (df_dq, df_dv, df_dtau):
                if D.shape[0] == 0:          # a block the caller does not have (impulses)
                    continue
                for m in range(D.shape[1]):
                    x = rot(R, D[h, m], D[h + 1, m], D[h + 2, m])
                    D[h, m] = x[0]
                    D[h + 1, m] = x[1]
                    D[h + 2, m] = x[2]
            add_rotation_rate(mi, ws, cint[k, CI_JOINT], forces, h, df_dq, 1.0)


@helper
def add_rotation_rate(mi, ws, joint, forces, h, df_dq, sign):
    """df_dq[h:h + 3, m] += sign w_m x f (f = forces[h:h + 3]) for every dof m carrying
    ``joint`` (w_m: its world angular column): the rotation's rate in a
    LOCAL_WORLD_ALIGNED force's derivatives (rotate_force_derivatives and its inverse)."""
    n = mi[0, 0]
    f0, f1, f2 = forces[h], forces[h + 1], forces[h + 2]
    a = joint
    while a > 0:
        for m in range(mi[a, MI_IV], mi[a, MI_IV] + mi[a, MI_NV]):
            w0 = ws[n + 1 + m, D_S + 3]
            w1 = ws[n + 1 + m, D_S + 4]
            w2 = ws[n + 1 + m, D_S + 5]
            df_dq[h, m] += sign * (w1 * f2 - w2 * f1)
            df_dq[h + 1, m] += sign * (w2 * f0 - w0 * f2)
            df_dq[h + 2, m] += sign * (w0 * f1 - w1 * f0)
        a = mi[a, MI_PARENT]


@kernel
def contact_dynamics_derivatives(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt, damping,
                                 solved, ws, F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2,
                                 qdd, forces,
                                 dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau):
    """contact_dynamics (damping >= 0: the regularised solution) and its six derivative
    blocks (module docstring; with damping W holds J Y + damping I); -1 or the first
    dependent row. dqdd_* (nv, nv), df_* (nc, nv); scratch as contact_dynamics' and S3
    (3, nv, nv), D6 (4, 6, nv), G (2, nc, nv), fc (njoints, 6), qdd2 (nv,).
    ``solved``: Minv, J, Yt, W, lam, qdd and forces hold contact_dynamics' solve at
    (q, v, tau) already (a rollout's, kept: Crocoddyl's calcDiff on its calc's data), read
    only; the bodies' motion alone is placed again (F unused)."""
    if solved:
        bad = -1
        motion_pass(mi, mf, q, v, ws)
        solution_derivatives(mi, mf, fparent, fmf, v, fext, cint, cflt, ws, Minv, J, Yt, W,
                             lam, S3, D6, G, fc, qdd, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq,
                             df_dv, df_dtau)
    else:
        bad = local_derivatives(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt, damping,
                                ws, F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd, forces,
                                dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau)
    if bad < 0:
        rotate_force_derivatives(mi, fmf, cint, ws, forces, df_dq, df_dv, df_dtau)
    return bad


@kernel
def motion_pass(mi, mf, q, v, ws):
    """Placements, S, v and S qd as ABA's first pass leaves them (the same helpers, in
    the same order): all of ws that solution_derivatives reads before it writes."""
    init_universe_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)


@kernel
def local_derivatives(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt, damping, ws, F,
                      Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd, forces, dqdd_dq,
                      dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau):
    """contact_dynamics_derivatives with the force blocks left in LOCAL (those of lam,
    which holds the LOCAL forces; ``forces`` in each reference), fc the forces on the
    joints, M^-1, J, Yt and W's factor as contact_solve leaves them (the contracted
    second derivatives build on all of it)."""
    bad = contact_dynamics(mi, mf, fmf, q, v, tau, fext, cint, cflt, damping, ws, F, Minv,
                           J, Yt, W, lam, qdd, forces)
    if bad >= 0:
        return bad
    solution_derivatives(mi, mf, fparent, fmf, v, fext, cint, cflt, ws, Minv, J, Yt, W, lam,
                         S3, D6, G, fc, qdd, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv,
                         df_dtau)
    return -1


@kernel
def solution_derivatives(mi, mf, fparent, fmf, v, fext, cint, cflt, ws, Minv, J, Yt, W, lam,
                         S3, D6, G, fc, qdd, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv,
                         df_dtau):
    """local_derivatives' blocks from a solve (M^-1, J, Yt, W's factor, lam, qdd) and the
    placements, S and v in ws; fc <- the forces on the joints."""
    nc = J.shape[0]
    forces_on_joints(fmf, cint, fext, lam, fc)
    # A_q, A_v = -M^-1 dr1/dx (Carpentier & Mansard eq. 24 at the contact forces, held
    # on their bodies): IDSVA at qdd on ABA's placements and velocities (the
    # accelerations redone at qdd), then the products with the solve's own M^-1
    for i in range(1, mi[0, 0] + 1):
        acceleration_joint(mi, i, qdd, ws)
    idsva_dynamics_pass(mi, mf, fc, ws)
    idsva_backward_pass(mi, ws, S3[0], S3[1], S3[2])
    armature_bias_jacobian(mi, mf, v, S3[1])
    neg_minv_mul_tree(mi, Minv, S3[0], S3[1], dqdd_dq, dqdd_dv, S3[2, 0], S3[2, 1])
    for k in range(cint.shape[0]):      # the bodies' motion at qdd is in ws already
        placed_acceleration_derivatives(mi, mf, fparent, fmf, cint[k, CI_FRAME], LOCAL,
                                        1 if cint[k, CI_DIM] == 3 else 0, ws, D6[0],
                                        D6[1], D6[2], D6[3])
        R, p = contact_pose(ws, fmf, cint, k)
        constraint_derivatives(mi, cint, cflt, k, R, world_point(ws, p), D6, dqdd_dq,
                               dqdd_dv, J, G)
    solve_rows(W, nc, G[0], -1.0, df_dq)
    solve_rows(W, nc, G[1], -1.0, df_dv)
    add_y_times(Yt, df_dq, dqdd_dq)
    add_y_times(Yt, df_dv, dqdd_dv)
    tau_blocks(W, nc, Yt, Minv, dqdd_dtau, df_dtau)


# ---- a solve kept for its derivatives (trajopt's rollout: Crocoddyl's calc data) ------

@helper
def kept_size(nv, nc):
    """float64 entries of one kept solve (kept_solve)."""
    return nv * nv + 2 * nc * nv + nc * nc + 2 * nc + nv


@helper
def kept_solve(nv, nc, rec):
    """M^-1 (nv, nv), J, Yt (nc, nv), W's factor (nc, nc), lam (nc,), qdd (nv,) and the
    forces (nc,) of one solve as views of ``rec`` (kept_size entries at least; views made
    here, in code without reference counts, never returned to an entry that counts)."""
    a = nv * nv
    b = a + nc * nv
    c = b + nc * nv
    d = c + nc * nc
    return (rec[:a].reshape((nv, nv)), rec[a:b].reshape((nc, nv)),
            rec[b:c].reshape((nc, nv)), rec[c:d].reshape((nc, nc)), rec[d:d + nc],
            rec[d + nc:d + nc + nv], rec[d + nc + nv:d + 2 * nc + nv])


@kernel
def kept_dynamics(mi, mf, fmf, q, v, tau, cint, cflt, ws, F, rec, qdd, forces):
    """contact_dynamics (no fext, no damping) with its solve kept in rec (kept_solve) and
    qdd, forces copied out; -1 or the first dependent row."""
    nc = forces.shape[0]
    Minv, J, Yt, W, lam, kqdd, kforces = kept_solve(mi[0, 2], nc, rec)
    bad = contact_dynamics(mi, mf, fmf, q, v, tau, None, cint, cflt, 0.0, ws, F, Minv, J, Yt,
                           W, lam, kqdd, kforces)
    for i in range(qdd.shape[0]):
        qdd[i] = kqdd[i]
    for r in range(nc):
        forces[r] = kforces[r]
    return bad


@kernel
def kept_derivatives(mi, mf, fparent, fmf, q, v, tau, cint, cflt, ws, F, rec, S3, D6, G, fc,
                     qdd2, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau):
    """contact_dynamics_derivatives at the solve kept_dynamics kept in rec at the same
    (q, v, tau) (solved: not solved again)."""
    Minv, J, Yt, W, lam, qdd, forces = kept_solve(mi[0, 2], df_dq.shape[0], rec)
    contact_dynamics_derivatives(mi, mf, fparent, fmf, q, v, tau, None, cint, cflt, 0.0,
                                 True, ws, F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd,
                                 forces, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau)
