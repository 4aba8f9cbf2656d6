"""DDP's dynamics curvature on every problem FDDP takes (floating bases, spherical joints,
underactuation, contact and impulse knots): the Hessian of lambda'.f(x, u) at a knot in
the tangent coordinates z = (dq, dv, du) of x = (q (+) dq, v + dv), the successor's
tangent taken at f(x_bar, u_bar) by difference (log), lambda' = (lam_q, lam_v) the
next knot's costate (FDDP's V_x' + V_xx' gap).

With y = v' (a free or contact knot: v' = v + dt a; an impulse knot: v' = v+(q, v)) and
q' = q (+) c y (c = dt, or 0 at an impulse knot: q' = q), the successor's tangent is
(D(dq, c y), y - y_bar), D(a, b) = log(exp(-w) exp(a) exp(w + b)) per Lie joint block
(w = c y_bar; the identity map a + b on vector-space joints). To second order (BCH),

    D = Jq a + Jv b + 1/2 [Jq a, Jv b] + 1/2 e2(b, b),

Jq = Ad(exp(-w)), Jv = Jr(w) integrate's Jacobians, [.,.] the Lie bracket, e2 the second
derivative of log(exp(-w) exp(w + b)), whose contraction with lam_q is the symmetric part
of lam_q^T dJr(w)/dw (the bracket's part of it is antisymmetric). So

    Hess(lambda'.f) = lam_y . y_zz + sum over Lie blocks of
        E^T Hab W + W^T Hab^T E + W^T Hbb W,

lam_y = lam_v + c Jv^T lam_q (y's costate: the first-order part of D carries y's
curvature), Hab[i, j] = 1/2 lam_q.[Jq e_i, Jv e_j], Hbb = sym(lam_q^T dJr/dw), W = c dy/dz
= c [Pq, Pv, Pu] (the block's rows), E the block's dq columns (lie_curvature).

lam_y . y_zz: a free knot's is dt lam_y . a_zz (rbd.aba_second_order_contraction with
dt lam_y; its q-q block symmetrised: for multi-dof joints the tensor's q-q slices carry
a Lie bracket, antisymmetric, that the Hessian in the exp chart does not have); a
contact knot's the contact dynamics' contraction of (dt lam_y, lam_f) with lam_f = dl/df
the force terms' gradient (Problem.force_costates: the forces' own curvature enters the
cost's Hessian through it); an impulse knot's the impulse dynamics' of (lam_y, lam_f).
The contact and impulse contractions are looked up in ``CONTRACTIONS`` (rbdiff's
contact_dynamics_contraction / impulse_dynamics_contraction where the library has them);
the compiled pass calls the contact one's split entry (contact_contraction_given_one),
which takes the first-order contact derivatives that the iteration's derivative step
computed instead of computing them again (about 0.6x the contraction's time).

The cost's own curvature: the solver adds the residuals' curvature of the terms that
have one (FrameTranslation, on any tree: costs.py) to l_xx for this pass; the others'
(CoMPosition, StateRegularization's free-flyer / spherical difference) stays
Gauss-Newton's, exact where their residuals are linear in the tangent coordinates or
vanish.
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd

from ..cpu.contact_contraction import contact_contraction_given_one, impulse_contraction_one
from ..cpu.contraction import aba_contraction_one
from ..cpu.twin import twin, twin_later
from ..kernels.configuration import exp_coefficients
from ..kernels.contact_contraction import coupling_rate_t, m3tv
from ..kernels.jit import entry, helper, kernel
from ..kernels.lie import coupling, derivative_coefficients, third_coefficients
from ..kernels.workspace import W_WIDTH, workspace_rows
from .riccati import _fddp_knot, _grad_x, _st_vec
from .rollout import CONTACT, FREE, IMPULSE, knot_rows

def _lookup(name):
    return getattr(_rbd, name, None)


# model, q, v, tau, contacts, lam_a, lam_f -> (d2_dq2, d2_dv2, d2_dqdv, d2_dtau_dq) and
# model, q, v_before, contacts, lam_v, lam_f -> (d2_dq2, d2_dqdv); None: not available
CONTRACTIONS = {"contact": _lookup("contact_dynamics_contraction"),
                "impulse": _lookup("impulse_dynamics_contraction")}
_DEFAULT = dict(CONTRACTIONS)   # rbdiff's own: the compiled pass calls their entries


@helper
def _bracket_dot(lam, s, sz, X, cx, Y, cy):
    """lam[s:s + sz] . [X[s:, cx], Y[s:, cy]]: so(3)'s cross product, se(3)'s bracket of
    twists (linear first): [(v1, w1), (v2, w2)] = (w1 x v2 - w2 x v1, w1 x w2)."""
    if sz == 3:
        x0, x1, x2 = X[s, cx], X[s + 1, cx], X[s + 2, cx]
        y0, y1, y2 = Y[s, cy], Y[s + 1, cy], Y[s + 2, cy]
        return (lam[s] * (x1 * y2 - x2 * y1) + lam[s + 1] * (x2 * y0 - x0 * y2)
                + lam[s + 2] * (x0 * y1 - x1 * y0))
    v0, v1, v2 = X[s, cx], X[s + 1, cx], X[s + 2, cx]
    w0, w1, w2 = X[s + 3, cx], X[s + 4, cx], X[s + 5, cx]
    u0, u1, u2 = Y[s, cy], Y[s + 1, cy], Y[s + 2, cy]
    z0, z1, z2 = Y[s + 3, cy], Y[s + 4, cy], Y[s + 5, cy]
    lin0 = (w1 * u2 - w2 * u1) - (z1 * v2 - z2 * v1)
    lin1 = (w2 * u0 - w0 * u2) - (z2 * v0 - z0 * v2)
    lin2 = (w0 * u1 - w1 * u0) - (z0 * v1 - z1 * v0)
    ang0, ang1, ang2 = w1 * z2 - w2 * z1, w2 * z0 - w0 * z2, w0 * z1 - w1 * z0
    return (lam[s] * lin0 + lam[s + 1] * lin1 + lam[s + 2] * lin2 + lam[s + 3] * ang0
            + lam[s + 4] * ang1 + lam[s + 5] * ang2)


@helper
def _rate_columns(lam, s, sz, w, G):
    """G[j, k] = lam[s:s + sz] . dJr(w)[:, j] / dw_k for one Lie block (sz 6: SE(3), w =
    (nu, omega) linear first; 3: SO(3)), closed form: Jr = [[A, Q], [0, A]] with A(w) =
    V(-omega) and Q = coupling(-nu, -omega) (lie.integrate_blocks_se3), so dA[x] =
    -coupling(x, -omega), dQ along nu's x = -coupling(x, -omega) and along omega's x =
    -D_w Q(-nu, -omega)[x] (contact_contraction.coupling_rate_t)."""
    o = sz - 3                          # omega's offset in the block
    wx, wy, wz = -w[s + o], -w[s + o + 1], -w[s + o + 2]
    t2 = wx * wx + wy * wy + wz * wz
    ch, sh, b, c = exp_coefficients(t2)
    b2, c2 = derivative_coefficients(t2, 2.0 * sh * ch, b, c)
    la = (lam[s + o], lam[s + o + 1], lam[s + o + 2])       # omega rows' costate
    z = 0.0 * wx
    if sz == 6:
        b3, c3 = third_coefficients(t2, b, c, b2, c2)
        ll = (lam[s], lam[s + 1], lam[s + 2])
        n = (-w[s], -w[s + 1], -w[s + 2])
    for k in range(3):
        e = (z + 1.0 if k == 0 else z, z + 1.0 if k == 1 else z, z + 1.0 if k == 2 else z)
        X = coupling(e[0], e[1], e[2], wx, wy, wz, b, c, b2, c2)
        if sz == 3:
            ga = m3tv(X, la)
            for j in range(3):
                G[j, k] = -ga[j]
        else:
            gl = m3tv(X, ll)            # -dA^T lam_lin = -dQ(nu along e)^T lam_lin
            ga = m3tv(X, la)
            dq = coupling_rate_t(n, (wx, wy, wz), e, ll, b, c, b2, c2, b3, c3)
            for j in range(3):
                G[j, k] = z                         # A does not depend on nu
                G[3 + j, k] = -gl[j]
                G[j, 3 + k] = -gl[j]
                G[3 + j, 3 + k] = -dq[j] - ga[j]


@entry
def lie_curvature(blocks, lam, w, Jq, Jv, c, P, H):
    """H (nz, nz) += the Lie blocks' second-order part of lam_q . D (module docstring):
    blocks (nb, 2) (first dof, size) of the free flyers (6) and spherical joints (3);
    lam (2nv,) the costate (its q part read); w (nv,) = c v' the step; Jq, Jv (nv, nv)
    integrate's Jacobians at w; P (nv, nz) = [Pq, Pv, Pu] the knot's velocity rows.
    dJr/dw in closed form (_rate_columns)."""
    _lie_kernel(blocks, lam, w, Jq, Jv, c, P, H, np.zeros((6, 6)), np.zeros((6, 6)),
                np.zeros((6, H.shape[0])))


@kernel
def _lie_kernel(blocks, lam, w, Jq, Jv, c, P, H, Hab, G, HW):
    """lie_curvature's work on the caller's scratch: Hab, G (6, 6), HW (6, nz)."""
    if c == 0.0:
        return
    nz = H.shape[0]
    for b in range(blocks.shape[0]):
        s, sz = blocks[b, 0], blocks[b, 1]
        for i in range(sz):
            for j in range(sz):
                Hab[i, j] = 0.5 * _bracket_dot(lam, s, sz, Jq, s + i, Jv, s + j)
        _rate_columns(lam, s, sz, w, G)
        # HW = Hbb W (W = c P[s:s + sz]), Hbb = sym(G); then H += W^T HW and the cross
        # terms E^T Hab W + its transpose
        for j in range(sz):
            for col in range(nz):
                x = 0.0
                for k in range(sz):
                    x += 0.5 * (G[j, k] + G[k, j]) * P[s + k, col]
                HW[j, col] = c * c * x
        for r in range(nz):
            for j in range(sz):
                p = P[s + j, r]
                for col in range(nz):
                    H[r, col] += p * HW[j, col]
        for i in range(sz):
            for col in range(nz):
                x = 0.0
                for j in range(sz):
                    x += Hab[i, j] * P[s + j, col]
                H[s + i, col] += c * x
                H[col, s + i] += c * x


def knot_hessian(prob, t, q, v, u, vnext, parts, lam, lf=None):
    """The Hessian (nx + nu, nx + nu) of lam . f at knot t (module docstring): q, v the
    knot's state, u (nu,) its control, vnext (nv,) its successor's velocity, parts the
    knot's (Pq, Pv, Pu, Jq, Jv, c) (Problem._dynamics_parts at t), lam (2nv,) the next
    knot's costate, lf (ncmax,) or None the forces' costate dl/df."""
    Pq, Pv, Pu, Jq, Jv, c = parts
    m, nv, nu = prob.model, prob.nv, prob.nu
    nx = 2 * nv
    H = np.zeros((nx + nu, nx + nu))
    ly = lam[nv:] + c * (Jv.T @ lam[:nv])
    kind = prob.kind[t]
    off = nv - nu
    contacts = prob.knot_contacts[t]
    nc = sum(ct.dim for ct in contacts)
    f = np.zeros(nc) if lf is None else np.ascontiguousarray(lf[:nc])
    if kind == IMPULSE:
        fn = _needed("impulse")
        dqq, dqv = fn(m, q, v, contacts, ly, f)[:2]
        dvv = duq = None
    else:
        tau = np.zeros(nv)
        tau[off:] = u
        if kind == FREE:
            dqq, dvv, dqv, dtq = _rbd.aba_second_order_contraction(m, q, v, tau,
                                                                   prob.dt * ly)
        else:
            dqq, dvv, dqv, dtq = _needed("contact")(m, q, v, tau, contacts, prob.dt * ly,
                                                     f)
        duq = dtq[off:]
    H[:nv, :nv] = 0.5 * (dqq + dqq.T)
    H[:nv, nv:nx] = dqv
    H[nv:nx, :nv] = dqv.T
    if dvv is not None:
        H[nv:nx, nv:nx] = dvv
    if duq is not None:
        H[nx:, :nv] = duq
        H[:nv, nx:] = duq.T
    if c != 0.0 and prob._lie_blocks.shape[0]:
        P = np.ascontiguousarray(np.concatenate([Pq, Pv, Pu], axis=1))
        lie_curvature(prob._lie_blocks, np.ascontiguousarray(lam), c * vnext,
                      np.ascontiguousarray(Jq), np.ascontiguousarray(Jv), float(c), P, H)
    return H


def _needed(kind):
    fn = CONTRACTIONS[kind]
    if fn is None:
        raise NotImplementedError(
            f"ddp at {kind} knots needs rbdiff's {kind}_dynamics_contraction, which this "
            "build does not have: use method='fddp'")
    return fn


@kernel
def _fill(H4, off, Hz):
    """Hz (nz, nz) = the Hessian blocks of a dynamics contraction H4 = (d2_dq2, d2_dv2,
    d2_dqdv, d2_dtau_dq) in z = (dq, dv, du): the q-q block symmetrised (module
    docstring), u the tau rows from ``off``."""
    n, nz = H4.shape[1], Hz.shape[0]
    nx = 2 * n
    for i in range(nz):
        for j in range(nz):
            Hz[i, j] = 0.0
    for i in range(n):
        for j in range(n):
            Hz[i, j] = 0.5 * (H4[0, i, j] + H4[0, j, i])
            Hz[n + i, n + j] = H4[1, i, j]
            Hz[i, n + j] = H4[2, i, j]
            Hz[n + j, i] = H4[2, i, j]
    for a in range(nz - nx):
        for j in range(n):
            Hz[nx + a, j] = H4[3, off + a, j]
            Hz[j, nx + a] = H4[3, off + a, j]


@entry
def ddp_segment(mi, mf, fparent, fmf, kind, cstart, cint, cflt, external, q, v, u, vx, lf,
                first, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu, fs, reg, feasible, lo,
                hi, k_ff, K_fb, Vx, Vxx, dt, costate, lam, t_hi, sc):
    """Knots t_hi - 1, t_hi - 2, ... of backward_pass_ddp, compiled: each knot's
    contraction (rbdiff's ABA or contact contraction entries, by address: cpu/twin.py)
    with dt lam_y (and lf[t] the forces' costate), its Lie blocks' terms, then the FDDP
    knot with them (riccati._fddp_knot); ``first`` (T, 3, nv + ncmax, nv) the contact
    knots' first-order dynamics derivatives (Problem.derivative_parts'), which the contact
    contraction takes instead of computing them again; ``costate``: lam (2nv,) the
    open-loop costate, updated in place (else V_x'). Stops before a knot whose kind is ``external``
    (the caller computes that one). Returns (stop, failed, sum Q_u.k, sum k.Q_uu.k):
    stop the external knot it stopped at (-1: it reached knot 0), failed the knot whose
    Q_uu is not positive definite (-1: none)."""
    n, nu = Pq.shape[1], Pu.shape[2]
    nx = 2 * n
    nz = nx + nu
    off = n - nu
    Hz = np.empty((nz, nz))
    H4 = np.empty((4, n, n))
    P = np.empty((n, nz))
    tau = np.zeros(n)
    la, w = np.empty(n), np.empty(n)
    wt, lnew = np.empty(nx), np.empty(nx)
    ws = np.empty((workspace_rows(mi), W_WIDTH))
    Hab, G, HW = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, nz))
    dg = 0.0
    dq = 0.0
    for t in range(t_hi - 1, -1, -1):
        if external[kind[t]]:
            return t, -1, dg, dq
        nxt = lam if costate else Vx[t + 1]
        ct = c[t]
        # lam_y = lam_v + c Jv^T lam_q; the contraction's costate: dt lam_y (of a), or
        # lam_y itself at an impulse knot (of v')
        sa = 1.0 if kind[t] == IMPULSE else dt
        for i in range(n):
            s = nxt[n + i]
            for k in range(n):
                s += ct * Jv[t, k, i] * nxt[k]
            la[i] = sa * s
            w[i] = ct * vx[t, i]
        for i in range(nu):
            tau[off + i] = u[t, i]
        s0, e0 = cstart[t], cstart[t + 1]
        nc = knot_rows(cint, s0, e0)
        if kind[t] == IMPULSE:
            for i in range(n):
                for j in range(n):
                    H4[1, i, j] = 0.0       # v' is linear in v; no control
                    H4[3, i, j] = 0.0
            twin_later(impulse_contraction_one, (mi, mf, fparent, fmf, q[t], v[t], la,
                                                 lf[t, :nc], cint[s0:e0], cflt[s0:e0], 0.0,
                                                 0.0, ws, H4[0], H4[2]))
        elif kind[t] == CONTACT:
            twin_later(contact_contraction_given_one,
                       (mi, mf, fparent, fmf, q[t], v[t], tau, la, lf[t, :nc],
                        first[t, :, :n + nc], cint[s0:e0], cflt[s0:e0], 0.0, ws, H4[0], H4[1],
                        H4[2], H4[3]))
        else:
            twin(aba_contraction_one, (mi, mf, q[t], v[t], tau, la, None, H4[0], H4[1],
                                       H4[2], H4[3]))
        _fill(H4, off, Hz)
        if blocks.shape[0] > 0 and ct != 0.0:
            for i in range(n):
                for j in range(n):
                    P[i, j] = Pq[t, i, j]
                    P[i, n + j] = Pv[t, i, j]
                for j in range(nu):
                    P[i, nx + j] = Pu[t, i, j]
            _lie_kernel(blocks, nxt, w, Jq[t], Jv[t], ct, P, Hz, Hab, G, HW)
        if costate:                     # lambda_t = l_x + F_x^T lambda_{t+1}
            _st_vec(lam, Jq[t], Jv[t], ct, blocks, wt)
            _grad_x(lx[t], wt, Pq[t], Pv[t], 0.0, lnew)
            for i in range(nx):
                lam[i] = lnew[i]
        ok, e1, e2 = _fddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, blocks, lx, lu, lxx, luu, lxu,
                                fs, reg, feasible, u, lo, hi, k_ff, K_fb, Vx, Vxx, Hz, sc)
        if not ok:
            return -1, t, 0.0, 0.0
        dg += e1
        dq += 2.0 * e2
    return -1, -1, dg, dq


def backward_pass_ddp(prob, q, v, u, vx, forces, parts, lx, lu, lxx, luu, lxu, fs, reg,
                      feasible, k_ff, K_fb, Vx, Vxx, costate=False, first=None):
    """FDDP's backward pass (riccati.backward_pass_fddp, same arguments and results) with
    the exact curvature of lambda'.f added at every knot (knot_hessian's), lambda' =
    V_x' + V_xx' gap (Crocoddyl's costate: Vx[t + 1] as the pass leaves it) or, with
    ``costate``, the open-loop costate lambda_t = l_x + F_x^T lambda_{t+1} (Pantoja's
    stagewise Newton: from a feasible trajectory its step is Newton's step on the
    controls). Compiled (ddp_segment) but for the knots of a kind whose CONTRACTIONS
    entry is not rbdiff's own (a test's oracle): those run here (knot_hessian,
    riccati.ddp_knot). ``first``: the contact knots' first-order dynamics derivatives
    (Problem.derivative_parts' ``first``; None: computed here). Returns (-1, sum Q_u.k,
    sum k.Q_uu.k) or (knot, 0, 0) where Q_uu is not positive definite."""
    from .riccati import ddp_knot, fddp_scratch
    Pq, Pv, Pu, Jq, Jv, c = parts
    T, nv, m = prob.T, prob.nv, prob.model
    lf = prob.force_costates(forces) if prob.reads_forces else _no_forces(prob)
    lxu = np.zeros((T, 0, 0)) if lxu is None else lxu
    Vxx[T] = lxx[T] + reg * np.eye(2 * nv)
    Vx[T] = lx[T] + (0.0 if feasible else Vxx[T] @ fs[T])
    lam = lx[T].copy()
    sc = fddp_scratch(nv, prob.nu)
    if first is None:
        first = np.zeros((T, 3, nv + max(prob.ncmax, 1), nv))
        prob._dynamics_parts(q, v, u, vx, None, first)
    external = np.array([False, CONTRACTIONS["contact"] is not _DEFAULT["contact"],
                         CONTRACTIONS["impulse"] is not _DEFAULT["impulse"]])
    dg = dq = 0.0
    t_hi = T
    while True:
        stop, failed, e1, e2 = ddp_segment(
            m.mi, m.mf, m.frame_parents, m.frame_mf, prob.kind, prob._cstart, prob._cint,
            prob._cflt, external, q, v, u, vx, lf, first, Pq, Pv, Pu, Jq, Jv, c, prob._lie_blocks,
            lx, lu, lxx, luu, lxu, fs, reg, feasible, prob._lo, prob._hi, k_ff, K_fb, Vx,
            Vxx, prob.dt, costate, lam, t_hi, sc)
        dg += e1
        dq += e2
        if failed >= 0:
            return failed, 0.0, 0.0
        if stop < 0:
            return -1, dg, dq
        t = stop
        nxt = lam if costate else Vx[t + 1]
        kp = (Pq[t], Pv[t], Pu[t], Jq[t], Jv[t], c[t])
        Hz = knot_hessian(prob, t, q[t], v[t], u[t], vx[t], kp, nxt, lf[t])
        if costate:                 # lambda_t = l_x + F_x^T lambda_{t+1} (F_x = S [[I, 0],
            wq = Jq[t].T @ lam[:nv]          # [Pq, Pv]], S = [[Jq, c Jv], [0, I]])
            wv = c[t] * (Jv[t].T @ lam[:nv]) + lam[nv:]
            lam[:] = lx[t] + np.concatenate([wq + Pq[t].T @ wv, Pv[t].T @ wv])
        ok, e1, e2 = ddp_knot(t, Pq, Pv, Pu, Jq, Jv, c, prob._lie_blocks, lx, lu, lxx, luu,
                              lxu, fs, reg, feasible, u, prob._lo, prob._hi, k_ff, K_fb,
                              Vx, Vxx, Hz, sc)
        if not ok:
            return t, 0.0, 0.0
        dg += e1
        dq += e2
        t_hi = t


def _no_forces(prob):
    return np.zeros((prob.T, max(prob.ncmax, 1)))
