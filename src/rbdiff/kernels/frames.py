"""Forward kinematics as Pinocchio returns it, frame placements and frame Jacobians
(Pinocchio's forwardKinematics, updateFramePlacement(s) and computeFrameJacobian).

Symbols (spatial.py's glossary): oMi joint i's placement in the world, liMi its placement
in its parent's frame (kernels/fk.py's joint_placement), iMf a frame's placement in its
parent joint's frame (the model's frame table: ``frame_parents``, ``frame_mf``,
model/layout.py), oMf = oMi iMf. v_i, a_i: body i's spatial velocity and acceleration in
its own frame (gravity excluded), as Pinocchio's data.v, data.a:
  v_i = liMi^-1 v_parent + S_i qd_i,   a_i = liMi^-1 a_parent + S_i qdd_i + v_i x S_i qd_i
with S_i the joint-frame motion subspace (Featherstone 2008 Table 5.1, RNEA's forward
pass without gravity).

A frame Jacobian has a column for every dof on the support of its parent joint j (j and
its ancestors) and zeros elsewhere. With S_k the world column of dof k (fk.py) and
oMf = (R, p):
  WORLD                J_k = S_k                  (velocity at the world origin)
  LOCAL_WORLD_ALIGNED  J_k = [v_k + w_k x p; w_k]  (at the frame's origin, world axes)
  LOCAL                J_k = oMf^-1 S_k            (in the frame itself)
Single frames compute only the support's placements: joint k is on the support of j when
j's first dof lies in k's subtree (depth-first numbering: ``MI_NVSUB``), so the joints
1..j are scanned in order, parents first, with no list of the path.

Every placement goes through world_placement_joint in the same order, so a frame's
placement is bit for bit the same from frame_placement, frame_placements and
forward_kinematics (for a joint frame). Outputs are written whole (every entry).
"""

from ..model.layout import FM_ID, FM_P, FM_R, MF_S, MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .fk import origin_at_base, placement_pass_joint, world_placement_joint
from .jit import helper, kernel
from .kinematics_derivatives import (LOCAL, LOCAL_WORLD_ALIGNED, WORLD, at_point,
                                     store_column, xinv)
from .rnea_chain_rule import mcr, st6, tadd
from .spatial import set6
from .workspace import D_S, W_LP, W_LR, W_P, W_R


# ---- placements ------------------------------------------------------------------------

@helper
def init_placement(ws):
    """Row 0: the universe at the identity (the only part of row 0 the passes read)."""
    for k in range(12):
        ws[0, W_R + k] = 0.0
    ws[0, W_R] = 1.0
    ws[0, W_R + 4] = 1.0
    ws[0, W_R + 8] = 1.0


@helper
def on_support(mi, k, j):
    """True when joint k is joint j or one of its ancestors."""
    first = mi[k, MI_IV]
    return first <= mi[j, MI_IV] < first + mi[k, MI_NVSUB]


@helper
def store_placement(R, p, T):
    """T (4, 4) = [[R, p], [0, 1]] (R row-major 9, p 3)."""
    for r in range(3):
        T[r, 0] = R[3 * r]
        T[r, 1] = R[3 * r + 1]
        T[r, 2] = R[3 * r + 2]
        T[r, 3] = p[r]
        T[3, r] = 0.0
    T[3, 3] = 1.0


@helper
def frame_pose(Ra, pa, fm):
    """oMf = (Ra, pa) iMf as tuples (R row-major 9, p 3); fm: the frame's table row. The
    arithmetic of spatial.se3_mul, or oMi itself where iMf is the identity (FM_ID: most
    URDF frames; the product's value, without its ~5 ns)."""
    if fm[FM_ID] != 0.0:
        return ((Ra[0], Ra[1], Ra[2], Ra[3], Ra[4], Ra[5], Ra[6], Ra[7], Ra[8]),
                (pa[0], pa[1], pa[2]))
    Rb = fm[FM_R:FM_R + 9]
    x, y, z = fm[FM_P], fm[FM_P + 1], fm[FM_P + 2]
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = Ra[0], Ra[1], Ra[2], Ra[3], Ra[4], Ra[5], Ra[6], \
        Ra[7], Ra[8]
    R = (a0 * Rb[0] + a1 * Rb[3] + a2 * Rb[6], a0 * Rb[1] + a1 * Rb[4] + a2 * Rb[7],
         a0 * Rb[2] + a1 * Rb[5] + a2 * Rb[8], a3 * Rb[0] + a4 * Rb[3] + a5 * Rb[6],
         a3 * Rb[1] + a4 * Rb[4] + a5 * Rb[7], a3 * Rb[2] + a4 * Rb[5] + a5 * Rb[8],
         a6 * Rb[0] + a7 * Rb[3] + a8 * Rb[6], a6 * Rb[1] + a7 * Rb[4] + a8 * Rb[7],
         a6 * Rb[2] + a7 * Rb[5] + a8 * Rb[8])
    p = (a0 * x + a1 * y + a2 * z + pa[0], a3 * x + a4 * y + a5 * z + pa[1],
         a6 * x + a7 * y + a8 * z + pa[2])
    return R, p


@helper
def joint_frame_pose(ws, j, fm):
    """oMf of a frame on joint j (oMj in ws row j)."""
    return frame_pose(ws[j, W_R:W_R + 9], ws[j, W_P:W_P + 3], fm)


