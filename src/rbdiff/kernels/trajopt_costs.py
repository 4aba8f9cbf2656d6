"""Kernels of trajectory-optimisation cost residuals that no public function computes:
the frame placement error r = log6(M_ref^-1 M) and its Jacobian Jlog6 (Crocoddyl's
ResidualModelFramePlacement), from the SE(3) log and the inverse right Jacobian that the
6D contacts use (kernels/contact_dynamics.log6, kernels/lie.right_jacobian_inverse_se3).
Placements are (R (3, 3), p (3,)) per knot; r is [linear, angular] as Pinocchio's log6.
And the Gauss-Newton accumulation of every term's derivatives into the problem's arrays
(gauss_newton_add), and the chain rule of the Euler step's configuration rows through
integrate's Jacobians (euler_configuration_rows); the frame translation's residual
curvature (translation_curvature_add), what DDP's exact cost Hessian adds."""

from .contact_dynamics import log6
from .jit import kernel
from .lie import right_jacobian_inverse_se3


@kernel
def placement_log(M, ref, r, Jl):
    """r (K, 6) = log6(M_ref_k^-1 M_k) and Jl (K, 6, 6) = Jlog6 of that placement
    ([[A, -Q], [0, A]] with (A, Q) = right_jacobian_inverse_se3) for the homogeneous
    placements M (K, 4, 4) and M_ref_k = ref[k] (ref (K, 4, 4), or (1, 4, 4): one
    reference for every k)."""
    shared = ref.shape[0] != M.shape[0]
    for k in range(M.shape[0]):
        kr = 0 if shared else k
        a, b = ref[kr], M[k]
        d0, d1, d2 = b[0, 3] - a[0, 3], b[1, 3] - a[1, 3], b[2, 3] - a[2, 3]
        # M_ref^-1 M = (Rref^T R, Rref^T (p - pref)), row-major
        Rr = (a[0, 0] * b[0, 0] + a[1, 0] * b[1, 0] + a[2, 0] * b[2, 0],
              a[0, 0] * b[0, 1] + a[1, 0] * b[1, 1] + a[2, 0] * b[2, 1],
              a[0, 0] * b[0, 2] + a[1, 0] * b[1, 2] + a[2, 0] * b[2, 2],
              a[0, 1] * b[0, 0] + a[1, 1] * b[1, 0] + a[2, 1] * b[2, 0],
              a[0, 1] * b[0, 1] + a[1, 1] * b[1, 1] + a[2, 1] * b[2, 1],
              a[0, 1] * b[0, 2] + a[1, 1] * b[1, 2] + a[2, 1] * b[2, 2],
              a[0, 2] * b[0, 0] + a[1, 2] * b[1, 0] + a[2, 2] * b[2, 0],
              a[0, 2] * b[0, 1] + a[1, 2] * b[1, 1] + a[2, 2] * b[2, 1],
              a[0, 2] * b[0, 2] + a[1, 2] * b[1, 2] + a[2, 2] * b[2, 2])
        pr = (a[0, 0] * d0 + a[1, 0] * d1 + a[2, 0] * d2,
              a[0, 1] * d0 + a[1, 1] * d1 + a[2, 1] * d2,
              a[0, 2] * d0 + a[1, 2] * d1 + a[2, 2] * d2)
        nx, ny, nz, wx, wy, wz, d = log6(Rr, pr)
        r[k, 0], r[k, 1], r[k, 2] = nx, ny, nz
        r[k, 3], r[k, 4], r[k, 5] = wx, wy, wz
        A, Q = right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, 0.5)
        for i in range(3):
            for j in range(3):
                Jl[k, i, j] = A[3 * i + j]
                Jl[k, i, j + 3] = -Q[3 * i + j]
                Jl[k, i + 3, j] = 0.0 * A[0]
                Jl[k, i + 3, j + 3] = A[3 * i + j]


