"""Jacobians of integrate and difference on the configuration Lie group (Pinocchio's
``dIntegrate``, ``dDifference`` and ``dIntegrateTransport``), joint by joint: each is
block diagonal, one block per joint, in the tangent spaces of kernels/configuration.py.

With q' = integrate(q, v) = q exp(v) and v = difference(q0, q1) = log(q0^-1 q1):

=================== ============ ============ ===================== ====================
joint               d q' / d q   d q' / d v   d diff / d q0         d diff / d q1
=================== ============ ============ ===================== ====================
revolute, prismatic 1            1            -1                    1
continuous SO(2)    1            1            -1                    1
spherical SO(3)     R(v)^T       Jr(v)        -Jr(-v)^-1            Jr(v)^-1
free flyer SE(3)    Ad(exp(-v))  Jr(v)        -Jr(-v)^-1            Jr(v)^-1
=================== ============ ============ ===================== ====================

(for difference, v is the difference itself; -Jr(-v)^-1 = -Jr(v)^-1 Ad(exp(-v)), the
form Pinocchio writes). Glossary: K = [w]x and N = [nu]x the cross-product matrices of
a twist's angular and linear parts, t2 = |w|^2, s = w . nu; b, c the coefficients of the
left Jacobian of SO(3), Jl(w) = V(w) = I + b K + c K^2 (kernels/configuration.py), and
b2 = db / dt2, c2 = dc / dt2; Jr(w) = Jl(-w) the right Jacobian, Jr(w)^-1 = I + K / 2 +
d K^2; R(w) = I + sinc K + b K^2 the rotation (sinc = sin t / t). Every 3x3 matrix
here is I + alpha K + beta K^2 (:func:`rodrigues`) but SE(3)'s coupling blocks.

SE(3) (twists [nu, w], linear first): Jl(nu, w) = [[Jl(w), Q(nu, w)], [0, Jl(w)]] where
Q(nu, w) is the directional derivative of Jl(w) along nu (Barfoot's Q: the series
sum K^a N K^b / (a + b + 2)! is term by term that derivative), so
Q(nu, w) = b N + c (K N + N K) + 2 s (b2 K + c2 K^2) (:func:`coupling`), and Jr(nu, w) =
Jl(-nu, -w); Jr^-1 = [[A^-1, -A^-1 Q A^-1], [0, A^-1]] with A = Jr(w) and Q its coupling
block; Ad(exp(-v)) = [[R^T, -R^T [p]x], [0, R^T]] with p = V(w) nu the translation of
exp(v).

Transport (``dIntegrateTransport``) is the product of d q' / d q or d q' / d v with a
matrix J (nv, k), joint block by joint block (rows of J in, the same rows out), without
forming the Jacobian.

Generic in the scalar type (complex128 carries a complex step, as kernels/configuration.py):
b2 and c2 use their Taylor series below t2 = ``DERIVATIVE_SERIES_T2``, where the closed forms
(sinc - 2 b) / (2 t2) and (b - 3 c) / (2 t2) lose digits to cancellation.
"""

from ..model.layout import FREE_FLYER, MI_IQ, MI_IV, MI_RUN, MI_TYPE, PRISMATIC, SPHERICAL
from .configuration import exp_coefficients, log_se3, log_so3
from .jit import helper

DERIVATIVE_SERIES_T2 = 1e-2   # t2 below which b2 and c2 use their series (6 terms: exact)
ARG_Q = 0                     # transport by d integrate / d q (Pinocchio's ARG0)
ARG_V = 1                     # transport by d integrate / d v (ARG1)


# ---- coefficients and 3x3 blocks (9-tuples, row-major) ---------------------------------


@helper
def derivative_coefficients(t2, sinc, b, c):
    """(b2, c2) = (db / dt2, dc / dt2) for b = (1 - cos t) / t2, c = (t - sin t) / t^3."""
    if abs(t2.real) < DERIVATIVE_SERIES_T2:
        u = t2
        b2 = (-1.0 / 24.0 + u * (2.0 / 720.0 + u * (-3.0 / 40320.0 + u * (
            4.0 / 3628800.0 + u * (-5.0 / 479001600.0 + u * (6.0 / 87178291200.0))))))
        c2 = (-1.0 / 120.0 + u * (2.0 / 5040.0 + u * (-3.0 / 362880.0 + u * (
            4.0 / 39916800.0 + u * (-5.0 / 6227020800.0 + u * (6.0 / 1307674368000.0))))))
        return b2, c2
    return (sinc - 2.0 * b) / (2.0 * t2), (b - 3.0 * c) / (2.0 * t2)


