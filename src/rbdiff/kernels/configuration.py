"""Configuration space as Pinocchio defines it: each joint is a Lie group, q (+) v =
``integrate`` (the configuration reached from q by the tangent velocity v in unit time)
and q1 (-) q0 = ``difference`` (the v with q0 (+) v = q1), joint by joint:

=================== ======================= ===========================================
joint (layout.py)   group, q                integrate / difference
=================== ======================= ===========================================
REVOLUTE, PRISMATIC R, the coordinate       q + v / q1 - q0
REVOLUTE_UNBOUNDED  SO(2), (cos, sin)       q rotated by v / atan2 of q0^-1 q1
SPHERICAL           SO(3), quaternion       quat exp(w) / log(conj(quat0) quat1)
FREE_FLYER          SE(3), [p, quaternion], p + R(quat) V(w) nu and quat exp(w) /
                    v = [nu, w] body twist  w = log(conj(quat0) quat1),
                                            nu = V(w)^-1 R(quat0)^T (p1 - p0)
=================== ======================= ===========================================

Glossary: quaternions are [x, y, z, w] (w the scalar part) composed on the right (the
step is in the body frame); ``w`` (a 3-vector) is a rotation vector, t = |w| its angle
and t2 = t^2; exp(w) = [sin(t/2) w / t, cos(t/2)]; log is its inverse on the shortest arc
(quaternion scalar part >= 0, t <= pi); ``nu`` the linear part of a body twist;
V(w) = I + b [w]x + c [w]x^2 with b = (1 - cos t) / t^2, c = (t - sin t) / t^3 (the left
Jacobian of SO(3): exp of the twist [nu, w] translates by V(w) nu) and
V(w)^-1 = I - [w]x / 2 + d [w]x^2 with d = 1 / t^2 - cot(t/2) / (2 t).

Pinocchio's formulas (liegroup/special-euclidean.hxx, special-orthogonal.hxx,
spatial/explog-quaternion.hxx): integrate renormalises every quaternion and (cos, sin)
pair to first order (x *= (3 - |x|^2) / 2) and keeps a free flyer's new quaternion in
the half-space of the old one (quat' . quat >= 0); quaternions rotate vectors by
Eigen's formula p + w u + vec x u, u = 2 vec x p. Where Pinocchio's formulas lose digits
these are exact to rounding instead: b = 2 (sin(t/2) / t)^2 has no cancellation (1 -
cos t does, 1e-12 relative near t = 1e-4), log divides by |vec| rather than
sin(t/2) (so it ignores a quaternion's norm, which the checks allow to be 1 +- 1e-6),
and SO(2)'s angle is an atan2, not Pinocchio's asin / acos (which lose half the digits
next to +-pi).

Small angles use the Taylor series of b, c, d and sin(t/2) / t below t = 1e-4 (t2 <
``SERIES_T2``), and of 2 atan(s / w) / s below s = |vec| = 1e-8 (``LOG_SERIES_S2``),
where the truncation error is far below rounding (the same branches as the NumPy
reference in rbdiff/model/configuration.py).

Generic in the scalar type: every branch is decided on real parts and every value is
computed with arithmetic, sqrt, trig.sincos and arctan, analytic functions, so
complex128 carries a complex step through the manifold (``integrate(q, 1j h e_k)``:
the imaginary part of the result is h times the tangent derivative); float32 inputs are
computed partly in float64 and stored as float32.
"""

import numpy as np

from ..model.layout import (FREE_FLYER, MI_IQ, MI_IV, MI_RUN, MI_TYPE, PRISMATIC,
                            REVOLUTE_UNBOUNDED, SPHERICAL)
from .jit import helper
from .trig import sincos

SERIES_T2 = 1e-8       # t^2 below which exp, V and V^-1 use their Taylor series
LOG_SERIES_S2 = 1e-16  # |vec|^2 below which log uses the series of 2 atan(s / w) / s
PI = np.pi
HALF_PI = 0.5 * np.pi


