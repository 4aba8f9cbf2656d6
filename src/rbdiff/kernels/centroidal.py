"""Centre of mass, centroidal momentum and the energies (Pinocchio's centerOfMass,
jacobianCenterOfMass, computeCentroidalMap, computeCentroidalMomentum(TimeVariation),
computeKineticEnergy, computePotentialEnergy; Orin, Goswami & Lee 2013 for the
centroidal momentum matrix).

World frame, as the rest of the kernels (spatial.py's glossary): every spatial quantity
is expressed at the world origin in world axes. For body i with world inertia Y_i
(compact: mass m_i, first moment h_i = m_i c_i about the origin, rotational inertia Io),
velocity v_i and acceleration a_i (gravity excluded: the pass starts from a_0 = 0):
  M          total mass sum m_i;  H = sum h_i;  com c = H / M
  hO         sum Y_i v_i, the momentum about the world origin
  fO         sum Y_i a_i + v_i x* Y_i v_i = d hO / dt (no gravity, as Pinocchio's dhg)
  hg, dhg    hO and fO moved to the com: [l; n - c x l] (same axes)
  IC_j       composite inertia of joint j's subtree; Ag's column of a dof k of joint j
             is IC_j S_k moved to the com, and Jcom's is its linear part over M
  KE         0.5 sum v_i . Y_i v_i + 0.5 sum_k armature_k v_k^2 (= 0.5 v^T M v);
  PE         -g . H
"""

from ..model.layout import (MF_ARM, MF_COM, MF_GRAVITY, MF_H, MF_IC, MF_MASS, MI_IV, MI_NV,
                            MI_PARENT)
from .fk import (acceleration_joint, init_universe, origin_at_base,
                 placement_pass_joint, velocity_joint, world_body_inertia,
                 world_placement_joint)
from .jit import helper, kernel
from .kinematics_derivatives import store_column
from .rnea_chain_rule import fcr, ld6, ld13, ymul
from .spatial import add13
from .workspace import D_S, W_A, W_P, W_R, W_V, W_Y


@helper
def init_motion(mf, ws):
    """Row 0: identity placement, zero velocity and acceleration (gravity excluded:
    Pinocchio's vcom, acom and dhg carry none)."""
    init_universe(mf, ws)
    ws[0, W_A] = 0.0
    ws[0, W_A + 1] = 0.0
    ws[0, W_A + 2] = 0.0


@helper
def init_motion_at_base(mi, mf, q, ws):
    """init_motion with the world origin at the root free flyer (fk.origin_at_base),
    for the results a translation of the world leaves alone (momenta about the com,
    Jcom, kinetic energy): exact at any distance from the origin."""
    init_motion(mf, ws)
    origin_at_base(mi, mf, q, ws)


@helper
def motion_pass(mi, mf, q, v, a, ws):
    """World placements, S, and, unless None (pruned at compile time), velocities and
    accelerations without gravity; the world origin at the base (the centroidal
    derivatives do not depend on it)."""
    init_motion_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        if v is not None:
            velocity_joint(mi, i, v, ws)
            if a is not None:
                acceleration_joint(mi, i, a, ws)


@helper
def first_moment(mf, i, ws):
    """h_i = R_i (m c)_local + m p_i, body i's first moment about the world origin."""
    R = ws[i, W_R:W_R + 9]
    p = ws[i, W_P:W_P + 3]
    m = mf[i, MF_MASS]
    x, y, z = mf[i, MF_H], mf[i, MF_H + 1], mf[i, MF_H + 2]
    return (R[0] * x + R[1] * y + R[2] * z + m * p[0],
            R[3] * x + R[4] * y + R[5] * z + m * p[1],
            R[6] * x + R[7] * y + R[8] * z + m * p[2])


@helper
def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@helper
def linear_momentum(m, h, v):
    """[Y v]_lin = m v_lin - h x w for a body of mass m and first moment h."""
    return (m * v[0] - (h[1] * v[5] - h[2] * v[4]),
            m * v[1] - (h[2] * v[3] - h[0] * v[5]),
            m * v[2] - (h[0] * v[4] - h[1] * v[3]))


@helper
def at_com(c, f):
    """The force f (about the world origin) about the point c: [l; n - c x l]."""
    return (f[0], f[1], f[2],
            f[3] - (c[1] * f[2] - c[2] * f[1]),
            f[4] - (c[2] * f[0] - c[0] * f[2]),
            f[5] - (c[0] * f[1] - c[1] * f[0]))


