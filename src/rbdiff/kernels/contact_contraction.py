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
with its q-derivative by the same rule (contraction_pairs); a point contact's classical
acceleration adds nu . (w x v_lin) (a bilinear form C in the LOCAL velocity), its
Baumgarte terms Kp perr (dperr/dq_k = J_k,lin + perr x w_k) and Kd v. O(d^2) per
contact of support depth d. The 6D position error log6 enters through the derivative
of Jlog6, not written here: 6D contacts with Kp > 0 are refused by the entries.
"""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .contact_dynamics import (CF_KD, CF_KP, CI_DIM, CI_JOINT, CI_REF, CI_ROW,
                               cholesky_solve, contact_pose, local_derivatives,
                               position_error, rot_t)
from .contraction import (contraction_backward_pass, costate_pass, rnea_contraction,
                          zero4)
from .fk import acceleration_joint, init_universe, placement_pass_joint
from .frames import jacobian_column
from .idsva import joint_dynamics
from .impulse_dynamics import impulse_local_derivatives
from .jit import helper, kernel
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
C_SIZE = 6


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
def cb(n0, n1, n2, x, y):
    """C(x, y) = n . (x_ang x y_lin), the classical acceleration's bilinear form."""
    return (n0 * (x[4] * y[2] - x[5] * y[1]) + n1 * (x[5] * y[0] - x[3] * y[2])
            + n2 * (x[3] * y[1] - x[4] * y[0]))


@helper
def cross_dot(l0, l1, l2, a, b):
    """l . (a x b) for 3-tuples a, b."""
    return (l0 * (a[1] * b[2] - a[2] * b[1]) + l1 * (a[2] * b[0] - a[0] * b[2])
            + l2 * (a[0] * b[1] - a[1] * b[0]))


