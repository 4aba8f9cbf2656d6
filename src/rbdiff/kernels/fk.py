"""Forward kinematics: joint placements, world motion subspaces, velocities and
accelerations (the first pass of every recursive algorithm)."""

from ..model.layout import (FREE_FLYER, MF_AXIS, MF_GRAVITY, MF_H, MF_IO, MF_MASS, MF_P,
                            MF_R, MF_S, MI_IQ, MI_IV, MI_NV, MI_PARENT, MI_ROOT_FREE_FLYER,
                            MI_TYPE, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL)
from .jit import helper, kernel
from .spatial import (add6, axpy6, inertia_act, mat3_mul, motion_act, motion_cross,
                      revolute_act, rot_mul_axis_angle, rot_quat, se3_mul, set6)
from .trig import sincos
from .workspace import D_S, W_A, W_LP, W_LR, W_P, W_R, W_T, W_V, W_VJ, W_Y


@helper
def free_flyer_translation(mf, i, q, iq):
    """p = p_tree + R_tree q[iq:iq+3], the translation of free flyer i's liMi."""
    Rt = mf[i, MF_R:MF_R + 9]
    pt = mf[i, MF_P:MF_P + 3]
    return (pt[0] + q[iq] * Rt[0] + q[iq + 1] * Rt[1] + q[iq + 2] * Rt[2],
            pt[1] + q[iq] * Rt[3] + q[iq + 1] * Rt[4] + q[iq + 2] * Rt[5],
            pt[2] + q[iq] * Rt[6] + q[iq + 1] * Rt[7] + q[iq + 2] * Rt[8])


@helper
def joint_placement(mi, mf, i, q, R, p, Rj):
    """(R, p) = Xtree_i XJ(q_i), joint i's placement in its parent's frame (Rj: 9 scratch)."""
    t = mi[i, MI_TYPE]
    iq = mi[i, MI_IQ]
    Rt = mf[i, MF_R:MF_R + 9]
    pt = mf[i, MF_P:MF_P + 3]
    ax = mf[i, MF_AXIS:MF_AXIS + 3]
    x, y, z = pt[0], pt[1], pt[2]
    if t == REVOLUTE:
        c, s = sincos(q[iq])
        rot_mul_axis_angle(Rt, ax, c, s, R, Rj)
    elif t == REVOLUTE_UNBOUNDED:
        rot_mul_axis_angle(Rt, ax, q[iq], q[iq + 1], R, Rj)
    elif t == SPHERICAL:
        rot_quat(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], Rj)
        mat3_mul(Rt, Rj, R)
    elif t == FREE_FLYER:
        rot_quat(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], Rj)
        mat3_mul(Rt, Rj, R)
        x, y, z = free_flyer_translation(mf, i, q, iq)
    else:   # prismatic: no rotation
        for k in range(9):
            R[k] = Rt[k]
        d = q[iq]
        x, y, z = x + d * (Rt[0] * ax[0] + Rt[1] * ax[1] + Rt[2] * ax[2]), \
            y + d * (Rt[3] * ax[0] + Rt[4] * ax[1] + Rt[5] * ax[2]), \
            z + d * (Rt[6] * ax[0] + Rt[7] * ax[1] + Rt[8] * ax[2])
    p[0] = x
    p[1] = y
    p[2] = z


@helper
def init_universe(mf, ws):
    """Row 0: identity placement, zero velocity, acceleration -gravity (Featherstone's
    trick: gravity enters as a fictitious base acceleration)."""
    ws[0, :] = 0.0
    ws[0, W_R] = 1.0
    ws[0, W_R + 4] = 1.0
    ws[0, W_R + 8] = 1.0
    for k in range(3):
        ws[0, W_A + k] = -mf[0, MF_GRAVITY + k]


@helper
def root_free_flyer(mi):
    """The first root joint (parent 0) that is a free flyer, or 0 when there is none
    (found when the model is packed: no scan of the joints per call)."""
    return mi[0, MI_ROOT_FREE_FLYER]