THIRD_SERIES_T2 = 1.0         # t2 below which b3 and c3 use their series (10 terms: exact)


@helper
def third_coefficients(t2, b, c, b2, c2):
    """(b3, c3) = (d2b / dt2^2, d2c / dt2^2) (the derivative of SE(3)'s coupling block
    along w, kernels/contact_contraction.py's log6 Hessian): the closed forms
    (-c - t2 c2 - 4 b2) / (2 t2) and (b2 - 5 c2) / (2 t2) lose digits below t2 = 1, where
    the series sum (-1)^m (m+2)(m+1) t2^m / (2m+6)! (resp. (2m+7)!) is used."""
    if abs(t2.real) < THIRD_SERIES_T2:
        u = t2
        b3 = 2.0 / 720.0 + u * (-6.0 / 40320.0 + u * (12.0 / 3628800.0 + u * (-20.0 / 479001600.0 + u * (30.0 / 87178291200.0 + u * (-42.0 / 20922789888000.0 + u * (56.0 / 6402373705728000.0 + u * (-72.0 / 2432902008176640000.0 + u * (90.0 / 1124000727777607680000.0 + u * (-110.0 / 620448401733239439360000.0)))))))))
        c3 = 2.0 / 5040.0 + u * (-6.0 / 362880.0 + u * (12.0 / 39916800.0 + u * (-20.0 / 6227020800.0 + u * (30.0 / 1307674368000.0 + u * (-42.0 / 355687428096000.0 + u * (56.0 / 121645100408832000.0 + u * (-72.0 / 51090942171709440000.0 + u * (90.0 / 25852016738884976640000.0 + u * (-110.0 / 15511210043330985984000000.0)))))))))
        return b3, c3
    return (-c - t2 * c2 - 4.0 * b2) / (2.0 * t2), (b2 - 5.0 * c2) / (2.0 * t2)


@helper
def rodrigues(wx, wy, wz, alpha, beta):
    """I + alpha K + beta K^2 with K = [w]x (K^2 = w w^T - t2 I), row-major."""
    t2 = wx * wx + wy * wy + wz * wz
    dg = 1.0 - beta * t2
    bxy = beta * wx * wy
    bxz = beta * wx * wz
    byz = beta * wy * wz
    return (dg + beta * wx * wx, bxy - alpha * wz, bxz + alpha * wy,
            bxy + alpha * wz, dg + beta * wy * wy, byz - alpha * wx,
            bxz - alpha * wy, byz + alpha * wx, dg + beta * wz * wz)


@helper
def coupling(nx, ny, nz, wx, wy, wz, b, c, b2, c2):
    """Q(nu, w) = b N + c (K N + N K) + 2 s (b2 K + c2 K^2), SE(3)'s coupling block, with
    K N + N K = w nu^T + nu w^T - 2 s I (b, c, b2, c2 taken at t2 = |w|^2)."""
    s = wx * nx + wy * ny + wz * nz
    t2 = wx * wx + wy * wy + wz * wz
    k = 2.0 * s * b2
    e = 2.0 * s * c2
    dg = -2.0 * c * s - e * t2
    xy = c * (wx * ny + nx * wy) + e * wx * wy
    xz = c * (wx * nz + nx * wz) + e * wx * wz
    yz = c * (wy * nz + ny * wz) + e * wy * wz
    return (dg + 2.0 * c * wx * nx + e * wx * wx, xy - b * nz - k * wz, xz + b * ny + k * wy,
            xy + b * nz + k * wz, dg + 2.0 * c * wy * ny + e * wy * wy, yz - b * nx - k * wx,
            xz - b * ny - k * wy, yz + b * nx + k * wx, dg + 2.0 * c * wz * nz + e * wz * wz)


