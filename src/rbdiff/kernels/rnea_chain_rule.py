"""RNEA chain-rule derivatives: Carpentier & Mansard 2018, Alg. 2 (forward pass) and
Alg. 3 (backward pass), eqs. 11-14, written in the world frame as Pinocchio's
computeRNEADerivatives is. The chain rule is applied to every line of RNEA and the
partial derivatives travel through the tree as motion sets (dv_i/du, da_i/du) and force
sets (df_i/du), one 6-column per dof u that can reach body i: O(N d) columns in all.

World frame. Every spatial quantity is expressed at the world origin in world axes; a
dof m moves its joint's body and everything below it rigidly, with the world twist S_m
per unit of tangent motion, so a world-frame motion x or force f attached to that
subtree varies as dx/dq_m = S_m x x (crm(S_m) x) and df/dq_m = S_m x* f (crf(S_m) f),
and a world inertia as dY/dq_m = crf(S_m) Y - Y crm(S_m). This is eqs. 11-14 (the
derivative of a joint transform acting on a motion or force) written in the one frame
that does not move: the transforms are identities there, and their derivatives become
these cross products on the quantities they carry.

Symbols (spatial.py has the rest of the glossary), for body i, its parent lambda and a
dof m of an ancestor joint of i or of joint i itself (the set anc*(i)):
  S_m      world motion-subspace column of dof m
  vJ, aJ   S_i qd_i and S_i qdd_i (joint velocity and the acceleration it commands)
  h        Y_i v_i, body momentum (Alg. 1 line 10)
  f        Y_i a_i + v_i x* h - X_i* fext_i, body force (Alg. 1 line 11); F sums f over
           the subtree (Alg. 1 line 17)
  dv, da   dv_i/dq_m, da_i/dq_m (Alg. 2 lines 3, 5), dav = da_i/dqd_m (dv_i/dqd_m = S_m)
  dfq, dfv df_i/dq_m, df_i/dqd_m (Alg. 2 line 6), summed over the subtree in the
           backward pass (Alg. 3 line 3)

Forward pass (Alg. 2), world frame, a_0 = -gravity:
  v_i = v_lambda + vJ;  a_i = a_lambda + v_lambda x vJ + aJ
  dv_i/dq_m  = dv_lambda/dq_m + S_m x vJ                   (dvJ/dq_m = S_m x vJ)
  da_i/dq_m  = da_lambda/dq_m + (dv_lambda/dq_m) x vJ + v_lambda x (S_m x vJ) + S_m x aJ
  da_i/dqd_m = da_lambda/dqd_m + S_m x vJ  (m above joint i),  v_lambda x S_m  (m in it)
  dh/dq_m    = S_m x* h + Y (dv - S_m x v_i)                (dY/dq_m v + Y dv)
  df/dq_m    = S_m x* (Y a_i - X* fext) + Y (da - S_m x a_i) + dv x* h + v_i x* dh
  df/dqd_m   = Y dav + S_m x* h + v_i x* (Y S_m)
with the parent's terms zero for the dofs of joint i itself.
Backward pass (Alg. 3), for a dof k of joint i: tau_k = S_k . F_i, so
  dtau_k/dq_m  = S_k . dF_i/dq_m + (S_m x S_k) . F_i       (m in anc*(i); dS_k/dq_m)
  dtau_m/dq_k  = S_m . dF_i/dq_k                            (m strictly above joint i)
  dtau/dqd likewise without the dS term; then dF_lambda/du += dF_i/du for the columns
  lambda can see, and F_lambda += F_i.
dtau/dqdd = M(q) by CRBA (the paper's eq. 10b).

Storage: the columns of body i live in records (one row of ``G`` per dof m in anc*(i),
REC_WIDTH numbers: dv, da, dav, dfq, dfv). Joint i's records start at ``off[i]``: its own
dofs first, then its parent's list in the parent's order, so the parent's record of the
same column is ``off[lambda] + p - nv_i``.
"""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .aba import aba
from .armature import armature_bias_jacobian
from .aba_derivatives import neg_minv_mul_tree
from .aza import neg_minv_mul_aza
from .crba import crba
from .fk import (acceleration_joint, init_universe_at_base, placement_pass_joint, velocity_joint,
                 world_body_inertia)
from .jit import helper, kernel
from .minverse import minverse
from .spatial import axpy6, force_act, set6
from .workspace import D_S, D_U, W_A, W_C, W_F, W_P, W_PA, W_R, W_V, W_VJ, W_Y

