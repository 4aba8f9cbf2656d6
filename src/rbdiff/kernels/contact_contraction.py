"""Second derivatives of contact dynamics contracted with a costate, without tensors
(issue 27 part 2; Nganga, Li & Wensing 2023 treat the hybrid case).

P(q, v, tau) = lam_a . qdd + lam_f . f, with y = (qdd, f_L) the KKT solution (f_L the
LOCAL forces; f = f_L, or R f_L per 3-block for LOCAL_WORLD_ALIGNED) and the residuals
(contact_dynamics.py, solution held)
    r1 = ID(q, v, qdd, fext = f_L on the contact bodies) - tau
    r2 = a_c(q, v, qdd) + Kp perr(q) + Kd verr(q, v) + damping f_L      (LOCAL rows)
both linear in y. With the adjoint (mu, nu), dL/dy = 0 for
    L = lam_a . qdd + lam_f . f(q, f_L) - mu . r1 - nu . r2,
i.e.  M mu + J^T nu = lam_a,  J mu - damping nu = -l  (l = R^T lam_f: lam_f in LOCAL),
    nu = W^-1 (Y^T lam_a + l),  mu = M^-1 lam_a - Y nu     (W = J M^-1 J^T + damping I)
and P(q) = L(q, y(q)) along the solution, so the Hessian is
    H = L_xx + L_xy y_x + y_x^T L_yx          (L_yy = 0; y_x the first-order derivatives)
L_yx has q columns only (M, J, R depend on q alone): B = [-(d(M mu)/dq + d(J^T nu)/dq);
d(J mu)/dq + d(R^T lam_f)/dq], so
    d2_dq2 = L_qq + B^T y_q + y_q^T B,  d2_dqdv = L_qv + B^T y_v,  d2_dv2 = L_vv,
    d2_dtau_dq = y_tau^T B  (y is affine in tau with a q-only slope: no tau-tau, tau-v).
The mu . r1 part of L_xx and d(M mu)/dq are rnea_second_order_contraction's at
(q, v, qdd, mu, fext = the contact forces) (contraction.py).

The rest is the kinematics of each contact frame, written with its LOCAL Jacobian
columns J_m (m on the frame's support, a chain) and one rule: in the tangent space
    dJ_m/dq_k = J_m x J_k   when m's joint is a strict ancestor of k's (m < k), else 0
(world columns move as dS_m/dq_k = S_k x S_m for k an ancestor or self; J = X^-1 S).
Every quantity is then a polynomial in the columns, and with the prefix sums along the
chain (strictly above a dof's joint: V< = sum J v, A< = sum J qdd, M< = sum J mu,
T< = sum v_m V<_m x J_m; V<= including the joint itself; Vt = the frame's LOCAL velocity)
each Hessian entry is O(1):
    dv/dq_k = V<_k x J_k,
    d2v/dq_l dq_k = (V<_min x J_l) x J_k + [k<l] V<_k x (J_k x J_l)    (min: k or l's prefix)
and the LOCAL spatial acceleration a = sum J qdd + T, T = sum_k v_k V<_k x J_k, has
    dT/dq_k = T<_k x J_k + (V<_k x J_k) x (Vt - V<_k)
with its q-derivative by the same rule (contact_pairs); a point contact's classical
acceleration adds nu . (w x v_lin) (a bilinear form C in the LOCAL velocity), its
Baumgarte terms Kp perr (dperr/dq_k = J_k,lin + perr x w_k) and Kd v; a surface
contact's Kp log6(oMc2^-1 oMc1) has dperr/dq_k = Jlog6 J_k and the second derivative of
log6_hessian (Jlog6's own derivative along Jlog6 J_l, through lie.py's coupling block and
its derivative). O(d^2) per contact of support depth d.

Cost. Contracted with nu, every term of a pair (k, l) is a sum of m . (x X y) with one
of x, y a column J or dv = V< x J of k or l; f . (m x y) = -(m x* f) . y moves each cross
product onto one dof, so contact_dof_vectors builds per dof a few force-like vectors
(O(d) cross products per contact) and each pair is a few dot products with J_l and
dv_l. Pairs across two joints are visited once (a above b) and write both entries (the
mixed derivatives of different joints commute); within one joint (a free flyer, a
spherical joint) the tangent-space entries differ by order and both are written from
their own vectors.
"""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .contact_dynamics import (CF_KD, CF_KP, CI_DIM, CI_JOINT, CI_REF, CI_ROW, log6,
                               relative_placement, contact_dynamics, forces_on_joints,
                               add_rotation_rate,
                               cholesky_solve, contact_pose, local_derivatives,
                               position_error, rot_t)
from .contraction import (contraction_backward_pass, costate_pass, rnea_contraction,
                          zero4)
from .fk import acceleration_joint, init_universe_at_base, placement_pass_joint, world_point
from .frames import jacobian_column
from .idsva import joint_dynamics
from .impulse_dynamics import impulse_local_derivatives
from .centroidal import cross3
from .configuration import exp_coefficients
from .jit import helper, kernel
from .lie import (coupling, derivative_coefficients, right_jacobian_inverse_se3,
                  third_coefficients)
from .kinematics_derivatives import LOCAL, LOCAL_WORLD_ALIGNED
from .rnea_chain_rule import fcr, ld6, mcr, st6, tadd, tdot, tsub
from .workspace import D_S, W_A, W_V, W_VJ