# ---- scalar helpers --------------------------------------------------------------------


@helper
def atan2_analytic(y, x):
    """atan2(y, x) from np.arctan of a ratio, the quadrant chosen on real parts: the same
    value as atan2 for real arguments (within an ulp), and analytic for complex ones."""
    yr = y.real
    xr = x.real
    if abs(xr) >= abs(yr):
        if xr == 0.0:
            return 0.0 * y          # atan2(0, 0)
        a = np.arctan(y / x)
        if xr < 0.0:
            if yr >= 0.0:
                return a + PI
            return a - PI
        return a
    if yr > 0.0:
        return HALF_PI - np.arctan(x / y)
    return -HALF_PI - np.arctan(x / y)


@helper
def quat_mul(ax, ay, az, aw, bx, by, bz, bw):
    """The Hamilton product a b of quaternions [x, y, z, w]."""
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by + ay * bw + az * bx - ax * bz,
            aw * bz + az * bw + ax * by - ay * bx,
            aw * bw - ax * bx - ay * by - az * bz)


@helper
def quat_rotate(x, y, z, w, px, py, pz):
    """R(quat) p by Eigen's formula: p + w u + vec x u with u = 2 vec x p."""
    ux = 2.0 * (y * pz - z * py)
    uy = 2.0 * (z * px - x * pz)
    uz = 2.0 * (x * py - y * px)
    return (px + w * ux + (y * uz - z * uy),
            py + w * uy + (z * ux - x * uz),
            pz + w * uz + (x * uy - y * ux))


@helper
def exp_coefficients(t2):
    """(cos(t/2), sin(t/2) / t, b, c) of the angle t = sqrt(t2): exp(w) = [(sin(t/2) / t)
    w, cos(t/2)] and V(w) = I + b [w]x + c [w]x^2 (see the module docstring)."""
    if abs(t2.real) < SERIES_T2:
        return (1.0 - t2 / 8.0 + t2 * t2 / 384.0, 0.5 - t2 / 48.0 + t2 * t2 / 3840.0,
                0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0)
    t = np.sqrt(t2)
    ch, sh = sincos(0.5 * t)
    sh = sh / t
    return ch, sh, 2.0 * sh * sh, (1.0 - 2.0 * sh * ch) / t2   # sin t / t = 2 sh ch


@helper
def log_coefficients(x, y, z, w):
    """(k, d) for the quaternion [x, y, z, w]: log = k vec (the shortest arc: k < 0 when
    w < 0) and V(log)^-1 = I - [w]x / 2 + d [w]x^2."""
    sign = 1.0
    if w.real < 0.0:
        sign = -1.0
        w = -w
    s2 = x * x + y * y + z * z
    if abs(s2.real) < LOG_SERIES_S2:
        k = 2.0 / w * (1.0 - s2 / (3.0 * w * w))
    else:
        s = np.sqrt(s2)
        k = 2.0 * atan2_analytic(s, w) / s        # theta / s, theta in [0, pi]
    t2 = k * k * s2
    if abs(t2.real) < SERIES_T2:
        d = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    else:
        d = 1.0 / t2 - w / (2.0 * k * s2)        # cot(t/2) / (2 t), cot(t/2) = w / s
    return sign * k, d


@helper
def first_order_normalise(x, y, z, w):
    """Pinocchio's quaternion::firstOrderNormalize: x *= (3 - |x|^2) / 2 (the norm
    squared taken without conjugates, so the complex step stays analytic)."""
    a = 0.5 * (3.0 - (x * x + y * y + z * z + w * w))
    return a * x, a * y, a * z, a * w


# ---- integrate, one joint --------------------------------------------------------------


@helper
def add_run(x, ix, y, iy, r, out):
    """out[ix:ix + r] = x[ix:ix + r] + y[iy:iy + r]; the indices are unsigned, so no
    negative-index wraparound is compiled in (which keeps the loop from vectorising)."""
    a = np.uint64(ix)
    b = np.uint64(iy)
    for k in range(np.uint64(r)):
        out[a + k] = x[a + k] + y[b + k]