# joint rows: aJ = S_i qdd_i (ABA's bias-acceleration columns, free here)
W_AJ = W_C
W_FX = W_PA          # X_i* fext_i (world)
# dof rows: g_k = S_k x* F_i in the backward pass (ABA's U columns, free here)
D_G = D_U
# record columns
REC_DV = 0
REC_DA = 6
REC_DAV = 12
REC_DFQ = 18
REC_DFV = 24
REC_WIDTH = 30


# ---- 6-vectors as tuples of scalars: kept in registers, no scratch arrays ---------------

@helper
def ld6(x):
    return (x[0], x[1], x[2], x[3], x[4], x[5])


@helper
def ld13(x):
    return (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12])


@helper
def st6(t, x):
    x[0] = t[0]
    x[1] = t[1]
    x[2] = t[2]
    x[3] = t[3]
    x[4] = t[4]
    x[5] = t[5]


@helper
def acc6(t, x):
    """x += t."""
    x[0] += t[0]
    x[1] += t[1]
    x[2] += t[2]
    x[3] += t[3]
    x[4] += t[4]
    x[5] += t[5]


@helper
def tadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


@helper
def tsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5])


@helper
def tdot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@helper
def mcr(v, m):
    """v x m (motion cross product)."""
    return (v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4],
            v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5],
            v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3],
            v[4] * m[5] - v[5] * m[4],
            v[5] * m[3] - v[3] * m[5],
            v[3] * m[4] - v[4] * m[3])


@helper
def fcr(v, f):
    """v x* f (force cross product)."""
    return (v[4] * f[2] - v[5] * f[1],
            v[5] * f[0] - v[3] * f[2],
            v[3] * f[1] - v[4] * f[0],
            v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1],
            v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2],
            v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0])