# chain scratch C (6, nv, 6): per position on the support, root first
C_J = 0         # LOCAL column
C_VLT = 1       # V<  (strictly above the dof's joint)
C_VLE = 2       # V<= (the joint included)
C_ALT = 3       # A<  (qdd)
C_MLT = 4       # M<  (mu)
C_TLT = 5       # T<
C_DV = 6        # per dof (contact_dof_vectors): dv = V< x J, g = J x* nu, s(J),
C_G = 7         # U, Z, X (pairs across joints), uS, xS (pairs in one joint)
C_SJ = 8
C_U = 9
C_Z = 10
C_X = 11
C_US = 12
C_XS = 13
C_H = 14        # G (6x6) of a surface contact's log6 Hessian: G[j, m] at C[C_H + j, 0, m]
C_SIZE = 20


@helper
def support_chain(mi, j, idx):
    """idx[0, :d] the dofs on joint j's support, root first, idx[1, :d] their joints;
    returns d."""
    d = 0
    a = j
    while a > 0:
        d += mi[a, MI_NV]
        a = mi[a, MI_PARENT]
    pos = d
    a = j
    while a > 0:
        pos -= mi[a, MI_NV]
        for t in range(mi[a, MI_NV]):
            idx[0, pos + t] = mi[a, MI_IV] + t
            idx[1, pos + t] = a
        a = mi[a, MI_PARENT]
    return d


@helper
def prefix(idx, d, C, src, w, lt, le):
    """C[lt] = sum of C[src] w over the dofs strictly above each dof's joint, C[le] the
    same with the joint included (le < 0: not wanted); returns the total (6-tuple)."""
    z = 0.0 * w[0]
    above = (z, z, z, z, z, z)
    cur = above
    cj = -1
    for p in range(d):
        if idx[1, p] != cj:
            above = tadd(above, cur)
            cur = (z, z, z, z, z, z)
            cj = idx[1, p]
        st6(above, C[lt, p])
        x = w[idx[0, p]]
        c = C[src, p]
        cur = (cur[0] + x * c[0], cur[1] + x * c[1], cur[2] + x * c[2], cur[3] + x * c[3],
               cur[4] + x * c[4], cur[5] + x * c[5])
    total = tadd(above, cur)
    if le >= 0:
        p = d - 1
        while p >= 0:           # V<= : the joint's V< plus its own dofs' sum
            q = p
            while q >= 0 and idx[1, q] == idx[1, p]:
                q -= 1
            s = ld6(C[lt, p])
            for r in range(q + 1, p + 1):
                x = w[idx[0, r]]
                c = C[src, r]
                s = (s[0] + x * c[0], s[1] + x * c[1], s[2] + x * c[2], s[3] + x * c[3],
                     s[4] + x * c[4], s[5] + x * c[5])
            for r in range(q + 1, p + 1):
                st6(s, C[le, r])
            p = q
    return total


@helper
def t_prefix(idx, d, C, v):
    """C[C_TLT] = T< (the velocity-product acceleration of the dofs above each joint)."""
    z = 0.0 * v[0]
    above = (z, z, z, z, z, z)
    cur = above
    cj = -1
    for p in range(d):
        if idx[1, p] != cj:
            above = tadd(above, cur)
            cur = (z, z, z, z, z, z)
            cj = idx[1, p]
        st6(above, C[C_TLT, p])
        x = v[idx[0, p]]
        c = mcr(ld6(C[C_VLT, p]), ld6(C[C_J, p]))
        cur = (cur[0] + x * c[0], cur[1] + x * c[1], cur[2] + x * c[2], cur[3] + x * c[3],
               cur[4] + x * c[4], cur[5] + x * c[5])


@helper
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@helper
def m3v(A, x):
    """A x for a row-major 3x3 tuple."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2], A[3] * x[0] + A[4] * x[1] + A[5] * x[2],
            A[6] * x[0] + A[7] * x[1] + A[8] * x[2])


@helper
def m3tv(A, x):
    """A^T x for a row-major 3x3 tuple."""
    return (A[0] * x[0] + A[3] * x[1] + A[6] * x[2], A[1] * x[0] + A[4] * x[1] + A[7] * x[2],
            A[2] * x[0] + A[5] * x[1] + A[8] * x[2])


@helper
def coupling_rate_t(n, w, x, r, b, c, b2, c2, b3, c3):
    """(D_w Q(n, w)[x])^T r, the derivative of SE(3)'s coupling block (lie.coupling)
    along w, applied transposed: with N, K, X the cross matrices of n, w, x, t = w.x,
    s = w.n, D_w Q[x] = 2 t b2 N + 2 t c2 (K N + N K) + c (X N + N X)
    + 2 (x.n) (b2 K + c2 K^2) + 4 s t (b3 K + c3 K^2) + 2 s b2 X + 2 s c2 (X K + K X)
    (and M^T r = r x m for M = [m]x)."""
    t = w[0] * x[0] + w[1] * x[1] + w[2] * x[2]
    s = w[0] * n[0] + w[1] * n[1] + w[2] * n[2]
    xn = x[0] * n[0] + x[1] * n[1] + x[2] * n[2]
    rn = cross3(r, n)
    rw = cross3(r, w)
    rx = cross3(r, x)
    kk = cross3(w, cross3(w, r))                # (K^2)^T r
    kn = cross3(rw, n)
    nk = cross3(rn, w)
    xn2 = cross3(rx, n)
    nx2 = cross3(rn, x)
    xk = cross3(rx, w)
    kx = cross3(rw, x)
    fk = 2.0 * xn * b2 + 4.0 * s * t * b3       # K's weight
    fkk = 2.0 * xn * c2 + 4.0 * s * t * c3      # K^2's
    return (2.0 * t * b2 * rn[0] + 2.0 * t * c2 * (kn[0] + nk[0]) + c * (xn2[0] + nx2[0])
            + fk * rw[0] + fkk * kk[0] + 2.0 * s * b2 * rx[0] + 2.0 * s * c2 * (xk[0] + kx[0]),
            2.0 * t * b2 * rn[1] + 2.0 * t * c2 * (kn[1] + nk[1]) + c * (xn2[1] + nx2[1])
            + fk * rw[1] + fkk * kk[1] + 2.0 * s * b2 * rx[1] + 2.0 * s * c2 * (xk[1] + kx[1]),
            2.0 * t * b2 * rn[2] + 2.0 * t * c2 * (kn[2] + nk[2]) + c * (xn2[2] + nx2[2])
            + fk * rw[2] + fkk * kk[2] + 2.0 * s * b2 * rx[2] + 2.0 * s * c2 * (xk[2] + kx[2]))


@helper
def g_column(C, m, de):
    """(G^T de)[m] for log6_hessian's G."""
    return (C[C_H, 0, m] * de[0] + C[C_H + 1, 0, m] * de[1] + C[C_H + 2, 0, m] * de[2]
            + C[C_H + 3, 0, m] * de[3] + C[C_H + 4, 0, m] * de[4] + C[C_H + 5, 0, m] * de[5])