@helper
def body_com(mf, i, ws):
    """Body i's centre of mass in the world, R_i c_local + p_i."""
    R = ws[i, W_R:W_R + 9]
    p = ws[i, W_P:W_P + 3]
    x, y, z = mf[i, MF_COM], mf[i, MF_COM + 1], mf[i, MF_COM + 2]
    return (R[0] * x + R[1] * y + R[2] * z + p[0], R[3] * x + R[4] * y + R[5] * z + p[1],
            R[6] * x + R[7] * y + R[8] * z + p[2])


@helper
def rotational_mul(mf, i, ws, w):
    """R_i Ic R_i^T w: body i's rotational inertia about its com, world axes, times w
    (two rotations and a 3x3 product: cheaper than forming Y_i)."""
    R = ws[i, W_R:W_R + 9]
    I = mf[i, MF_IC:MF_IC + 9]
    x = R[0] * w[0] + R[3] * w[1] + R[6] * w[2]
    y = R[1] * w[0] + R[4] * w[1] + R[7] * w[2]
    z = R[2] * w[0] + R[5] * w[1] + R[8] * w[2]
    lx = I[0] * x + I[1] * y + I[2] * z
    ly = I[3] * x + I[4] * y + I[5] * z
    lz = I[6] * x + I[7] * y + I[8] * z
    return (R[0] * lx + R[1] * ly + R[2] * lz, R[3] * lx + R[4] * ly + R[5] * lz,
            R[6] * lx + R[7] * ly + R[8] * lz)


@helper
def com_form_mul(mf, i, ws, c, x):
    """Y_i x for a motion x (at the world origin), from the body's mass m, world com c
    and rotational inertia: l = m (x_lin + x_ang x c), n = c x l + R Ic R^T x_ang."""
    m = mf[i, MF_MASS]
    w = (x[3], x[4], x[5])
    wc = cross3(w, c)
    l = (m * (x[0] + wc[0]), m * (x[1] + wc[1]), m * (x[2] + wc[2]))
    cl = cross3(c, l)
    r = rotational_mul(mf, i, ws, w)
    return (l[0], l[1], l[2], cl[0] + r[0], cl[1] + r[1], cl[2] + r[2])


@helper
def total_first_moment(mi, mf, ws):
    """(M, H): total mass and first moment about the origin (placements in ws)."""
    m = 0.0 * mf[0, MF_MASS]
    h0 = h1 = h2 = 0.0 * ws[0, W_R]       # q's scalar type (complex in the complex step)
    for i in range(1, mi[0, 0] + 1):
        h = first_moment(mf, i, ws)
        m += mf[i, MF_MASS]
        h0 += h[0]
        h1 += h[1]
        h2 += h[2]
    return m, (h0, h1, h2)


# ---- values ----------------------------------------------------------------------------

@kernel
def center_of_mass(mi, mf, q, v, a, ws, com, vcom, acom):
    """com (3,) and, unless None (then v, resp. a, is None too), vcom and acom (3,):
    M vcom = sum [Y_i v_i]_lin, M acom = sum [Y_i a_i]_lin + w_i x [Y_i v_i]_lin."""
    n = mi[0, 0]
    init_motion(mf, ws)
    m = 0.0 * mf[0, MF_MASS]
    z = 0.0 * ws[0, W_R]                  # q's scalar type (complex in the complex step)
    H = (z, z, z)
    P = (z, z, z)
    Pd = (z, z, z)
    for i in range(1, n + 1):
        if v is None:
            world_placement_joint(mi, mf, i, q, ws)
        else:
            placement_pass_joint(mi, mf, i, q, ws)
            velocity_joint(mi, i, v, ws)
        mi_ = mf[i, MF_MASS]
        h = first_moment(mf, i, ws)
        m += mi_
        H = (H[0] + h[0], H[1] + h[1], H[2] + h[2])
        if v is not None:
            vi = ld6(ws[i, W_V:W_V + 6])
            p = linear_momentum(mi_, h, vi)
            P = (P[0] + p[0], P[1] + p[1], P[2] + p[2])
            if a is not None:
                acceleration_joint(mi, i, a, ws)
                pa = linear_momentum(mi_, h, ld6(ws[i, W_A:W_A + 6]))
                wp = cross3((vi[3], vi[4], vi[5]), p)
                Pd = (Pd[0] + pa[0] + wp[0], Pd[1] + pa[1] + wp[1], Pd[2] + pa[2] + wp[2])
    for k in range(3):
        com[k] = H[k] / m
        if vcom is not None:
            vcom[k] = P[k] / m
        if acom is not None:
            acom[k] = Pd[k] / m