@helper
def ymul(Y, m):
    """Y m for a compact inertia Y (13-tuple)."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    return (ms * m[0] - (h1 * m[5] - h2 * m[4]),
            ms * m[1] - (h2 * m[3] - h0 * m[5]),
            ms * m[2] - (h0 * m[4] - h1 * m[3]),
            h1 * m[2] - h2 * m[1] + Y[4] * m[3] + Y[5] * m[4] + Y[6] * m[5],
            h2 * m[0] - h0 * m[2] + Y[7] * m[3] + Y[8] * m[4] + Y[9] * m[5],
            h0 * m[1] - h1 * m[0] + Y[10] * m[3] + Y[11] * m[4] + Y[12] * m[5])


# ---- records ---------------------------------------------------------------------------

@helper
def record_offsets(mi, off):
    """off (N+2,) int: joint i's records are off[i] .. off[i+1]-1, one per dof of anc*(i)
    (nv_i + the parent's count). Returns the number of records."""
    n = mi[0, 0]
    off[0] = 0
    off[1] = 0
    for i in range(1, n + 1):
        lam = mi[i, MI_PARENT]
        off[i + 1] = off[i] + mi[i, MI_NV] + off[lam + 1] - off[lam]
    return off[n + 1]


# ---- Alg. 2 lines 3 and 5: the motion sets ---------------------------------------------

@helper
def motion_derivatives_own(s, vl, vJ, aJ):
    """(dv_i/dq_m, da_i/dq_m, da_i/dqd_m) for a dof m of joint i itself."""
    w = mcr(s, vJ)
    return w, tadd(mcr(vl, w), mcr(s, aJ)), mcr(vl, s)


@helper
def motion_derivatives_anc(s, pr, vl, vJ, aJ):
    """(dv_i/dq_m, da_i/dq_m, da_i/dqd_m) for a dof m above joint i, from the parent's
    record pr (dv, da, dav of lambda(i) for the same m)."""
    dvl = (pr[0], pr[1], pr[2], pr[3], pr[4], pr[5])
    w = mcr(s, vJ)
    da = tadd(tadd((pr[6], pr[7], pr[8], pr[9], pr[10], pr[11]), mcr(dvl, vJ)),
              tadd(mcr(vl, w), mcr(s, aJ)))
    return tadd(dvl, w), da, tadd((pr[12], pr[13], pr[14], pr[15], pr[16], pr[17]), w)


@helper
def store_motion(dv, da, dav, rec):
    st6(dv, rec[REC_DV:REC_DV + 6])
    st6(da, rec[REC_DA:REC_DA + 6])
    st6(dav, rec[REC_DAV:REC_DAV + 6])


# ---- Alg. 2 lines 4 and 6: the force sets ----------------------------------------------

@helper
def force_derivatives(s, dv, da, dav, vi, ai, Y, h, iaf, rec):
    """df_i/dq_m and df_i/dqd_m of body i into rec (with its motion sets)."""
    sh = fcr(s, h)
    dh = tadd(sh, ymul(Y, tsub(dv, mcr(s, vi))))
    dfq = tadd(tadd(fcr(s, iaf), ymul(Y, tsub(da, mcr(s, ai)))),
               tadd(fcr(dv, h), fcr(vi, dh)))
    dfv = tadd(tadd(ymul(Y, dav), sh), fcr(vi, ymul(Y, s)))
    store_motion(dv, da, dav, rec)
    st6(dfq, rec[REC_DFQ:REC_DFQ + 6])
    st6(dfv, rec[REC_DFV:REC_DFV + 6])


@helper
def joint_accel_command(mi, i, a, ws):
    """aJ = S_i qdd_i into W_AJ."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    aJ = ws[i, W_AJ:W_AJ + 6]
    set6(aJ, 0.0)
    for k in range(mi[i, MI_NV]):
        axpy6(a[iv + k], ws[n + 1 + iv + k, D_S:D_S + 6], aJ)


@helper
def joint_chain_rule(mi, mf, i, a, fext, ws, G, off):
    """Body i's force f_i (into W_F) and the records of every column m in anc*(i), once
    its placement, S, v_i, vJ and a_i are known (Alg. 1 lines 10-11, Alg. 2)."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    nvi = mi[i, MI_NV]
    world_body_inertia(mf, i, ws)
    joint_accel_command(mi, i, a, ws)
    Y = ld13(ws[i, W_Y:W_Y + 13])
    vi = ld6(ws[i, W_V:W_V + 6])
    ai = ld6(ws[i, W_A:W_A + 6])
    vl = ld6(ws[lam, W_V:W_V + 6])
    vJ = ld6(ws[i, W_VJ:W_VJ + 6])
    aJ = ld6(ws[i, W_AJ:W_AJ + 6])
    h = ymul(Y, vi)
    iaf = ymul(Y, ai)
    if fext is not None:    # pruned at compile time when called with None
        if fext.shape[0] > 0:
            force_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], fext[i],
                      ws[i, W_FX:W_FX + 6])
            iaf = tsub(iaf, ld6(ws[i, W_FX:W_FX + 6]))
    st6(tadd(iaf, fcr(vi, h)), ws[i, W_F:W_F + 6])
    r0 = off[i]
    rl = off[lam] - nvi
    for k in range(nvi):
        s = ld6(ws[n + 1 + iv + k, D_S:D_S + 6])
        dv, da, dav = motion_derivatives_own(s, vl, vJ, aJ)
        force_derivatives(s, dv, da, dav, vi, ai, Y, h, iaf, G[r0 + k])
    p = nvi
    j = lam
    while j > 0:
        jv = mi[j, MI_IV]
        for l in range(mi[j, MI_NV]):
            s = ld6(ws[n + 1 + jv + l, D_S:D_S + 6])
            dv, da, dav = motion_derivatives_anc(s, G[rl + p], vl, vJ, aJ)
            force_derivatives(s, dv, da, dav, vi, ai, Y, h, iaf, G[r0 + p])
            p += 1
        j = mi[j, MI_PARENT]


@kernel
def chain_rule_forward_pass(mi, mf, q, v, a, fext, ws, G, off):
    """Alg. 1 and 2 forward: placements, S, v, a (a_0 = -gravity), body forces and the
    records of every body; the world origin at the base (init_universe_at_base): the
    derivatives do not depend on it."""
    init_universe_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        acceleration_joint(mi, i, a, ws)
        joint_chain_rule(mi, mf, i, a, fext, ws, G, off)


@kernel
def chain_rule_dynamics_pass(mi, mf, a, fext, ws, G, off):
    """joint_chain_rule for every joint, on a workspace whose world placements, S, v, vJ
    and a (with qdd = a) an earlier pass left (ABA's two forward passes do)."""
    for i in range(1, mi[0, 0] + 1):
        joint_chain_rule(mi, mf, i, a, fext, ws, G, off)