@kernel
def log6_hessian(cflt, k, R, p, pk, C):
    """A surface contact's Kp term pk . log6(oMc2^-1 oMc1(q)), pk = Kp nu: its gradient
    along the LOCAL columns is rho . Jr^-1 J (Jr^-1 = Jlog6 = [[A, -AQA], [0, A]], rho =
    Jr^-T pk), and its second derivative d/dq_l of the k entry is
        delta_k . G delta_l + [k above l] rho . (J_k x J_l),   delta = Jr^-1 J,
    from d Jr^-1 = -Jr^-1 (d Jr) Jr^-1 with Jr(phi) = Jl(-phi) and Jl's derivative
    [[Q(x_w, w), Q(x_v, w) + D_w Q(n, w)[x_w]], [0, Q(x_w, w)]] at (n, w) = -phi
    (lie.py: Q(x, w) is V(w)'s derivative along x): G[j, m] = rho . dJl[e_m] e_j.
    Leaves G in C[C_H + j, 0, m]; returns (A, AQA, rho)."""
    Rr, pr = relative_placement(cflt, k, R, p)
    nx, ny, nz, wx, wy, wz, d = log6(Rr, pr)
    A, AQA = right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, 0.5)
    rv = m3tv(A, (pk[0], pk[1], pk[2]))
    ra = m3tv(A, (pk[3], pk[4], pk[5]))
    rq = m3tv(AQA, (pk[0], pk[1], pk[2]))
    rw = (ra[0] - rq[0], ra[1] - rq[1], ra[2] - rq[2])
    t2 = wx * wx + wy * wy + wz * wz
    ch, sh, b, c = exp_coefficients(t2)
    b2, c2 = derivative_coefficients(t2, 2.0 * sh * ch, b, c)
    b3, c3 = third_coefficients(t2, b, c, b2, c2)
    n = (-nx, -ny, -nz)
    w = (-wx, -wy, -wz)
    z = 0.0 * nx
    for i in range(3):
        e = (z + 1.0 if i == 0 else z, z + 1.0 if i == 1 else z, z + 1.0 if i == 2 else z)
        Qe = coupling(e[0], e[1], e[2], w[0], w[1], w[2], b, c, b2, c2)
        qv = m3tv(Qe, rv)
        qw = m3tv(Qe, rw)
        dq = coupling_rate_t(n, w, e, rv, b, c, b2, c2, b3, c3)
        for j in range(3):
            C[C_H + j, 0, i] = z
            C[C_H + 3 + j, 0, i] = qv[j]
            C[C_H + j, 0, 3 + i] = qv[j]
            C[C_H + 3 + j, 0, 3 + i] = dq[j] + qw[j]
    return A, AQA, (rv[0], rv[1], rv[2], rw[0], rw[1], rw[2])


@helper
def sform(n0, n1, n2, x):
    """s(x) with s(x) . y = C(x, y) + C(y, x) (cb's symmetrised form): [n x x_ang;
    x_lin x n]."""
    return (n1 * x[5] - n2 * x[4], n2 * x[3] - n0 * x[5], n0 * x[4] - n1 * x[3],
            x[1] * n2 - x[2] * n1, x[2] * n0 - x[0] * n2, x[0] * n1 - x[1] * n0)


@helper
def tneg(a):
    return (-a[0], -a[1], -a[2], -a[3], -a[4], -a[5])