@kernel
def support_placements(mi, mf, j, q, ws):
    """oMk (ws rows W_R, W_P) of joint j and its ancestors, parents first."""
    init_placement(ws)
    for k in range(1, j + 1):
        if on_support(mi, k, j):
            world_placement_joint(mi, mf, k, q, ws)


@kernel
def frame_placement(mi, mf, fparent, fmf, q, frame, ws, T):
    """T (4, 4) = oMf of frame ``frame`` (model.frames index)."""
    j = fparent[frame]
    support_placements(mi, mf, j, q, ws)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    store_placement(R, p, T)


@kernel
def frame_placements(mi, mf, fparent, fmf, q, ws, T):
    """T (nframes, 4, 4): oMf of every frame."""
    init_placement(ws)
    for i in range(1, mi[0, 0] + 1):
        world_placement_joint(mi, mf, i, q, ws)
    for f in range(fparent.shape[0]):
        R, p = joint_frame_pose(ws, fparent[f], fmf[f])
        store_placement(R, p, T[f])


# ---- frame Jacobians -------------------------------------------------------------------

@helper
def jacobian_column(s, reference, R, p):
    """World column s of a dof re-expressed in ``reference`` for the frame oMf = (R, p)."""
    if reference == LOCAL:
        return xinv(R, p, s)
    if reference == LOCAL_WORLD_ALIGNED:
        return at_point(p, s)
    return (s[0], s[1], s[2], s[3], s[4], s[5])


@kernel
def frame_jacobian(mi, mf, fparent, fmf, q, frame, reference, ws, J):
    """J (6, nv): the Jacobian of frame ``frame`` in ``reference`` (kinematics_derivatives'
    codes WORLD, LOCAL, LOCAL_WORLD_ALIGNED); columns off the support are zero."""
    n = mi[0, 0]
    j = fparent[frame]
    for r in range(6):
        for m in range(J.shape[1]):
            J[r, m] = 0.0
    init_placement(ws)
    if reference != WORLD:      # at the frame: the base's position does not enter
        origin_at_base(mi, mf, q, ws)
    for k in range(1, j + 1):
        if on_support(mi, k, j):
            placement_pass_joint(mi, mf, k, q, ws)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    k = j
    while k > 0:
        for d in range(mi[k, MI_IV], mi[k, MI_IV] + mi[k, MI_NV]):
            store_column(jacobian_column(ws[n + 1 + d, D_S:D_S + 6], reference, R, p), J, d)
        k = mi[k, MI_PARENT]


# ---- forward kinematics (Pinocchio's oMi, v, a) ----------------------------------------

@helper
def subspace_times(mf, i, nvi, x, k0):
    """S_i x[k0:k0+nvi] in joint i's frame, a 6-tuple (kept in registers)."""
    t = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(nvi):
        s = mf[i, MF_S + 6 * k:MF_S + 6 * k + 6]
        c = x[k0 + k]
        t = (t[0] + c * s[0], t[1] + c * s[1], t[2] + c * s[2],
             t[3] + c * s[3], t[4] + c * s[4], t[5] + c * s[5])
    return t


@helper
def local_velocity_joint(mi, mf, i, v, ws, vel):
    """v_i = liMi^-1 v_parent + S_i qd_i (joint frame) into vel[i]; returns (v_i, S_i qd_i)
    as tuples for the acceleration."""
    vJ = subspace_times(mf, i, mi[i, MI_NV], v, mi[i, MI_IV])
    vi = tadd(xinv(ws[i, W_LR:W_LR + 9], ws[i, W_LP:W_LP + 3], vel[mi[i, MI_PARENT]]), vJ)
    st6(vi, vel[i])
    return vi, vJ


@helper
def local_acceleration_joint(mi, mf, i, a, ws, vi, vJ, acc):
    """a_i = liMi^-1 a_parent + S_i qdd_i + v_i x S_i qd_i into acc[i]."""
    ai = xinv(ws[i, W_LR:W_LR + 9], ws[i, W_LP:W_LP + 3], acc[mi[i, MI_PARENT]])
    st6(tadd(tadd(ai, subspace_times(mf, i, mi[i, MI_NV], a, mi[i, MI_IV])), mcr(vi, vJ)),
        acc[i])


@kernel
def forward_kinematics(mi, mf, q, v, a, ws, oMi, vel, acc):
    """oMi (njoints, 4, 4) and, unless None (pruned at compile time), the local
    velocities vel and accelerations acc (njoints, 6); v is needed for either, a for
    acc. Row 0 is the universe: identity, zero motion."""
    init_placement(ws)
    store_placement(ws[0, W_R:W_R + 9], ws[0, W_P:W_P + 3], oMi[0])
    if vel is not None:
        set6(vel[0], 0.0)
    if acc is not None:
        set6(acc[0], 0.0)
    for i in range(1, mi[0, 0] + 1):
        world_placement_joint(mi, mf, i, q, ws)
        store_placement(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], oMi[i])
        if vel is not None:
            vi, vJ = local_velocity_joint(mi, mf, i, v, ws, vel)
            if acc is not None:
                local_acceleration_joint(mi, mf, i, a, ws, vi, vJ, acc)