@helper
def subtract_run(x, y, ix, r, out, iout):
    """out[iout:iout + r] = x[ix:ix + r] - y[ix:ix + r] (unsigned indices, as add_run)."""
    a = np.uint64(ix)
    b = np.uint64(iout)
    for k in range(np.uint64(r)):
        out[b + k] = x[a + k] - y[a + k]


@helper
def integrate_so2(q, iq, v, iv, qout):
    c, s = q[iq], q[iq + 1]
    cv, sv = sincos(v[iv])
    oc = cv * c - sv * s
    os = sv * c + cv * s
    a = 0.5 * (3.0 - (oc * oc + os * os))
    qout[iq] = a * oc
    qout[iq + 1] = a * os


@helper
def integrate_so3(q, iq, v, iv, qout):
    wx, wy, wz = v[iv], v[iv + 1], v[iv + 2]
    ch, sh, _, _ = exp_coefficients(wx * wx + wy * wy + wz * wz)
    x, y, z, w = quat_mul(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], sh * wx, sh * wy, sh * wz, ch)
    x, y, z, w = first_order_normalise(x, y, z, w)
    qout[iq] = x
    qout[iq + 1] = y
    qout[iq + 2] = z
    qout[iq + 3] = w


@helper
def integrate_se3(q, iq, v, iv, qout):
    nx, ny, nz = v[iv], v[iv + 1], v[iv + 2]
    wx, wy, wz = v[iv + 3], v[iv + 4], v[iv + 5]
    qx, qy, qz, qw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
    ch, sh, b, c = exp_coefficients(wx * wx + wy * wy + wz * wz)
    cx = wy * nz - wz * ny                  # w x nu
    cy = wz * nx - wx * nz
    cz = wx * ny - wy * nx
    dx, dy, dz = quat_rotate(qx, qy, qz, qw,                    # R V(w) nu
                             nx + b * cx + c * (wy * cz - wz * cy),
                             ny + b * cy + c * (wz * cx - wx * cz),
                             nz + b * cz + c * (wx * cy - wy * cx))
    qout[iq] = q[iq] + dx
    qout[iq + 1] = q[iq + 1] + dy
    qout[iq + 2] = q[iq + 2] + dz
    x, y, z, w = quat_mul(qx, qy, qz, qw, sh * wx, sh * wy, sh * wz, ch)
    if (x * qx + y * qy + z * qz + w * qw).real < 0.0:    # stay on quat's side (t > pi)
        x, y, z, w = -x, -y, -z, -w
    x, y, z, w = first_order_normalise(x, y, z, w)
    qout[iq + 3] = x
    qout[iq + 4] = y
    qout[iq + 5] = z
    qout[iq + 6] = w


# ---- difference, one joint -------------------------------------------------------------


@helper
def difference_so2(q0, q1, iq, iv, v):
    c0, s0, c1, s1 = q0[iq], q0[iq + 1], q1[iq], q1[iq + 1]
    v[iv] = atan2_analytic(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)


@helper
def log_so3(q0, q1, iq):
    """(w, d): w = log(conj(quat0) quat1) of the quaternions at q0[iq:iq + 4], q1[iq:iq + 4],
    and d, V(w)^-1's coefficient (log_coefficients)."""
    x, y, z, w = quat_mul(-q0[iq], -q0[iq + 1], -q0[iq + 2], q0[iq + 3],
                          q1[iq], q1[iq + 1], q1[iq + 2], q1[iq + 3])
    k, d = log_coefficients(x, y, z, w)
    return k * x, k * y, k * z, d


@helper
def difference_so3(q0, q1, iq, iv, v):
    wx, wy, wz, _ = log_so3(q0, q1, iq)
    v[iv] = wx
    v[iv + 1] = wy
    v[iv + 2] = wz