@kernel
def contact_dof_vectors(cint, cflt, k, d, idx, C, Vt, nv6, n0, n1, n2, nd, p0, p1, p2, pe,
                        kp6, A, AQA, rho, ell, floc, BF):
    """Per dof a on contact k's support, the force-like vectors whose dot products with
    J_l and dv_l = V<_l x J_l give every pair's entries (module docstring): dv, g, s(J)
    (C_DV, C_G, C_SJ), U, Z, X for a pair with a's joint strictly above l's (C_U, C_Z,
    C_X), uS, xS for l in a's joint (C_US, C_XS); and BF's column of a. ``kp6``: a
    surface contact's Kp term (log6_hessian's G, A, AQA, rho) is added to U and uS."""
    dim = cint[k, CI_DIM]
    r0 = cint[k, CI_ROW]
    lwa = cint[k, CI_REF] == LOCAL_WORLD_ALIGNED
    ndc = tadd(nd, sform(n0, n1, n2, Vt))       # the velocity Hessian's weight
    for a in range(d):
        ka = idx[0, a]
        J = ld6(C[C_J, a])
        V = ld6(C[C_VLT, a])
        Vle = ld6(C[C_VLE, a])
        AT = tadd(ld6(C[C_ALT, a]), ld6(C[C_TLT, a]))
        bf = mcr(ld6(C[C_MLT, a]), J)
        dv = mcr(V, J)
        g = fcr(J, nv6)
        sJ = sform(n0, n1, n2, J)
        dvn = fcr(dv, nv6)
        nvg = fcr(tsub(Vt, V), nv6)
        U = tneg(tadd(tadd(fcr(dv, tadd(nvg, ndc)), fcr(mcr(AT, J), nv6)), fcr(V, dvn)))
        Z = tsub(sform(n0, n1, n2, dv), dvn)
        X = tneg(tadd(tadd(dvn, fcr(J, fcr(tsub(Vt, Vle), nv6))), tadd(fcr(Vle, g),
                                                                       fcr(J, ndc))))
        uS = tneg(tadd(tadd(fcr(AT, g), fcr(V, fcr(J, tadd(nvg, ndc)))),
                       fcr(V, sform(n0, n1, n2, dv))))
        xS = tneg(fcr(V, tadd(g, sJ)))
        # Kp perr (point contacts): [w x p; (w x p) x pe] on J_l in one joint, on w_l
        # (w x p) x pe + p x J_lin + (p x pe) x w below it
        w = (J[3], J[4], J[5])
        wp = cross3(w, (p0, p1, p2))
        wpe = cross3(wp, pe)
        kpa = cross3((p0, p1, p2), (J[0], J[1], J[2]))
        kpb = cross3(cross3((p0, p1, p2), pe), w)
        uS = (uS[0] + wp[0], uS[1] + wp[1], uS[2] + wp[2], uS[3] + wpe[0], uS[4] + wpe[1],
              uS[5] + wpe[2])
        U = (U[0], U[1], U[2], U[3] + wpe[0] + kpa[0] + kpb[0],
             U[4] + wpe[1] + kpa[1] + kpb[1], U[5] + wpe[2] + kpa[2] + kpb[2])
        if kp6:     # delta_k . G delta_l (+ rho . (J_k x J_l) below k's joint)
            jl = (J[0], J[1], J[2])
            ja = (J[3], J[4], J[5])
            dl = m3v(A, jl)
            dq = m3v(AQA, ja)
            dw = m3v(A, ja)
            de = (dl[0] - dq[0], dl[1] - dq[1], dl[2] - dq[2], dw[0], dw[1], dw[2])
            y = (g_column(C, 0, de), g_column(C, 1, de), g_column(C, 2, de),
                 g_column(C, 3, de), g_column(C, 4, de), g_column(C, 5, de))
            uv = m3tv(A, (y[0], y[1], y[2]))
            uq = m3tv(AQA, (y[0], y[1], y[2]))
            ua = m3tv(A, (y[3], y[4], y[5]))
            uu = (uv[0], uv[1], uv[2], ua[0] - uq[0], ua[1] - uq[1], ua[2] - uq[2])
            uS = tadd(uS, uu)
            U = tsub(tadd(U, uu), fcr(J, rho))
        for s in range(dim):
            BF[r0 + s, ka] += bf[s]
        if lwa:     # lam_f . R f at f held: w_l . (c x l) + [a above l] w_l . ((f x l) x w)
            for s in range(0, dim, 3):
                f3 = (floc[r0 + s], floc[r0 + s + 1], floc[r0 + s + 2])
                l3 = (ell[r0 + s], ell[r0 + s + 1], ell[r0 + s + 2])
                c1 = cross3(cross3(w, f3), l3)
                e = cross3(cross3(f3, l3), w)
                uS = (uS[0], uS[1], uS[2], uS[3] - c1[0], uS[4] - c1[1], uS[5] - c1[2])
                U = (U[0], U[1], U[2], U[3] - c1[0] - e[0], U[4] - c1[1] - e[1],
                     U[5] - c1[2] - e[2])
                c = cross3(l3, w)           # d(R^T lam_f)/dq_a = l x w_a
                BF[r0 + s, ka] += c[0]
                BF[r0 + s + 1, ka] += c[1]
                BF[r0 + s + 2, ka] += c[2]
        st6(dv, C[C_DV, a])
        st6(g, C[C_G, a])
        st6(sJ, C[C_SJ, a])
        st6(U, C[C_U, a])
        st6(Z, C[C_Z, a])
        st6(X, C[C_X, a])
        st6(uS, C[C_US, a])
        st6(xS, C[C_XS, a])