@kernel
def chain_rule_backward_pass(mi, ws, G, off, dtau_dq, dtau_dv):
    """Alg. 3, i = N..1: the rows of joint i's dofs against anc*(i) and the columns of
    joint i's dofs against the rows above it, then F and the records the parent can see
    move to the parent."""
    n = mi[0, 0]
    for i in range(n, 0, -1):
        lam = mi[i, MI_PARENT]
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        r0 = off[i]
        F = ld6(ws[i, W_F:W_F + 6])
        for k in range(nvi):
            st6(fcr(ld6(ws[n + 1 + iv + k, D_S:D_S + 6]), F),
                ws[n + 1 + iv + k, D_G:D_G + 6])
        p = 0
        j = i
        while j > 0:
            jv = mi[j, MI_IV]
            for l in range(mi[j, MI_NV]):
                m = jv + l
                sm = ld6(ws[n + 1 + m, D_S:D_S + 6])
                rec = G[r0 + p]
                dfq = ld6(rec[REC_DFQ:REC_DFQ + 6])
                dfv = ld6(rec[REC_DFV:REC_DFV + 6])
                for k in range(nvi):
                    r = n + 1 + iv + k
                    sk = ld6(ws[r, D_S:D_S + 6])
                    dtau_dq[iv + k, m] = tdot(sk, dfq) + tdot(sm, ld6(ws[r, D_G:D_G + 6]))
                    dtau_dv[iv + k, m] = tdot(sk, dfv)
                    if j != i:
                        own = G[r0 + k]
                        dtau_dq[m, iv + k] = tdot(sm, ld6(own[REC_DFQ:REC_DFQ + 6]))
                        dtau_dv[m, iv + k] = tdot(sm, ld6(own[REC_DFV:REC_DFV + 6]))
                p += 1
            j = mi[j, MI_PARENT]
        if lam > 0:
            rl = off[lam] - nvi
            for p in range(nvi, off[i + 1] - r0):
                src = G[r0 + p]
                dst = G[rl + p]
                acc6(ld6(src[REC_DFQ:REC_DFQ + 6]), dst[REC_DFQ:REC_DFQ + 6])
                acc6(ld6(src[REC_DFV:REC_DFV + 6]), dst[REC_DFV:REC_DFV + 6])
            acc6(F, ws[lam, W_F:W_F + 6])


@kernel
def rnea_chain_rule(mi, mf, q, v, a, fext, ws, G, off, dtau_dq, dtau_dv, M):
    """dtau_dq, dtau_dv (Alg. 2 and 3) and M = dtau_da (CRBA), each (nv, nv), every entry
    written, at (q, v, a, fext). ws: (workspace_rows, W_WIDTH); off: (N+2,) int filled by
    record_offsets; G: (records, >= REC_WIDTH); fext (njoints, 6) local-frame forces,
    (0, 6) or None."""
    dtau_dq[:, :] = 0.0
    dtau_dv[:, :] = 0.0
    chain_rule_forward_pass(mi, mf, q, v, a, fext, ws, G, off)
    chain_rule_backward_pass(mi, ws, G, off, dtau_dq, dtau_dv)
    armature_bias_jacobian(mi, mf, v, dtau_dv)
    crba(mi, mf, q, ws, M)


@kernel
def aba_derivatives_chain_rule(mi, mf, q, v, tau, fext, ws, G, off, qdd, S3, F,
                               dqdd_dq, dqdd_dv, Minv, use_aza):
    """dqdd_dq, dqdd_dv and Minv = dqdd_dtau (each (nv, nv)) at (q, v, tau, fext):
    qdd = ABA, the chain-rule ID derivatives at (q, v, qdd), M^-1 without M, then
    Carpentier & Mansard 2018 eq. 24 by DMM (neg_minv_mul_tree) or, with use_aza, by
    the ABA-zero algorithm (aza.py). ws: (workspace_rows, W_WIDTH), or aza.AZA_WIDTH
    with use_aza; S3: (3, nv, nv) scratch; F: (njoints, nv, 6)."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    # ABA leaves world placements, S, v, vJ and a (with qdd) in ws. DMM needs no zeroing
    # of S3: the backward pass writes every entry of the branch pattern, DMM reads no other
    chain_rule_dynamics_pass(mi, mf, qdd, fext, ws, G, off)
    if use_aza:                 # AZA's sweeps read whole columns
        S3[0, :, :] = 0.0
        S3[1, :, :] = 0.0
    chain_rule_backward_pass(mi, ws, G, off, S3[0], S3[1])
    armature_bias_jacobian(mi, mf, v, S3[1])
    minverse(mi, mf, q, ws, F, Minv)
    if use_aza:
        neg_minv_mul_aza(mi, ws, S3[0], S3[1], dqdd_dq, dqdd_dv)
    else:
        neg_minv_mul_tree(mi, Minv, S3[0], S3[1], dqdd_dq, dqdd_dv, S3[2, 0], S3[2, 1])