@kernel
def com_jacobian(mi, mf, q, ws, J):
    """J (3, nv): column k of a dof of joint j = [IC_j S_k]_lin / M, with only the mass
    and first moment of each subtree accumulated (ws[j, W_Y:W_Y + 4])."""
    n = mi[0, 0]
    init_motion_at_base(mi, mf, q, ws)
    m = 0.0 * mf[0, MF_MASS]
    for i in range(1, n + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        h = first_moment(mf, i, ws)
        ws[i, W_Y] = mf[i, MF_MASS]
        ws[i, W_Y + 1] = h[0]
        ws[i, W_Y + 2] = h[1]
        ws[i, W_Y + 3] = h[2]
        m += mf[i, MF_MASS]
    inv = 1.0 / m
    for i in range(n, 0, -1):
        ms = ws[i, W_Y]
        h = (ws[i, W_Y + 1], ws[i, W_Y + 2], ws[i, W_Y + 3])
        iv = mi[i, MI_IV]
        for d in range(iv, iv + mi[i, MI_NV]):
            p = linear_momentum(ms, h, ws[n + 1 + d, D_S:D_S + 6])
            J[0, d] = p[0] * inv
            J[1, d] = p[1] * inv
            J[2, d] = p[2] * inv
        lam = mi[i, MI_PARENT]
        for k in range(4):
            ws[lam, W_Y + k] += ws[i, W_Y + k]


@kernel
def centroidal_map(mi, mf, q, ws, Ag):
    """Ag (6, nv): column k of a dof of joint j = IC_j S_k about the com (composite
    inertias summed leaves to root, as CRBA's)."""
    n = mi[0, 0]
    init_motion_at_base(mi, mf, q, ws)
    for i in range(1, n + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        world_body_inertia(mf, i, ws)
    m, H = total_first_moment(mi, mf, ws)
    c = (H[0] / m, H[1] / m, H[2] / m)
    for i in range(n, 0, -1):
        IC = ld13(ws[i, W_Y:W_Y + 13])
        iv = mi[i, MI_IV]
        for d in range(iv, iv + mi[i, MI_NV]):
            store_column(at_com(c, ymul(IC, ws[n + 1 + d, D_S:D_S + 6])), Ag, d)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])


@kernel
def centroidal_momentum(mi, mf, q, v, a, ws, hg, dhg):
    """hg (6,) = Ag v and, unless None (then a is None too), dhg (6,) = d hg / dt, both
    about the com: the sums hO, fO of the module docstring moved there."""
    n = mi[0, 0]
    init_motion_at_base(mi, mf, q, ws)
    z = 0.0 * ws[0, W_R]
    h = (z, z, z, z, z, z)
    f = (z, z, z, z, z, z)
    for i in range(1, n + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        vi = ld6(ws[i, W_V:W_V + 6])
        ci = body_com(mf, i, ws)
        hi = com_form_mul(mf, i, ws, ci, vi)
        h = (h[0] + hi[0], h[1] + hi[1], h[2] + hi[2], h[3] + hi[3], h[4] + hi[4],
             h[5] + hi[5])
        if a is not None:
            acceleration_joint(mi, i, a, ws)
            fa = com_form_mul(mf, i, ws, ci, ld6(ws[i, W_A:W_A + 6]))
            fb = fcr(vi, hi)
            f = (f[0] + fa[0] + fb[0], f[1] + fa[1] + fb[1], f[2] + fa[2] + fb[2],
                 f[3] + fa[3] + fb[3], f[4] + fa[4] + fb[4], f[5] + fa[5] + fb[5])
    m, H = total_first_moment(mi, mf, ws)
    c = (H[0] / m, H[1] / m, H[2] / m)
    x = at_com(c, h)
    for k in range(6):
        hg[k] = x[k]
    if dhg is not None:
        x = at_com(c, f)
        for k in range(6):
            dhg[k] = x[k]


@kernel
def kinetic_energy(mi, mf, q, v, ws):
    """0.5 sum_i v_i . Y_i v_i + 0.5 sum_k armature_k v_k^2 (= 0.5 v^T M(q) v)."""
    init_motion_at_base(mi, mf, q, ws)
    e = 0.0 * v[0]
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        vi = ld6(ws[i, W_V:W_V + 6])
        f = com_form_mul(mf, i, ws, body_com(mf, i, ws), vi)
        e += vi[0] * f[0] + vi[1] * f[1] + vi[2] * f[2] + vi[3] * f[3] + vi[4] * f[4] \
            + vi[5] * f[5]
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            e += mf[i, MF_ARM + k] * v[iv + k] * v[iv + k]
    return 0.5 * e


@kernel
def potential_energy(mi, mf, q, ws):
    """-g . H = -sum_i m_i g . c_i."""
    init_motion(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        world_placement_joint(mi, mf, i, q, ws)
    _, H = total_first_moment(mi, mf, ws)
    return -(mf[0, MF_GRAVITY] * H[0] + mf[0, MF_GRAVITY + 1] * H[1]
             + mf[0, MF_GRAVITY + 2] * H[2])