@kernel
def contact_pairs(mi, fmf, cint, cflt, k, ws, v, qdd, mu, nu, ell, floc, idx, C, HQ, HV,
                  HX, BA, BF):
    """Contact k's share of L_xx (HQ, HV, HX: minus the second derivatives of nu . r2,
    plus the rotation's for LOCAL_WORLD_ALIGNED) and of B (BA: -d(J^T nu)/dq, BF:
    d(J mu)/dq + d(R^T lam_f)/dq) over the pairs of dofs on its support: per dof the
    vectors of contact_dof_vectors, then a few dot products a pair (the pairs across
    two joints once, both entries written: their mixed derivatives commute)."""
    n = mi[0, 0]
    dim = cint[k, CI_DIM]
    r0 = cint[k, CI_ROW]
    R, p = contact_pose(ws, fmf, cint, k)
    d = support_chain(mi, cint[k, CI_JOINT], idx)
    for t in range(d):
        st6(jacobian_column(ws[n + 1 + idx[0, t], D_S:D_S + 6], LOCAL, R, p), C[C_J, t])
    Vt = prefix(idx, d, C, C_J, v, C_VLT, C_VLE)
    prefix(idx, d, C, C_J, qdd, C_ALT, -1)
    prefix(idx, d, C, C_J, mu, C_MLT, -1)
    t_prefix(idx, d, C, v)
    z = 0.0 * v[0]
    nv6 = (nu[r0], nu[r0 + 1], nu[r0 + 2], z, z, z)
    if dim == 6:
        nv6 = (nu[r0], nu[r0 + 1], nu[r0 + 2], nu[r0 + 3], nu[r0 + 4], nu[r0 + 5])
    n0, n1, n2 = nv6[0], nv6[1], nv6[2]
    if dim == 6:            # no classical term
        n0, n1, n2 = z, z, z
    nd = (cflt[k, CF_KD] * nv6[0], cflt[k, CF_KD + 1] * nv6[1], cflt[k, CF_KD + 2] * nv6[2],
          cflt[k, CF_KD + 3] * nv6[3], cflt[k, CF_KD + 4] * nv6[4],
          cflt[k, CF_KD + 5] * nv6[5])
    p0, p1, p2 = (cflt[k, CF_KP] * nv6[0], cflt[k, CF_KP + 1] * nv6[1],
                  cflt[k, CF_KP + 2] * nv6[2])
    z9 = (z, z, z, z, z, z, z, z, z)
    A, AQA, rho = z9, z9, (z, z, z, z, z, z)
    kp6 = False
    if dim == 6:            # the log6 term instead
        p0, p1, p2 = z, z, z
        pk = (cflt[k, CF_KP] * nv6[0], cflt[k, CF_KP + 1] * nv6[1],
              cflt[k, CF_KP + 2] * nv6[2], cflt[k, CF_KP + 3] * nv6[3],
              cflt[k, CF_KP + 4] * nv6[4], cflt[k, CF_KP + 5] * nv6[5])
        for r in range(6):
            if cflt[k, CF_KP + r] != 0.0:
                kp6 = True
        if kp6:
            A, AQA, rho = log6_hessian(cflt, k, R, world_point(ws, p), pk, C)
    perr = position_error(cflt, k, 3, R, world_point(ws, p))     # against a world placement
    pe = (perr[0], perr[1], perr[2])
    contact_dof_vectors(cint, cflt, k, d, idx, C, Vt, nv6, n0, n1, n2, nd, p0, p1, p2, pe,
                        kp6, A, AQA, rho, ell, floc, BF)
    for a in range(d):
        ka = idx[0, a]
        ja = idx[1, a]
        Ja = ld6(C[C_J, a])
        dva = ld6(C[C_DV, a])
        Ga = ld6(C[C_G, a])
        hva = tsub(ld6(C[C_SJ, a]), Ga)        # HV's vector, and Y of HX (a above l)
        Ua = ld6(C[C_U, a])
        Za = ld6(C[C_Z, a])
        Xa = ld6(C[C_X, a])
        uSa = ld6(C[C_US, a])
        xSa = ld6(C[C_XS, a])
        for b in range(a, d):
            lb = idx[0, b]
            Jb = ld6(C[C_J, b])
            if ja != idx[1, b]:
                dvb = ld6(C[C_DV, b])
                x = tdot(Ua, Jb) + tdot(Za, dvb)
                HQ[ka, lb] -= x
                HQ[lb, ka] -= x
                x = tdot(hva, Jb)
                HV[ka, lb] -= x
                HV[lb, ka] -= x
                HX[lb, ka] -= tdot(Xa, Jb) + tdot(hva, dvb)
                HX[ka, lb] -= tdot(tadd(ld6(C[C_G, b]), ld6(C[C_SJ, b])), dva)
                BA[ka, lb] += tdot(Ga, Jb)
            else:
                HQ[ka, lb] -= tdot(uSa, Jb)
                HX[lb, ka] -= tdot(xSa, Jb)
                x = tdot(ld6(C[C_SJ, a]), Jb)
                HV[ka, lb] -= x
                if b != a:
                    HV[lb, ka] -= x
                    HQ[lb, ka] -= tdot(ld6(C[C_US, b]), Ja)
                    HX[ka, lb] -= tdot(ld6(C[C_XS, b]), Ja)


@kernel
def adjoint(fmf, cint, ws, Minv, Yt, W, lam_a, lam_f, lam, ell, floc, nu, mu):
    """ell = lam_f in LOCAL (R^T per 3-block for LOCAL_WORLD_ALIGNED), floc = the LOCAL
    forces (lam), nu = W^-1 (Y^T lam_a + ell), mu = M^-1 lam_a - Y nu."""
    nc = Yt.shape[0]
    nv = Minv.shape[0]
    for r in range(nc):
        ell[r] = lam_f[r]
        floc[r] = lam[r]
    for k in range(cint.shape[0]):
        if cint[k, CI_REF] == LOCAL_WORLD_ALIGNED:
            R, _ = contact_pose(ws, fmf, cint, k)
            r0 = cint[k, CI_ROW]
            for s in range(r0, r0 + cint[k, CI_DIM], 3):
                x = rot_t(R, lam_f[s], lam_f[s + 1], lam_f[s + 2])
                ell[s] = x[0]
                ell[s + 1] = x[1]
                ell[s + 2] = x[2]
    for r in range(nc):
        s = ell[r]
        y = Yt[r]
        for m in range(nv):
            s += y[m] * lam_a[m]
        nu[r] = s
    cholesky_solve(W, nc, nu)
    for m in range(nv):
        s = 0.0 * lam_a[0]
        row = Minv[m]
        for c in range(nv):
            s += row[c] * lam_a[c]
        mu[m] = s
    for r in range(nc):
        x = nu[r]
        y = Yt[r]
        for m in range(nv):
            mu[m] -= x * y[m]