@helper
def log_se3(q0, q1, iq):
    """(nu, w, d): the twist [nu, w] = log(M0^-1 M1) of the free flyers at q0[iq:iq + 7],
    q1[iq:iq + 7], and d, V(w)^-1's coefficient (log_coefficients)."""
    ax, ay, az, aw = -q0[iq + 3], -q0[iq + 4], -q0[iq + 5], q0[iq + 6]     # conj(quat0)
    px, py, pz = quat_rotate(ax, ay, az, aw, q1[iq] - q0[iq], q1[iq + 1] - q0[iq + 1],
                             q1[iq + 2] - q0[iq + 2])                     # R0^T (p1 - p0)
    x, y, z, w = quat_mul(ax, ay, az, aw, q1[iq + 3], q1[iq + 4], q1[iq + 5], q1[iq + 6])
    return log_placement(x, y, z, w, px, py, pz)


@helper
def log_placement(x, y, z, w, px, py, pz):
    """(nu, w, d): the twist log of the placement (quaternion [x, y, z, w], translation
    p), nu = V(w)^-1 p, and d, V(w)^-1's coefficient (log_coefficients)."""
    k, d = log_coefficients(x, y, z, w)
    wx, wy, wz = k * x, k * y, k * z
    cx = wy * pz - wz * py                  # w x p
    cy = wz * px - wx * pz
    cz = wx * py - wy * px
    return (px - 0.5 * cx + d * (wy * cz - wz * cy),
            py - 0.5 * cy + d * (wz * cx - wx * cz),
            pz - 0.5 * cz + d * (wx * cy - wy * cx), wx, wy, wz, d)


@helper
def difference_se3(q0, q1, iq, iv, v):
    nx, ny, nz, wx, wy, wz, _ = log_se3(q0, q1, iq)
    v[iv] = nx
    v[iv + 1] = ny
    v[iv + 2] = nz
    v[iv + 3] = wx
    v[iv + 4] = wy
    v[iv + 5] = wz


# ---- drivers ---------------------------------------------------------------------------
# Inlined into their entry points (``helper``, not ``kernel``): an out-of-line call passes
# each array as ~7 scalars, which costs as much as integrating a 9-joint arm (~20 ns).


@helper
def integrate(mi, q, v, qout):
    """qout (nq,) = q (+) v for q (nq,), v (nv,) (qout must not alias q)."""
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:          # a run of revolute / prismatic joints: one vector
            r = max(mi[i, MI_RUN], 1)
            add_run(q, iq, v, iv, r, qout)
            i += r
            continue
        if t == FREE_FLYER:
            integrate_se3(q, iq, v, iv, qout)
        elif t == SPHERICAL:
            integrate_so3(q, iq, v, iv, qout)
        else:
            integrate_so2(q, iq, v, iv, qout)
        i += 1


@helper
def difference(mi, q0, q1, v):
    """v (nv,) = q1 (-) q0, the tangent vector with q0 (+) v = q1."""
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:
            r = max(mi[i, MI_RUN], 1)
            subtract_run(q1, q0, iq, r, v, iv)
            i += r
            continue
        if t == FREE_FLYER:
            difference_se3(q0, q1, iq, iv, v)
        elif t == SPHERICAL:
            difference_so3(q0, q1, iq, iv, v)
        else:
            difference_so2(q0, q1, iq, iv, v)
        i += 1


@helper
def neutral(mi, q):
    """q (nq,) = the neutral configuration: zeros, (1, 0) pairs, identity quaternions."""
    for k in range(q.shape[0]):
        q[k] = 0.0
    for i in range(1, mi[0, 0] + 1):
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        if t == FREE_FLYER:
            q[iq + 6] = 1.0
        elif t == SPHERICAL:
            q[iq + 3] = 1.0
        elif t == REVOLUTE_UNBOUNDED:
            q[iq] = 1.0