@kernel
def gauss_newton_add(knots, scale, Ar, Arr, Rx, cx, Ru, lx, lu, lxx, luu, lxu, act, nz):
    """Add a term's Gauss-Newton derivatives at its knots to the problem's arrays: for
    item k at knot t = knots[k], with R = [Rx[k] | Ru[k]] (Rx's columns are x's columns
    cx..cx+mx, Ru's the controls'; Ru (K, nr, 0): none),

        l_x[t] += scale R_x^T a'(r_k),   l_u[t] += scale R_u^T a'(r_k),
        [l_xx l_xu; . l_uu][t] += scale R^T diag(a''(r_k)) R,

    rows with a'' = 0 (a barrier's inactive rows, zero weights) skipped. A sparse row (at
    most a third of its entries nonzero: a state residual's identity rows) adds its outer
    product over its nonzero columns (nz); the dense rows (a wrench cone's, the centre of
    mass's) add theirs by rows of the output: for each output row i, each dense row r
    with a nonzero R[r, i] adds a multiple of R's row r along it (unit stride,
    vectorised; the indexed loop ran 2x slower on dense rows, the dense one 2x slower on
    a state residual's). Arr (K, nr), or (1, nr): the same at every knot. act (nr,),
    nz (mx + mu,) int64 scratch."""
    nr, mx, mu = Ar.shape[1], Rx.shape[2], Ru.shape[2]
    shared = Arr.shape[0] != Ar.shape[0]        # one a'' row for every knot
    for k in range(knots.shape[0]):
        t = knots[k]
        kr = 0 if shared else k
        na = 0
        for r in range(nr):
            g = scale * Ar[k, r]
            if g != 0.0:
                for j in range(mx):
                    lx[t, cx + j] += g * Rx[k, r, j]
                for j in range(mu):
                    lu[t, j] += g * Ru[k, r, j]
            h = scale * Arr[kr, r]
            if h == 0.0:
                continue
            n = 0
            for j in range(mx):
                if Rx[k, r, j] != 0.0:
                    nz[n] = j
                    n += 1
            nxr = n
            for j in range(mu):
                if Ru[k, r, j] != 0.0:
                    nz[n] = j
                    n += 1
            if 3 * n > mx + mu:
                act[na] = r             # dense: the pass below
                na += 1
                continue
            for a in range(nxr):
                i = nz[a]
                hi = h * Rx[k, r, i]
                for b in range(nxr):
                    j = nz[b]
                    lxx[t, cx + i, cx + j] += hi * Rx[k, r, j]
                for b in range(nxr, n):
                    j = nz[b]
                    lxu[t, cx + i, j] += hi * Ru[k, r, j]
            for a in range(nxr, n):
                i = nz[a]
                hi = h * Ru[k, r, i]
                for b in range(nxr, n):
                    j = nz[b]
                    luu[t, i, j] += hi * Ru[k, r, j]
        # on 1-D rows: unit-stride loops LLVM vectorises (the 3-D indexed ones it did
        # not: a cone's rows 2x slower)
        for i in range(mx):
            xrow = lxx[t, cx + i, cx:cx + mx]
            urow = lxu[t, cx + i]
            for a in range(na):
                r = act[a]
                hi = scale * Arr[kr, r] * Rx[k, r, i]
                if hi == 0.0:
                    continue
                rx = Rx[k, r]
                for j in range(mx):
                    xrow[j] += hi * rx[j]
                ru = Ru[k, r]
                for j in range(mu):
                    urow[j] += hi * ru[j]
        for i in range(mu):
            row = luu[t, i]
            for a in range(na):
                r = act[a]
                hi = scale * Arr[kr, r] * Ru[k, r, i]
                if hi == 0.0:
                    continue
                ru = Ru[k, r]
                for j in range(mu):
                    row[j] += hi * ru[j]


@kernel
def diagonal_add(knots, scale, Ar, Arr, c0, g, H):
    """The same for a residual whose Jacobian is the identity on columns c0..c0+n of g's
    (l_x's or l_u's): g[t, c0 + i] += scale a'_i, H[t, c0 + i, c0 + i] += scale a''_i
    at t = knots[k]; Arr (K, n) or (1, n) (the same at every knot)."""
    n = Ar.shape[1]
    shared = Arr.shape[0] != Ar.shape[0]
    for k in range(knots.shape[0]):
        t = knots[k]
        kr = 0 if shared else k
        for i in range(n):
            g[t, c0 + i] += scale * Ar[k, i]
            H[t, c0 + i, c0 + i] += scale * Arr[kr, i]


@kernel
def euler_velocity_rows(knots, dt, off, a_q, a_v, a_t, Pq, Pv, Pu):
    """The velocity rows of the Euler step's factors (problem.py) at t = knots[k] from
    the knot's acceleration derivatives a_q[k], a_v[k], a_t[k] (nv, nv) in one pass:
    Pq[t] = dt a_q, Pv[t] = I + dt a_v, Pu[t] = dt a_t[:, off:] (the actuated columns)."""
    nv, nu = a_q.shape[1], Pu.shape[2]
    for k in range(knots.shape[0]):
        t = knots[k]
        for i in range(nv):
            pq, pv, pu = Pq[t, i], Pv[t, i], Pu[t, i]
            aq, av, at = a_q[k, i], a_v[k, i], a_t[k, i]
            for j in range(nv):
                pq[j] = dt * aq[j]
                pv[j] = dt * av[j]
            pv[i] += 1.0
            for j in range(nu):
                pu[j] = dt * at[off + j]