@kernel
def hessian_products(B, Yq, Yv, Yt, P, PT, HQ, HX, HT, tau):
    """HQ += B^T Yq + (B^T Yq)^T, HX += B^T Yv and, when ``tau``, HT = Yt^T B (= (B^T
    Yt)^T); B, Y* (nv + nc, nv), P and PT (nv, nv) scratch. One pass over B's nonzeros
    (its top block has the branch pattern, its contact rows the supports), every inner
    loop along a row of Y*."""
    nr = B.shape[0]
    nv = B.shape[1]
    for j in range(nv):
        for c in range(nv):
            P[j, c] = 0.0
            PT[j, c] = 0.0
    for r in range(nr):
        br = B[r]
        yq = Yq[r]
        yv = Yv[r]
        yt = Yt[r]
        for j in range(nv):
            b = br[j]
            if b != 0.0:
                pj = P[j]
                hx = HX[j]
                if tau:
                    ptj = PT[j]
                    for c in range(nv):
                        pj[c] += b * yq[c]
                        hx[c] += b * yv[c]
                        ptj[c] += b * yt[c]
                else:
                    for c in range(nv):
                        pj[c] += b * yq[c]
                        hx[c] += b * yv[c]
    for j in range(nv):
        for c in range(nv):
            HQ[j, c] += P[j, c] + P[c, j]
    if tau:
        for j in range(nv):
            for c in range(nv):
                HT[j, c] = PT[c, j]


@kernel
def contact_contraction(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, cint, cflt, damping,
                        ws, ws2, sc, F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd,
                        forces, Y, B, vecs, idx, C, HQ, HV, HX, HT):
    """HQ = d2P/dq2, HV = d2P/dv2, HX = d2P/dqdv, HT = d2P/dtau dq (each (nv, nv), every
    entry written) of P = lam_a . qdd + lam_f . forces; -1 or the first dependent row
    (nothing written then). Scratch: contact_dynamics_derivatives' (ws .. forces), ws2
    (workspace_rows, CONTRACTION_WIDTH) and sc (SC_SIZE,) for the RNEA contraction, Y
    (3, nv + nc, nv) the first-order blocks (qdd rows, then LOCAL force rows), B
    (nv + nc, nv), vecs (4, max(nv, nc)) mu, nu, ell, floc, idx (2, nv) int, C (C_SIZE,
    nv, 6)."""
    nv = qdd.shape[0]
    bad = local_derivatives(mi, mf, fparent, fmf, q, v, tau, None, cint, cflt, damping, ws,
                            F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd, forces,
                            Y[0, :nv], Y[1, :nv], Y[2, :nv], Y[0, nv:], Y[1, nv:],
                            Y[2, nv:])
    if bad >= 0:
        return bad
    contraction_terms(mi, mf, fmf, q, v, lam_a, lam_f, cint, cflt, ws, ws2, sc, Minv, Yt, W,
                      lam, S3, fc, qdd, Y, B, vecs, idx, C, HQ, HV, HX, HT)
    return -1


@kernel
def contact_contraction_given(mi, mf, fmf, q, v, tau, lam_a, lam_f, cint, cflt, damping, ws,
                              ws2, sc, F, Minv, J, Yt, W, lam, S3, fc, qdd, forces, D, Y, B,
                              vecs, idx, C, HQ, HV, HX, HT):
    """contact_contraction with the first-order derivatives given: D (3, nv + nc, nv) the
    blocks of contact_dynamics_derivatives at (q, v, tau) (dqdd_dq over dforces_dq, then
    the v and tau ones; forces in each contact's reference) instead of computed: the
    contact solve (for M^-1, the KKT factor, the LOCAL forces) and the terms. Scratch as
    contact_contraction's less D6, G, qdd2; forces (nc,)."""
    nv = qdd.shape[0]
    nc = J.shape[0]
    bad = contact_dynamics(mi, mf, fmf, q, v, tau, None, cint, cflt, damping, ws, F, Minv,
                           J, Yt, W, lam, qdd, forces)
    if bad >= 0:
        return bad
    forces_on_joints(fmf, cint, None, lam, fc)
    for b in range(3):
        for r in range(nv + nc):
            for c in range(nv):
                Y[b, r, c] = D[b, r, c]
    local_force_derivatives(mi, fmf, cint, ws, forces, Y[0, nv:], Y[1, nv:], Y[2, nv:])
    contraction_terms(mi, mf, fmf, q, v, lam_a, lam_f, cint, cflt, ws, ws2, sc, Minv, Yt, W,
                      lam, S3, fc, qdd, Y, B, vecs, idx, C, HQ, HV, HX, HT)
    return -1


@kernel
def local_force_derivatives(mi, fmf, cint, ws, forces, df_dq, df_dv, df_dtau):
    """The inverse of contact_dynamics.rotate_force_derivatives (in place): for
    LOCAL_WORLD_ALIGNED contacts df_L = R^T (df - [w_m x (R f)] in the q columns of the
    dofs carrying the contact)."""
    for k in range(cint.shape[0]):
        if cint[k, CI_REF] != LOCAL_WORLD_ALIGNED:
            continue
        R, _ = contact_pose(ws, fmf, cint, k)
        r0 = cint[k, CI_ROW]
        for h in range(r0, r0 + cint[k, CI_DIM], 3):
            add_rotation_rate(mi, ws, cint[k, CI_JOINT], forces, h, df_dq, -1.0)
            for D in (df_dq, df_dv, df_dtau):
                for m in range(D.shape[1]):
                    x = rot_t(R, D[h, m], D[h + 1, m], D[h + 2, m])
                    D[h, m] = x[0]
                    D[h + 1, m] = x[1]
                    D[h + 2, m] = x[2]