@helper
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@helper
def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@kernel
def contact_pairs(mi, fmf, cint, cflt, k, ws, v, qdd, mu, nu, ell, floc, idx, C, HQ, HV,
                  HX, BA, BF):
    """Contact k's share of L_xx (HQ, HV, HX: minus the second derivatives of nu . r2,
    plus the rotation's for LOCAL_WORLD_ALIGNED) and of B (BA: -d(J^T nu)/dq, BF:
    d(J mu)/dq + d(R^T lam_f)/dq) over the pairs of dofs on its support."""
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
    if dim == 6:            # refused by the entries when Kp > 0
        p0, p1, p2 = z, z, z
    perr = position_error(cflt, k, 3, R, p)
    pe = (perr[0], perr[1], perr[2])
    lwa = cint[k, CI_REF] == LOCAL_WORLD_ALIGNED
    zero = (z, z, z, z, z, z)
    for a in range(d):
        ka = idx[0, a]
        ja = idx[1, a]
        Jk = ld6(C[C_J, a])
        Vk = ld6(C[C_VLT, a])
        Vlek = ld6(C[C_VLE, a])
        Tk = ld6(C[C_TLT, a])
        dvk = mcr(Vk, Jk)
        Vge = tsub(Vt, Vk)
        for b in range(d):
            lb = idx[0, b]
            Jl = ld6(C[C_J, b])
            Vl = ld6(C[C_VLT, b])
            mn = a if a < b else b
            kl = ja != idx[1, b] and a < b          # k's joint strictly above l's
            lk = ja != idx[1, b] and b < a
            dJk = mcr(Jk, Jl) if kl else zero
            Vmn = ld6(C[C_VLT, mn])
            # d2/dq_l dq_k of sum J w: (W<_min x J_l) x J_k + [k<l] W<_k x (J_k x J_l)
            gA = mcr(mcr(ld6(C[C_ALT, mn]), Jl), Jk)
            ddv = mcr(mcr(Vmn, Jl), Jk)
            if kl:
                gA = tadd(gA, mcr(ld6(C[C_ALT, a]), dJk))
                ddv = tadd(ddv, mcr(Vk, dJk))
            dTk = mcr(ld6(C[C_TLT, mn]), Jl)
            if lk:
                dTk = tadd(dTk, mcr(mcr(Vl, Jl), tsub(Vk, Vl)))
            dVk = mcr(Vmn, Jl)
            dVge = mcr(tsub(Vl, Vk), Jl) if kl else zero
            gT = tadd(tadd(mcr(dTk, Jk), mcr(Tk, dJk)),
                      tadd(mcr(tadd(mcr(dVk, Jk), mcr(Vk, dJk)), Vge), mcr(dvk, dVge)))
            dvl = mcr(Vl, Jl)
            val = (tdot(nv6, tadd(gA, gT)) + tdot(nd, ddv) + cb(n0, n1, n2, ddv, Vt)
                   + cb(n0, n1, n2, dvk, dvl) + cb(n0, n1, n2, dvl, dvk)
                   + cb(n0, n1, n2, Vt, ddv))
            # point contact: Kp perr, d2perr = [k<l] dJk_lin + (J_l,lin + perr x w_l) x w_k
            #                                   + [k<l] perr x dJk_ang
            wk = (Jk[3], Jk[4], Jk[5])
            wl = (Jl[3], Jl[4], Jl[5])
            u = cross3(pe, wl)
            u = (Jl[0] + u[0], Jl[1] + u[1], Jl[2] + u[2])
            val += cross_dot(p0, p1, p2, u, wk)
            if kl:
                val += (p0 * dJk[0] + p1 * dJk[1] + p2 * dJk[2]
                        + cross_dot(p0, p1, p2, pe, (dJk[3], dJk[4], dJk[5])))
            h = -val
            if lwa:     # lam_f . R f at f held: l . (w_l x (w_k x f)) + [k<l] l . (dw_k x f)
                for s in range(0, dim, 3):
                    f3 = (floc[r0 + s], floc[r0 + s + 1], floc[r0 + s + 2])
                    l0, l1, l2 = ell[r0 + s], ell[r0 + s + 1], ell[r0 + s + 2]
                    h += cross_dot(l0, l1, l2, wl, cross3(wk, f3))
                    if kl:
                        h += cross_dot(l0, l1, l2, (dJk[3], dJk[4], dJk[5]), f3)
            HQ[ka, lb] += h
            # v-v: the acceleration's velocity product, nu . (J_min x J_max)
            hv = cb(n0, n1, n2, Jk, Jl) + cb(n0, n1, n2, Jl, Jk)
            if kl:
                hv += tdot(nv6, dJk)
            elif lk:
                hv += tdot(nv6, mcr(Jl, Jk))
            HV[ka, lb] -= hv
            # q_l v_j (j = this k): d/dq_l of V<_j x J_j + J_j x V>_j
            g = mcr(mcr(Vmn, Jl), Jk)
            if kl:
                g = tadd(g, tadd(mcr(Vk, dJk), mcr(dJk, tsub(Vt, Vlek))))
                g = tadd(g, mcr(Jk, mcr(tsub(Vl, Vlek), Jl)))
            hx = (tdot(nv6, g) + tdot(nd, dJk) + cb(n0, n1, n2, dJk, Vt)
                  + cb(n0, n1, n2, Jk, dvl) + cb(n0, n1, n2, dvl, Jk)
                  + cb(n0, n1, n2, Vt, dJk))
            HX[lb, ka] -= hx
            if kl:
                BA[ka, lb] -= tdot(nv6, dJk)
        bf = mcr(ld6(C[C_MLT, a]), Jk)
        for r in range(dim):
            BF[r0 + r, ka] += bf[r]
        if lwa:         # d(R^T lam_f)/dq_k = l x w_k
            for s in range(0, dim, 3):
                c = cross3((ell[r0 + s], ell[r0 + s + 1], ell[r0 + s + 2]), (Jk[3], Jk[4], Jk[5]))
                BF[r0 + s, ka] += c[0]
                BF[r0 + s + 1, ka] += c[1]
                BF[r0 + s + 2, ka] += c[2]


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
def hessian_products(B, Yq, Yv, P, HQ, HX):
    """HQ += B^T Yq + (B^T Yq)^T, HX += B^T Yv; B, Y* (nv + nc, nv), P (nv, nv)
    scratch; every inner loop along a row, zeros of B skipped."""
    nr = B.shape[0]
    nv = B.shape[1]
    for j in range(nv):
        for c in range(nv):
            P[j, c] = 0.0
    for r in range(nr):
        br = B[r]
        yq = Yq[r]
        yv = Yv[r]
        for j in range(nv):
            b = br[j]
            if b != 0.0:
                pj = P[j]
                hx = HX[j]
                for c in range(nv):
                    pj[c] += b * yq[c]
                    hx[c] += b * yv[c]
    for j in range(nv):
        for c in range(nv):
            HQ[j, c] += P[j, c] + P[c, j]


@kernel
def tau_products(B, Yt, HT):
    """HT = Yt^T B; B, Yt (nv + nc, nv)."""
    nv = B.shape[1]
    for j in range(nv):
        for c in range(nv):
            HT[j, c] = 0.0
    for r in range(B.shape[0]):
        br = B[r]
        yt = Yt[r]
        for j in range(nv):
            y = yt[j]
            if y != 0.0:
                ht = HT[j]
                for c in range(nv):
                    ht[c] += y * br[c]


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
    nc = J.shape[0]
    bad = local_derivatives(mi, mf, fparent, fmf, q, v, tau, None, cint, cflt, damping, ws,
                            F, Minv, J, Yt, W, lam, S3, D6, G, fc, qdd2, qdd, forces,
                            Y[0, :nv], Y[1, :nv], Y[2, :nv], Y[0, nv:], Y[1, nv:],
                            Y[2, nv:])
    if bad >= 0:
        return bad
    mu = vecs[0, :nv]
    nu = vecs[1, :nc]
    ell = vecs[2, :nc]
    floc = vecs[3, :nc]
    adjoint(fmf, cint, ws, Minv, Yt, W, lam_a, lam_f, lam, ell, floc, nu, mu)
    # -mu . r1 at y held: the RNEA contraction with the contact forces as fext
    # (local_derivatives left them on the joints in fc)
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
    hessian_products(B, Y[0], Y[1], S3[0], HQ, HX)
    tau_products(B, Y[2], HT)
    return -1


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
    init_universe(mf, ws)
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
    hessian_products(B, Y[0], Y[1], S3[0], HQ, HX)
    return -1