# ---- the front ends' ambient q: retraction and the transpose of its tangent map ------
# rbdiff.torch and rbdiff.jax take q in its ambient layout and evaluate f(retract(q));
# the derivative in q is the tangent derivative times rbdiff.model.tangent's map
# e = T(q) dq. A backward (a vector-Jacobian product) needs T(q)^T w: written here once,
# per joint, for the compiled VJP entries (cpu/vjp.py).


@helper
def _normalise_block(q, k, n, qr):
    """qr[k:k+n] = q[k:k+n] / |q[k:k+n]|; False where the norm is not positive."""
    r2 = q[k] * q[k]
    for i in range(1, n):
        r2 += q[k + i] * q[k + i]
    if not r2.real > 0.0:
        return False
    r = np.sqrt(r2)
    for i in range(n):
        qr[k + i] = q[k + i] / r
    return True


@helper
def retract(mi, q, qr):
    """qr (nq,) = q with every quaternion and (cos, sin) pair divided by its norm
    (rbdiff.model.tangent's retract); False where one has a zero (or NaN) norm, qr then
    unfinished."""
    for k in range(q.shape[0]):
        qr[k] = q[k]
    ok = True
    for i in range(1, mi[0, 0] + 1):
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        if t == FREE_FLYER:
            ok &= _normalise_block(q, iq + 3, 4, qr)
        elif t == SPHERICAL:
            ok &= _normalise_block(q, iq, 4, qr)
        elif t == REVOLUTE_UNBOUNDED:
            ok &= _normalise_block(q, iq, 2, qr)
    return ok


@helper
def _quaternion_vjp(q, k, w, j, out):
    """out[k:k+4] = T^T w[j:j+3] for the quaternion block x = q[k:k+4] of a spherical
    joint (or a free flyer's rotation): with r = |x|, n = x / r = (u, n_w), the map
    e = (2 / r) (n_w dx_u - dx_w u - u x dx_u) transposed gives (2 / r) (n_w g + u x g)
    and -(2 / r) u . g (g = w[j:j+3]). Returns n."""
    x0, x1, x2, x3 = q[k], q[k + 1], q[k + 2], q[k + 3]
    r = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2 + x3 * x3)
    n0, n1, n2, n3 = x0 / r, x1 / r, x2 / r, x3 / r
    g0, g1, g2 = w[j], w[j + 1], w[j + 2]
    s = 2.0 / r
    out[k] = s * (n3 * g0 + (n1 * g2 - n2 * g1))
    out[k + 1] = s * (n3 * g1 + (n2 * g0 - n0 * g2))
    out[k + 2] = s * (n3 * g2 + (n0 * g1 - n1 * g0))
    out[k + 3] = -s * (n0 * g0 + n1 * g1 + n2 * g2)
    return n0, n1, n2, n3


@helper
def tangent_vjp(mi, q, w, out):
    """out (nq,) = T(q)^T w for w (nv,): the transpose of rbdiff.model.tangent's
    ambient-to-tangent map at q (which need not be on the manifold), joint by joint:
    revolute, prismatic: w; continuous (c, s): (-s, c) w / (c^2 + s^2); spherical:
    _quaternion_vjp; free flyer: R(n) w_lin (e_lin = R(n)^T dp), then the rotation's."""
    for i in range(1, mi[0, 0] + 1):
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:
            out[iq] = w[iv]
        elif t == REVOLUTE_UNBOUNDED:
            c = q[iq]
            s = q[iq + 1]
            g = w[iv] / (c * c + s * s)
            out[iq] = -s * g
            out[iq + 1] = c * g
        elif t == SPHERICAL:
            _quaternion_vjp(q, iq, w, iv, out)
        else:
            x, y, z, qw = _quaternion_vjp(q, iq + 3, w, iv + 3, out)
            px, py, pz = quat_rotate(x, y, z, qw, w[iv], w[iv + 1], w[iv + 2])
            out[iq] = px
            out[iq + 1] = py
            out[iq + 2] = pz