@kernel
def contraction_terms(mi, mf, fmf, q, v, lam_a, lam_f, cint, cflt, ws, ws2, sc, Minv, Yt, W,
                      lam, S3, fc, qdd, Y, B, vecs, idx, C, HQ, HV, HX, HT):
    """contact_contraction's terms (module docstring) from the solve (ws's kinematics,
    Minv, Yt, W's factor, the LOCAL forces lam, fc, qdd) and the first-order blocks Y."""
    nv = qdd.shape[0]
    nc = Yt.shape[0]
    mu = vecs[0, :nv]
    nu = vecs[1, :nc]
    ell = vecs[2, :nc]
    floc = vecs[3, :nc]
    adjoint(fmf, cint, ws, Minv, Yt, W, lam_a, lam_f, lam, ell, floc, nu, mu)
    # -mu . r1 at y held: the RNEA contraction with the contact forces as fext
    # (on the joints in fc)
    rnea_contraction(mi, mf, q, v, qdd, mu, fc, ws2, sc, HQ, HV, HX, B[:nv])
    for r in range(nv):
        for c in range(nv):
            HQ[r, c] = -HQ[r, c]
            HV[r, c] = -HV[r, c]
            HX[r, c] = -HX[r, c]
            B[r, c] = -B[r, c]
    for r in range(nv, nv + nc):
        for c in range(nv):
            B[r, c] = 0.0
    for k in range(cint.shape[0]):
        contact_pairs(mi, fmf, cint, cflt, k, ws, v, qdd, mu, nu, ell, floc, idx, C, HQ, HV,
                      HX, B[:nv], B[nv:])
    hessian_products(B, Y[0], Y[1], Y[2], S3[0], S3[1], HQ, HX, HT, True)


# ---- impulse dynamics ------------------------------------------------------------------
#
# P(q, v-) = lam_v . v+ + lam_f . impulses, y = (v+, Lambda_L) (impulse_dynamics.py):
#     r1 = M(q) (v+ - v-) - J(q)^T Lambda_L = RNEA(q, 0, v+ - v-, fext = Lambda_L; no gravity)
#     r2 = J(q) v+ + r J(q) v- + damping Lambda_L
# both linear in y with the KKT matrix of the contact case (dr1/dv+ = M, dr2/dv+ = J), so
# (mu, nu) is the same adjoint (lam_v for lam_a) and B = L_yq the same matrix. With
# w = v+ + r v- (r2's q dependence is J(q) w), L = lam_v.v+ + lam_f.f - mu.r1 - nu.r2:
#     L_qq    = -(the RNEA contraction's HQ at (q, 0, v+ - v-), mu, no gravity)
#               - nu . d2(J w)/dq2 (+ the rotation's for LOCAL_WORLD_ALIGNED)
#     L_qv-   [j, k] = d(M mu)_k/dq_j - r d(J^T nu)_k/dq_j      (r1 holds -M v-, r2 r J v-)
#     L_v-v-  = 0,   L_yv- = 0
#     d2_dq2 = L_qq + B^T y_q + y_q^T B,   d2_dqdv = L_qv- + B^T y_v-
# and the v--v- block is zero: v+ and Lambda are linear in v- with a q-only slope.
# Per pair of dofs (k above l, J the LOCAL columns, W< the prefix sums of J w, g_k =
# J_k x* nu; f.(m x y) = -(m x* f).y moves every cross product onto per-dof vectors):
#     nu . d2(J w)/dq_l dq_k = (-(W<_k x* g_k) + [k<l] J_k x* (W<_k x* nu)) . J_l
#     nu . dJ_k/dq_l = nu . (J_k x J_l) = -g_k . J_l                        (k < l)
# one dot product each; within one joint only the first term, in its order (the
# tangent-space convention: d/dq_l of the gradient's k entry, not symmetric there).