@kernel
def euler_configuration_rows(knots, Jq, Jv, dt, Fx, Fu, nz):
    """The configuration rows of the Euler step's tangent Jacobians from its velocity rows
    (problem.py): for item k at knot t = knots[k], with Jq, Jv (K, nv, nv) integrate's
    Jacobians at (q_t, dt v'_t),

        F_x[t, :nv] = dt Jv F_x[t, nv:] + [Jq, 0],   F_u[t, :nv] = dt Jv F_u[t, nv:],

    over each row's nonzeros of Jv (a free flyer's 6 x 6 block and the identity: 2-3
    a row instead of nv). nz (nv,) int64 scratch."""
    nv, nx, nu = Jq.shape[1], Fx.shape[2], Fu.shape[2]
    for k in range(knots.shape[0]):
        t = knots[k]
        for i in range(nv):
            n = 0
            for j in range(nv):
                if Jv[k, i, j] != 0.0:
                    nz[n] = j
                    n += 1
            for c in range(nx):
                Fx[t, i, c] = 0.0 * dt
            for c in range(nu):
                Fu[t, i, c] = 0.0 * dt
            for a in range(n):
                j = nz[a]
                w = dt * Jv[k, i, j]
                for c in range(nx):
                    Fx[t, i, c] += w * Fx[t, nv + j, c]
                for c in range(nu):
                    Fu[t, i, c] += w * Fu[t, nv + j, c]
            for c in range(nv):
                Fx[t, i, c] += Jq[k, i, c]


@kernel
def translation_curvature_add(knots, scale, r, J, rel, H):
    """H[t] += scale sum_i r_i d2p_i/dq2 for item k at knot t = knots[k] (the residual
    curvature of a point's translation: costs.FrameTranslation, residuals.CoMPosition),
    tangent-space q on any tree: with J[k] (6, nv) the point's LOCAL_WORLD_ALIGNED
    Jacobian, linear rows Jp and angular rows the world-frame columns' rotation parts
    omega (zero for prismatic and free-flyer linear columns), and rel (nv, nv) the dofs'
    relation (costs.joint_relation: 1 where j's joint is a strict ancestor of c's, 2
    where they share a joint, 0 otherwise), for j <= c (dof order is tree order):

        d2p/dq_j dq_c = omega_j x Jp_c                                   (rel 1)
        d2p/dq_j dq_c = 1/2 (omega_j x Jp_c + omega_c x Jp_j)            (rel 2)

    (an ancestor's motion moves the column rigidly; within a joint, q (+) dq = q exp(dq)
    on a Lie joint, whose second-order term is the symmetrised product of its columns),
    so the entry is omega_j . (Jp_c x r), symmetrised within a joint; mirrored below
    the diagonal. One-dof joints: the same as j = c of rel 2."""
    nv = J.shape[2]
    for k in range(knots.shape[0]):
        t = knots[k]
        r0, r1, r2 = scale * r[k, 0], scale * r[k, 1], scale * r[k, 2]
        for c in range(nv):
            b0 = J[k, 1, c] * r2 - J[k, 2, c] * r1       # Jp_c x r
            b1 = J[k, 2, c] * r0 - J[k, 0, c] * r2
            b2 = J[k, 0, c] * r1 - J[k, 1, c] * r0
            for j in range(c + 1):
                if rel[j, c] == 0:
                    continue
                h = J[k, 3, j] * b0 + J[k, 4, j] * b1 + J[k, 5, j] * b2
                if rel[j, c] == 2 and j != c:
                    # omega_c . (Jp_j x r): the symmetrising half
                    e0 = J[k, 1, j] * r2 - J[k, 2, j] * r1
                    e1 = J[k, 2, j] * r0 - J[k, 0, j] * r2
                    e2 = J[k, 0, j] * r1 - J[k, 1, j] * r0
                    h = 0.5 * (h + J[k, 3, c] * e0 + J[k, 4, c] * e1 + J[k, 5, c] * e2)
                H[t, j, c] += h
                if j != c:
                    H[t, c, j] += h
