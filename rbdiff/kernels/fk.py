"""Forward kinematics: joint placements, world motion subspaces, velocities and
accelerations (the first pass of every recursive algorithm)."""

import numpy as np

from ..model.layout import (FREE_FLYER, MF_AXIS, MF_GRAVITY, MF_P, MF_R, MF_S, MI_IQ,
                            MI_IV, MI_NV, MI_PARENT, MI_TYPE, PRISMATIC, REVOLUTE,
                            REVOLUTE_UNBOUNDED, SPHERICAL)
from .jit import kernel
from .spatial import motion_act, motion_cross, rot_axis_angle, rot_quat, se3_mul
from .workspace import D_S, W_A, W_LP, W_LR, W_P, W_R, W_T, W_V, W_VJ


@kernel
def joint_placement(mi, mf, i, q, R, p, Rj):
    """(R, p) = Xtree_i XJ(q_i), joint i's placement in its parent's frame (Rj: 9 scratch)."""
    t = mi[i, MI_TYPE]
    iq = mi[i, MI_IQ]
    Rt = mf[i, MF_R:MF_R + 9]
    pt = mf[i, MF_P:MF_P + 3]
    if t == REVOLUTE:
        rot_axis_angle(mf[i, MF_AXIS:MF_AXIS + 3], np.cos(q[iq]), np.sin(q[iq]), Rj)
    elif t == REVOLUTE_UNBOUNDED:
        rot_axis_angle(mf[i, MF_AXIS:MF_AXIS + 3], q[iq], q[iq + 1], Rj)
    elif t == SPHERICAL:
        rot_quat(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], Rj)
    elif t == FREE_FLYER:
        rot_quat(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], Rj)
    if t == PRISMATIC:
        for r in range(9):
            R[r] = Rt[r]
    else:
        for r in range(3):
            for c in range(3):
                R[3 * r + c] = (Rt[3 * r] * Rj[c] + Rt[3 * r + 1] * Rj[3 + c]
                                + Rt[3 * r + 2] * Rj[6 + c])
    for r in range(3):
        p[r] = pt[r]
    if t == PRISMATIC:
        ax = mf[i, MF_AXIS:MF_AXIS + 3]
        for r in range(3):
            p[r] += (Rt[3 * r] * ax[0] + Rt[3 * r + 1] * ax[1] + Rt[3 * r + 2] * ax[2]) * q[iq]
    elif t == FREE_FLYER:
        for r in range(3):
            p[r] += Rt[3 * r] * q[iq] + Rt[3 * r + 1] * q[iq + 1] + Rt[3 * r + 2] * q[iq + 2]


@kernel
def init_universe(mf, ws):
    """Row 0: identity placement, zero velocity, acceleration -gravity (Featherstone's
    trick: gravity enters as a fictitious base acceleration)."""
    for k in range(ws.shape[1]):
        ws[0, k] = 0.0
    ws[0, W_R] = 1.0
    ws[0, W_R + 4] = 1.0
    ws[0, W_R + 8] = 1.0
    for k in range(3):
        ws[0, W_A + k] = -mf[0, MF_GRAVITY + k]


@kernel
def placement_pass_joint(mi, mf, i, q, ws):
    """oMi = oM_parent liMi and the world motion-subspace columns S of joint i."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    joint_placement(mi, mf, i, q, ws[i, W_LR:W_LR + 9], ws[i, W_LP:W_LP + 3],
                    ws[i, W_T:W_T + 9])
    se3_mul(ws[lam, W_R:W_R + 9], ws[lam, W_P:W_P + 3], ws[i, W_LR:W_LR + 9],
            ws[i, W_LP:W_LP + 3], ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3])
    iv = mi[i, MI_IV]
    for k in range(mi[i, MI_NV]):
        motion_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], mf[i, MF_S + 6 * k:MF_S + 6 * k + 6],
                   ws[n + 1 + iv + k, D_S:D_S + 6])


@kernel
def velocity_joint(mi, i, v, ws):
    """v_i = v_parent + S_i qd_i; the joint velocity S_i qd_i is left in VJ."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    for r in range(6):
        ws[i, W_VJ + r] = 0.0
    for k in range(mi[i, MI_NV]):
        for r in range(6):
            ws[i, W_VJ + r] += ws[n + 1 + iv + k, D_S + r] * v[iv + k]
    for r in range(6):
        ws[i, W_V + r] = ws[lam, W_V + r] + ws[i, W_VJ + r]


@kernel
def acceleration_joint(mi, i, a, ws):
    """a_i = a_parent + S_i qdd_i + v_parent x (S_i qd_i) (after velocity_joint)."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    motion_cross(ws[lam, W_V:W_V + 6], ws[i, W_VJ:W_VJ + 6], ws[i, W_T:W_T + 6])
    for r in range(6):
        ws[i, W_A + r] = ws[lam, W_A + r] + ws[i, W_T + r]
    for k in range(mi[i, MI_NV]):
        for r in range(6):
            ws[i, W_A + r] += ws[n + 1 + iv + k, D_S + r] * a[iv + k]


@kernel
def placement_pass(mi, mf, q, ws):
    init_universe(mf, ws)
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