@helper
def origin_at_base(mi, mf, q, ws):
    """oM0 = (I, -p), p the root free flyer's translation: every oMi placed after it
    comes out relative to the base, exact at any distance from the origin, for the
    results a translation of the world leaves alone (gravity, a pure linear
    acceleration, is unchanged by it). A point x of this frame is x - ws[0, P] in the
    world (world_point)."""
    b = root_free_flyer(mi)
    if b > 0:
        x, y, z = free_flyer_translation(mf, b, q, mi[b, MI_IQ])
        ws[0, W_P] = -x
        ws[0, W_P + 1] = -y
        ws[0, W_P + 2] = -z


@helper
def init_universe_at_base(mi, mf, q, ws):
    """init_universe with the world origin at the root free flyer (origin_at_base)."""
    init_universe(mf, ws)
    origin_at_base(mi, mf, q, ws)


@helper
def world_point(ws, x):
    """Point x of the workspace's frame in the world frame (x - oM0's translation: zero
    after init_universe, -p_base after init_universe_at_base)."""
    return (x[0] - ws[0, W_P], x[1] - ws[0, W_P + 1], x[2] - ws[0, W_P + 2])


@helper
def world_placement_joint(mi, mf, i, q, ws):
    """liMi (LR, LP) and oMi = oM_parent liMi (R, P) of joint i."""
    lam = mi[i, MI_PARENT]
    joint_placement(mi, mf, i, q, ws[i, W_LR:W_LR + 9], ws[i, W_LP:W_LP + 3],
                    ws[i, W_T:W_T + 9])
    se3_mul(ws[lam, W_R:W_R + 9], ws[lam, W_P:W_P + 3], ws[i, W_LR:W_LR + 9],
            ws[i, W_LP:W_LP + 3], ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3])


@helper
def placement_pass_joint(mi, mf, i, q, ws):
    """oMi = oM_parent liMi and the world motion-subspace columns S of joint i."""
    n = mi[0, 0]
    world_placement_joint(mi, mf, i, q, ws)
    iv = mi[i, MI_IV]
    t = mi[i, MI_TYPE]
    if t == REVOLUTE or t == REVOLUTE_UNBOUNDED:     # S = [0; axis]: half the products
        revolute_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], mf[i, MF_AXIS:MF_AXIS + 3],
                     ws[n + 1 + iv, D_S:D_S + 6])
        return
    for k in range(mi[i, MI_NV]):
        motion_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], mf[i, MF_S + 6 * k:MF_S + 6 * k + 6],
                   ws[n + 1 + iv + k, D_S:D_S + 6])


@helper
def velocity_joint(mi, i, v, ws):
    """v_i = v_parent + S_i qd_i; the joint velocity S_i qd_i is left in VJ."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    vJ = ws[i, W_VJ:W_VJ + 6]
    set6(vJ, 0.0)
    for k in range(mi[i, MI_NV]):
        axpy6(v[iv + k], ws[n + 1 + iv + k, D_S:D_S + 6], vJ)
    vi = ws[i, W_V:W_V + 6]
    set6(vi, 0.0)
    add6(ws[lam, W_V:W_V + 6], vi)
    add6(vJ, vi)


@helper
def acceleration_joint(mi, i, a, ws):
    """a_i = a_parent + S_i qdd_i + v_parent x (S_i qd_i) (after velocity_joint)."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    ai = ws[i, W_A:W_A + 6]
    motion_cross(ws[lam, W_V:W_V + 6], ws[i, W_VJ:W_VJ + 6], ai)
    add6(ws[lam, W_A:W_A + 6], ai)
    for k in range(mi[i, MI_NV]):
        axpy6(a[iv + k], ws[n + 1 + iv + k, D_S:D_S + 6], ai)


@helper
def world_body_inertia(mf, i, ws):
    """Y_i: body i's inertia (given about its joint frame) about the world origin."""
    inertia_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], mf[i, MF_MASS],
                mf[i, MF_H:MF_H + 3], mf[i, MF_IO:MF_IO + 9], ws[i, W_Y:W_Y + 13])


@kernel
def placement_pass(mi, mf, q, ws):
    """Placements and S relative to the base (init_universe_at_base): M, M^-1 and the
    impulse solve do not depend on where the base is."""
    init_universe_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)


@kernel
def kinematics_pass(mi, mf, q, v, a, ws):
    """World placements, S, velocities and accelerations (gravity included in a)."""
    init_universe(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        acceleration_joint(mi, i, a, ws)