@helper
def mat3_mul(A, B):
    """A B of row-major 3x3 tuples."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = A
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = B
    return (a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7,
            a0 * b2 + a1 * b5 + a2 * b8,
            a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7,
            a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7,
            a6 * b2 + a7 * b5 + a8 * b8)


@helper
def put3(M, sign, J, r, c):
    """J[r:r + 3, c:c + 3] = sign * M."""
    m0, m1, m2, m3, m4, m5, m6, m7, m8 = M
    J[r, c] = sign * m0
    J[r, c + 1] = sign * m1
    J[r, c + 2] = sign * m2
    J[r + 1, c] = sign * m3
    J[r + 1, c + 1] = sign * m4
    J[r + 1, c + 2] = sign * m5
    J[r + 2, c] = sign * m6
    J[r + 2, c + 1] = sign * m7
    J[r + 2, c + 2] = sign * m8


@helper
def zero(J):
    for i in range(J.shape[0]):
        for j in range(J.shape[1]):
            J[i, j] = 0.0


# ---- the blocks of one joint -----------------------------------------------------------


@helper
def integrate_blocks_so3(wx, wy, wz):
    """(d q' / d q, d q' / d v) of SO(3) at the step w: (R(w)^T, Jr(w))."""
    ch, sh, b, c = exp_coefficients(wx * wx + wy * wy + wz * wz)
    return rodrigues(wx, wy, wz, -2.0 * sh * ch, b), rodrigues(wx, wy, wz, -b, c)


@helper
def integrate_blocks_se3(nx, ny, nz, wx, wy, wz):
    """SE(3)'s upper-triangular blocks at the step [nu, w]: d q' / d q = [[Rt, -Rt_p],
    [0, Rt]] = Ad(exp(-v)), d q' / d v = [[A, Q], [0, A]] = Jr(v)."""
    t2 = wx * wx + wy * wy + wz * wz
    ch, sh, b, c = exp_coefficients(t2)
    sinc = 2.0 * sh * ch
    b2, c2 = derivative_coefficients(t2, sinc, b, c)
    Rt = rodrigues(wx, wy, wz, -sinc, b)
    cx = wy * nz - wz * ny                  # p = V(w) nu = nu + b w x nu + c w x (w x nu)
    cy = wz * nx - wx * nz
    cz = wx * ny - wy * nx
    px = nx + b * cx + c * (wy * cz - wz * cy)
    py = ny + b * cy + c * (wz * cx - wx * cz)
    pz = nz + b * cz + c * (wx * cy - wy * cx)
    Rt_p = mat3_mul(Rt, (0.0 * px, -pz, py, pz, 0.0 * px, -px, -py, px, 0.0 * px))  # Rt [p]x
    A = rodrigues(wx, wy, wz, -b, c)
    Q = coupling(-nx, -ny, -nz, -wx, -wy, -wz, b, c, b2, c2)
    return Rt, Rt_p, A, Q


@helper
def right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, half):
    """Jr(nu, w)^-1 = [[Ai, Qi], [0, Ai]] with Ai = I + half K + d K^2 (half = 1/2; -1/2
    gives Jr(-nu, -w)^-1, the coupling taken at (-nu, -w) then) and Qi = -Ai Q Ai."""
    t2 = wx * wx + wy * wy + wz * wz
    ch, sh, b, c = exp_coefficients(t2)
    b2, c2 = derivative_coefficients(t2, 2.0 * sh * ch, b, c)
    sg = -2.0 * half                        # -1: Jr(nu, w)'s coupling is Q(-nu, -w)
    Ai = rodrigues(wx, wy, wz, half, d)
    Q = coupling(sg * nx, sg * ny, sg * nz, sg * wx, sg * wy, sg * wz, b, c, b2, c2)
    return Ai, mat3_mul(mat3_mul(Ai, Q), Ai)          # the caller negates Ai Q Ai


# ---- drivers ---------------------------------------------------------------------------


@helper
def integrate_jacobians(mi, q, v, Jq, Jv):
    """Jq, Jv (nv, nv) = d integrate(q, v) / d q and / d v (Pinocchio's dIntegrate ARG0,
    ARG1): zeroed, then one block per joint. q is not read (the blocks depend on v only);
    it is an argument for the checks and for symmetry with Pinocchio."""
    zero(Jq)
    zero(Jv)
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:
            r = max(mi[i, MI_RUN], 1)
            for k in range(iv, iv + r):
                Jq[k, k] = 1.0
                Jv[k, k] = 1.0
            i += r
            continue
        if t == FREE_FLYER:
            Rt, Rt_p, A, Q = integrate_blocks_se3(v[iv], v[iv + 1], v[iv + 2],
                                                  v[iv + 3], v[iv + 4], v[iv + 5])
            put3(Rt, 1.0, Jq, iv, iv)
            put3(Rt_p, -1.0, Jq, iv, iv + 3)
            put3(Rt, 1.0, Jq, iv + 3, iv + 3)
            put3(A, 1.0, Jv, iv, iv)
            put3(Q, 1.0, Jv, iv, iv + 3)
            put3(A, 1.0, Jv, iv + 3, iv + 3)
        elif t == SPHERICAL:
            Rt, A = integrate_blocks_so3(v[iv], v[iv + 1], v[iv + 2])
            put3(Rt, 1.0, Jq, iv, iv)
            put3(A, 1.0, Jv, iv, iv)
        else:
            Jq[iv, iv] = 1.0
            Jv[iv, iv] = 1.0
        i += 1