@kernel
def impulse_pairs(mi, fmf, cint, k, ws, w, r, mu, nu, ell, floc, idx, C, HQ, HX, BA, BF):
    """Impulse contact k's share of L_qq (HQ: -nu . d2(J w)/dq2, plus the rotation's for
    LOCAL_WORLD_ALIGNED), of L_qv- (HX: -r d(J^T nu)/dq) and of B (BA: -d(J^T nu)/dq,
    BF: d(J mu)/dq + d(R^T lam_f)/dq) over the pairs of dofs on its support."""
    n = mi[0, 0]
    dim = cint[k, CI_DIM]
    r0 = cint[k, CI_ROW]
    R, p = contact_pose(ws, fmf, cint, k)
    d = support_chain(mi, cint[k, CI_JOINT], idx)
    for t in range(d):
        st6(jacobian_column(ws[n + 1 + idx[0, t], D_S:D_S + 6], LOCAL, R, p), C[C_J, t])
    prefix(idx, d, C, C_J, w, C_VLT, -1)
    prefix(idx, d, C, C_J, mu, C_MLT, -1)
    z = 0.0 * w[0]
    nv6 = (nu[r0], nu[r0 + 1], nu[r0 + 2], z, z, z)
    if dim == 6:
        nv6 = (nu[r0], nu[r0 + 1], nu[r0 + 2], nu[r0 + 3], nu[r0 + 4], nu[r0 + 5])
    lwa = cint[k, CI_REF] == LOCAL_WORLD_ALIGNED
    # per dof: g = J x* nu (C_VLE), h1 = -(W< x* g) (C_ALT), h1 + J x* (W< x* nu) (C_TLT)
    for a in range(d):
        ka = idx[0, a]
        Ja = ld6(C[C_J, a])
        Wa = ld6(C[C_VLT, a])
        g = fcr(Ja, nv6)
        h1 = fcr(Wa, g)
        h1 = (-h1[0], -h1[1], -h1[2], -h1[3], -h1[4], -h1[5])
        st6(g, C[C_VLE, a])
        st6(h1, C[C_ALT, a])
        st6(tadd(h1, fcr(Ja, fcr(Wa, nv6))), C[C_TLT, a])
        bf = mcr(ld6(C[C_MLT, a]), Ja)
        for s in range(dim):
            BF[r0 + s, ka] += bf[s]
        if lwa:         # d(R^T lam_f)/dq_k = l x w_k
            for s in range(0, dim, 3):
                c = cross3((ell[r0 + s], ell[r0 + s + 1], ell[r0 + s + 2]), (Ja[3], Ja[4], Ja[5]))
                BF[r0 + s, ka] += c[0]
                BF[r0 + s + 1, ka] += c[1]
                BF[r0 + s + 2, ka] += c[2]
    for a in range(d):
        ka = idx[0, a]
        ja = idx[1, a]
        Ja = ld6(C[C_J, a])
        h1a = ld6(C[C_ALT, a])
        ha = ld6(C[C_TLT, a])
        ga = ld6(C[C_VLE, a])
        for b in range(a, d):
            lb = idx[0, b]
            Jb = ld6(C[C_J, b])
            kl = ja != idx[1, b]
            if kl:          # a's joint strictly above b's: symmetric
                x = tdot(ha, Jb)
                HQ[ka, lb] -= x
                HQ[lb, ka] -= x
                nj = tdot(ga, Jb)           # -nu . (J_a x J_b)
                BA[ka, lb] += nj
                HX[lb, ka] += r * nj
            else:
                HQ[ka, lb] -= tdot(h1a, Jb)
                if b != a:
                    HQ[lb, ka] -= tdot(ld6(C[C_ALT, b]), Ja)
            if lwa:     # lam_f . R f at f held: l . (w_l x (w_k x f)) + [k<l] l . (dw_k x f)
                wa = (Ja[3], Ja[4], Ja[5])
                wb = (Jb[3], Jb[4], Jb[5])
                for s in range(0, dim, 3):
                    f3 = (floc[r0 + s], floc[r0 + s + 1], floc[r0 + s + 2])
                    l3 = (ell[r0 + s], ell[r0 + s + 1], ell[r0 + s + 2])
                    HQ[ka, lb] += dot3(cross3(wa, f3), cross3(l3, wb))
                    if kl:
                        HQ[ka, lb] += dot3(cross3(cross3(f3, l3), wa), wb)
                    if b != a:
                        HQ[lb, ka] += dot3(cross3(wb, f3), cross3(l3, wa))


@kernel
def impulse_rnea_contraction(mi, mf, q, dv, mu, fc, ws, sc, HQ, HV, HX, HD):
    """rnea_contraction at (q, v = 0, a = dv) without gravity, fc (njoints, 6) on the
    joints: the contraction of r1 = M(q) dv - J^T Lambda. HV and HX (RNEA's v, held at 0
    here) are scratch."""
    zero4(HQ, HV, HX, HD)
    init_universe_at_base(mi, mf, q, ws)     # as impulse_solve's placements: base-relative
    for c in range(6):
        ws[0, W_A + c] = 0.0
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        for c in range(6):
            ws[i, W_V + c] = 0.0
            ws[i, W_VJ + c] = 0.0
        acceleration_joint(mi, i, dv, ws)
        joint_dynamics(mi, mf, i, fc, ws)
    costate_pass(mi, mu, ws)
    contraction_backward_pass(mi, mu, ws, sc, HQ, HV, HX, HD)


@kernel
def impulse_contraction(mi, mf, fparent, fmf, q, v, lam_v, lam_f, cint, r, damping, ws, ws2,
                        sc, F, Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, impulses, Y, B,
                        vecs, idx, C, HQ, HX):
    """HQ = d2P/dq2, HX = d2P/dq dv- (each (nv, nv), every entry written) of P = lam_v .
    v+ + lam_f . impulses (the block comment above); -1 or the first dependent row
    (nothing written then). Scratch: impulse_dynamics_derivatives' (ws .. impulses), ws2,
    sc, Y (>= 2, nv + nc, nv), B, vecs, idx, C as contact_contraction's."""
    nv = vout.shape[0]
    nc = J.shape[0]
    bad = impulse_local_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F,
                                    Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, impulses,
                                    Y[0, :nv], Y[1, :nv], Y[0, nv:], Y[1, nv:])
    if bad >= 0:
        return bad
    mu = vecs[0, :nv]
    nu = vecs[1, :nc]
    ell = vecs[2, :nc]
    floc = vecs[3, :nc]
    adjoint(fmf, cint, ws, Minv, Yt, W, lam_v, lam_f, lam, ell, floc, nu, mu)
    # -mu . r1 (dv = v+ - v-, fc the impulses on their joints: impulse_local_derivatives')
    impulse_rnea_contraction(mi, mf, q, dv, mu, fc, ws2, sc, HQ, S3[0], S3[1], B[:nv])
    for j in range(nv):
        for c in range(nv):
            HQ[j, c] = -HQ[j, c]
            HX[j, c] = B[c, j]          # d(M mu)_c/dq_j
    for j in range(nv):
        for c in range(nv):
            B[j, c] = -B[j, c]
    for j in range(nv, nv + nc):
        for c in range(nv):
            B[j, c] = 0.0
    for i in range(nv):                 # r2's q dependence: J(q) (v+ + r v-)
        dv[i] = vout[i] + r * v[i]
    for k in range(cint.shape[0]):
        impulse_pairs(mi, fmf, cint, k, ws, dv, r, mu, nu, ell, floc, idx, C, HQ, HX, B[:nv],
                      B[nv:])
    hessian_products(B, Y[0], Y[1], Y[1], S3[0], S3[1], HQ, HX, S3[2], False)
    return -1