@helper
def difference_jacobians(mi, q0, q1, J0, J1):
    """J0, J1 (nv, nv) = d difference(q0, q1) / d q0 and / d q1 (Pinocchio's dDifference
    ARG0, ARG1): zeroed, then one block per joint."""
    zero(J0)
    zero(J1)
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        iq = mi[i, MI_IQ]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:
            r = max(mi[i, MI_RUN], 1)
            for k in range(iv, iv + r):
                J0[k, k] = -1.0
                J1[k, k] = 1.0
            i += r
            continue
        if t == FREE_FLYER:
            nx, ny, nz, wx, wy, wz, d = log_se3(q0, q1, iq)
            A0, Q0 = right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, -0.5)
            A1, Q1 = right_jacobian_inverse_se3(nx, ny, nz, wx, wy, wz, d, 0.5)
            put3(A0, -1.0, J0, iv, iv)
            put3(Q0, 1.0, J0, iv, iv + 3)       # -(-Ai Q Ai)
            put3(A0, -1.0, J0, iv + 3, iv + 3)
            put3(A1, 1.0, J1, iv, iv)
            put3(Q1, -1.0, J1, iv, iv + 3)
            put3(A1, 1.0, J1, iv + 3, iv + 3)
        elif t == SPHERICAL:
            wx, wy, wz, d = log_so3(q0, q1, iq)
            put3(rodrigues(wx, wy, wz, -0.5, d), -1.0, J0, iv, iv)
            put3(rodrigues(wx, wy, wz, 0.5, d), 1.0, J1, iv, iv)
        else:
            J0[iv, iv] = -1.0
            J1[iv, iv] = 1.0
        i += 1


@helper
def apply3(M, sign, Jin, r, k):
    """sign * M Jin[r:r + 3, k] as three values."""
    m0, m1, m2, m3, m4, m5, m6, m7, m8 = M
    x = Jin[r, k]
    y = Jin[r + 1, k]
    z = Jin[r + 2, k]
    return (sign * (m0 * x + m1 * y + m2 * z), sign * (m3 * x + m4 * y + m5 * z),
            sign * (m6 * x + m7 * y + m8 * z))


@helper
def transport_upper(D, U, su, Jin, Jout, iv):
    """Jout[iv:iv + 6] = [[D, su U], [0, D]] Jin[iv:iv + 6], column by column."""
    for k in range(Jin.shape[1]):
        ax, ay, az = apply3(D, 1.0, Jin, iv, k)
        bx, by, bz = apply3(U, su, Jin, iv + 3, k)
        cx, cy, cz = apply3(D, 1.0, Jin, iv + 3, k)
        Jout[iv, k] = ax + bx
        Jout[iv + 1, k] = ay + by
        Jout[iv + 2, k] = az + bz
        Jout[iv + 3, k] = cx
        Jout[iv + 4, k] = cy
        Jout[iv + 5, k] = cz


@helper
def transport3(D, Jin, Jout, iv):
    """Jout[iv:iv + 3] = D Jin[iv:iv + 3]."""
    for k in range(Jin.shape[1]):
        x, y, z = apply3(D, 1.0, Jin, iv, k)
        Jout[iv, k] = x
        Jout[iv + 1, k] = y
        Jout[iv + 2, k] = z


@helper
def integrate_transport(mi, q, v, Jin, argument, Jout):
    """Jout (nv, k) = (d integrate(q, v) / d q) Jin (argument ARG_Q) or (d integrate(q, v)
    / d v) Jin (ARG_V), Jin (nv, k) (Pinocchio's dIntegrateTransport): every row of Jout
    written, joint block by joint block (Jout may be Jin: each column's rows of a joint
    are read before they are written)."""
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        iv = mi[i, MI_IV]
        if t <= PRISMATIC:
            r = max(mi[i, MI_RUN], 1)
            for j in range(iv, iv + r):
                for k in range(Jin.shape[1]):
                    Jout[j, k] = Jin[j, k]
            i += r
            continue
        if t == FREE_FLYER:
            Rt, Rt_p, A, Q = integrate_blocks_se3(v[iv], v[iv + 1], v[iv + 2],
                                                  v[iv + 3], v[iv + 4], v[iv + 5])
            if argument == ARG_Q:
                transport_upper(Rt, Rt_p, -1.0, Jin, Jout, iv)
            else:
                transport_upper(A, Q, 1.0, Jin, Jout, iv)
        elif t == SPHERICAL:
            Rt, A = integrate_blocks_so3(v[iv], v[iv + 1], v[iv + 2])
            transport3(Rt if argument == ARG_Q else A, Jin, Jout, iv)
        else:
            for k in range(Jin.shape[1]):
                Jout[iv, k] = Jin[iv, k]
        i += 1
