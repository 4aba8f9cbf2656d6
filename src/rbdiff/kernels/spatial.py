"""Spatial algebra on flat arrays: the glossary every kernel uses.

Ordering is Pinocchio's: a motion m = [v; w] (linear, angular), a force f = [f; n]
(force, moment). A placement (R, p) (R a row-major 9-array, p a 3-array) maps child
coordinates to parent ones: x_parent = R x + p.

Symbols (Featherstone / Carpentier / Singh):
  X        placement (R, p); ``o`` prefix: in the world (universe) frame, ``li``: in the
           parent joint's frame
  S        joint motion subspace, one 6-column per dof (world frame in the kernels)
  v, a     spatial velocity and acceleration of a body, world frame
  f        spatial force, world frame
  Y        rigid-body inertia, compact: Y[0] = m, Y[1:4] = h = m c (first moment about the
           frame origin), Y[4:13] = I_o (rotational inertia about the origin, row-major)
  IA       articulated inertia, dense 6x6 row-major (36-array)
  crm(v) m  motion cross product v x m;  crf(v) f = v x* f, its dual

Every function writes into an ``out`` argument (no allocation) and is typed by its
arguments, so one source serves float64, float32, complex128 and the GPU.
"""

from .jit import helper

Y_SIZE = 13


@helper
def rot_axis_angle(ax, c, s, R):
    """R = exp(theta [ax]x) from c = cos(theta), s = sin(theta) (Rodrigues)."""
    x, y, z = ax[0], ax[1], ax[2]
    t = 1.0 - c
    R[0] = c + t * x * x
    R[1] = t * x * y - s * z
    R[2] = t * x * z + s * y
    R[3] = t * x * y + s * z
    R[4] = c + t * y * y
    R[5] = t * y * z - s * x
    R[6] = t * x * z - s * y
    R[7] = t * y * z + s * x
    R[8] = c + t * z * z


@helper
def rot_quat(x, y, z, w, R):
    """Rotation matrix of the unit quaternion (x, y, z, w)."""
    R[0] = 1.0 - 2.0 * (y * y + z * z)
    R[1] = 2.0 * (x * y - z * w)
    R[2] = 2.0 * (x * z + y * w)
    R[3] = 2.0 * (x * y + z * w)
    R[4] = 1.0 - 2.0 * (x * x + z * z)
    R[5] = 2.0 * (y * z - x * w)
    R[6] = 2.0 * (x * z - y * w)
    R[7] = 2.0 * (y * z + x * w)
    R[8] = 1.0 - 2.0 * (x * x + y * y)


@helper
def mix_columns(A, j, k, l, c, s, R):
    """R = A with columns j, k rotated: R[:, j] = c A[:, j] + s A[:, k],
    R[:, k] = c A[:, k] - s A[:, j], R[:, l] = A[:, l] (row-major 9-arrays)."""
    a, b = A[j], A[k]
    R[j], R[k], R[l] = c * a + s * b, c * b - s * a, A[l]
    a, b = A[3 + j], A[3 + k]
    R[3 + j], R[3 + k], R[3 + l] = c * a + s * b, c * b - s * a, A[3 + l]
    a, b = A[6 + j], A[6 + k]
    R[6 + j], R[6 + k], R[6 + l] = c * a + s * b, c * b - s * a, A[6 + l]


@helper
def rot_mul_axis_angle(A, ax, c, s, R, Rj):
    """R = A exp(theta [ax]x) from c = cos(theta), s = sin(theta). About x, y or z (either
    sign: what URDFs mostly give) two columns of A mix, 12 multiplications, as
    Pinocchio's RX/RY/RZ joints; about any other axis, Rodrigues into Rj (9 scratch) and
    a full product."""
    x, y, z = ax[0], ax[1], ax[2]
    if x == 0.0 and y == 0.0:
        mix_columns(A, 0, 1, 2, c, s * z, R)
    elif y == 0.0 and z == 0.0:
        mix_columns(A, 1, 2, 0, c, s * x, R)
    elif x == 0.0 and z == 0.0:
        mix_columns(A, 2, 0, 1, c, s * y, R)
    else:
        rot_axis_angle(ax, c, s, Rj)
        mat3_mul(A, Rj, R)


@helper
def revolute_act(R, p, ax, out):
    """out = X [0; ax], the motion-subspace column of a revolute joint about ax under the
    placement (R, p): w = R ax, v = p x w."""
    w0 = R[0] * ax[0] + R[1] * ax[1] + R[2] * ax[2]
    w1 = R[3] * ax[0] + R[4] * ax[1] + R[5] * ax[2]
    w2 = R[6] * ax[0] + R[7] * ax[1] + R[8] * ax[2]
    out[0] = p[1] * w2 - p[2] * w1
    out[1] = p[2] * w0 - p[0] * w2
    out[2] = p[0] * w1 - p[1] * w0
    out[3] = w0
    out[4] = w1
    out[5] = w2


@helper
def mat3_mul(A, B, C):
    """C = A B for row-major 3x3 9-arrays (C must not alias A or B)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8]
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = B[0], B[1], B[2], B[3], B[4], B[5], B[6], B[7], B[8]
    C[0] = a0 * b0 + a1 * b3 + a2 * b6
    C[1] = a0 * b1 + a1 * b4 + a2 * b7
    C[2] = a0 * b2 + a1 * b5 + a2 * b8
    C[3] = a3 * b0 + a4 * b3 + a5 * b6
    C[4] = a3 * b1 + a4 * b4 + a5 * b7
    C[5] = a3 * b2 + a4 * b5 + a5 * b8
    C[6] = a6 * b0 + a7 * b3 + a8 * b6
    C[7] = a6 * b1 + a7 * b4 + a8 * b7
    C[8] = a6 * b2 + a7 * b5 + a8 * b8


@helper
def se3_mul(Ra, pa, Rb, pb, Rc, pc):
    """(Rc, pc) = (Ra, pa) (Rb, pb); the output must not alias the inputs."""
    mat3_mul(Ra, Rb, Rc)
    x, y, z = pb[0], pb[1], pb[2]
    pc[0] = Ra[0] * x + Ra[1] * y + Ra[2] * z + pa[0]
    pc[1] = Ra[3] * x + Ra[4] * y + Ra[5] * z + pa[1]
    pc[2] = Ra[6] * x + Ra[7] * y + Ra[8] * z + pa[2]


@helper
def motion_act(R, p, m, out):
    """out = X m: w' = R w, v' = R v + p x w'."""
    w0 = R[0] * m[3] + R[1] * m[4] + R[2] * m[5]
    w1 = R[3] * m[3] + R[4] * m[4] + R[5] * m[5]
    w2 = R[6] * m[3] + R[7] * m[4] + R[8] * m[5]
    out[0] = R[0] * m[0] + R[1] * m[1] + R[2] * m[2] + p[1] * w2 - p[2] * w1
    out[1] = R[3] * m[0] + R[4] * m[1] + R[5] * m[2] + p[2] * w0 - p[0] * w2
    out[2] = R[6] * m[0] + R[7] * m[1] + R[8] * m[2] + p[0] * w1 - p[1] * w0
    out[3] = w0
    out[4] = w1
    out[5] = w2


@helper
def motion_act_inv(R, p, m, out):
    """out = X^-1 m: w' = R^T w, v' = R^T (v - p x w)."""
    w0, w1, w2 = m[3], m[4], m[5]
    l0 = m[0] - (p[1] * w2 - p[2] * w1)
    l1 = m[1] - (p[2] * w0 - p[0] * w2)
    l2 = m[2] - (p[0] * w1 - p[1] * w0)
    out[0] = R[0] * l0 + R[3] * l1 + R[6] * l2
    out[1] = R[1] * l0 + R[4] * l1 + R[7] * l2
    out[2] = R[2] * l0 + R[5] * l1 + R[8] * l2
    out[3] = R[0] * w0 + R[3] * w1 + R[6] * w2
    out[4] = R[1] * w0 + R[4] * w1 + R[7] * w2
    out[5] = R[2] * w0 + R[5] * w1 + R[8] * w2


@helper
def force_act(R, p, f, out):
    """out = X* f: f' = R f, n' = R n + p x f'."""
    f0 = R[0] * f[0] + R[1] * f[1] + R[2] * f[2]
    f1 = R[3] * f[0] + R[4] * f[1] + R[5] * f[2]
    f2 = R[6] * f[0] + R[7] * f[1] + R[8] * f[2]
    out[3] = R[0] * f[3] + R[1] * f[4] + R[2] * f[5] + p[1] * f2 - p[2] * f1
    out[4] = R[3] * f[3] + R[4] * f[4] + R[5] * f[5] + p[2] * f0 - p[0] * f2
    out[5] = R[6] * f[3] + R[7] * f[4] + R[8] * f[5] + p[0] * f1 - p[1] * f0
    out[0] = f0
    out[1] = f1
    out[2] = f2


@helper
def motion_cross(v, m, out):
    """out = v x m = [w x m_v + v_v x m_w; w x m_w] (out must not alias v or m)."""
    out[0] = v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4]
    out[1] = v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5]
    out[2] = v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3]
    out[3] = v[4] * m[5] - v[5] * m[4]
    out[4] = v[5] * m[3] - v[3] * m[5]
    out[5] = v[3] * m[4] - v[4] * m[3]


@helper
def force_cross(v, f, out):
    """out = v x* f = [w x f_f; w x f_n + v_v x f_f] (out must not alias v or f)."""
    out[0] = v[4] * f[2] - v[5] * f[1]
    out[1] = v[5] * f[0] - v[3] * f[2]
    out[2] = v[3] * f[1] - v[4] * f[0]
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@helper
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@helper
def inertia_act(R, p, m, h, Io, Y):
    """Y = X* (m, h, Io) X^-1: a body inertia given about a frame's origin (m, first
    moment h, rotational inertia Io, row-major) re-expressed about the origin of the frame
    (R, p) maps into. Y is compact (see the glossary)."""
    c0 = R[0] * h[0] + R[1] * h[1] + R[2] * h[2]
    c1 = R[3] * h[0] + R[4] * h[1] + R[5] * h[2]
    c2 = R[6] * h[0] + R[7] * h[1] + R[8] * h[2]
    Y[0] = m
    Y[1] = c0 + m * p[0]
    Y[2] = c1 + m * p[1]
    Y[3] = c2 + m * p[2]
    # R Io R^T, straight-line (loops with computed indices defeat LLVM here)
    r0, r1, r2, r3, r4, r5, r6, r7, r8 = R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8]
    i0, i1, i2, i4, i5, i8 = Io[0], Io[1], Io[2], Io[4], Io[5], Io[8]
    # T = Io R^T (Io symmetric), columns of R^T are the rows of R
    t00 = i0 * r0 + i1 * r1 + i2 * r2
    t01 = i0 * r3 + i1 * r4 + i2 * r5
    t02 = i0 * r6 + i1 * r7 + i2 * r8
    t10 = i1 * r0 + i4 * r1 + i5 * r2
    t11 = i1 * r3 + i4 * r4 + i5 * r5
    t12 = i1 * r6 + i4 * r7 + i5 * r8
    t20 = i2 * r0 + i5 * r1 + i8 * r2
    t21 = i2 * r3 + i5 * r4 + i8 * r5
    t22 = i2 * r6 + i5 * r7 + i8 * r8
    Y[4] = r0 * t00 + r1 * t10 + r2 * t20
    Y[5] = r0 * t01 + r1 * t11 + r2 * t21
    Y[6] = r0 * t02 + r1 * t12 + r2 * t22
    Y[8] = r3 * t01 + r4 * t11 + r5 * t21
    Y[9] = r3 * t02 + r4 * t12 + r5 * t22
    Y[12] = r6 * t02 + r7 * t12 + r8 * t22
    Y[7] = Y[5]
    Y[10] = Y[6]
    Y[11] = Y[9]
    # parallel-axis terms: 2 (p.c) I - c p^T - p c^T + m (|p|^2 I - p p^T)
    pc = p[0] * c0 + p[1] * c1 + p[2] * c2
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    d = 2.0 * pc + m * pp
    Y[4] += d - 2.0 * c0 * p[0] - m * p[0] * p[0]
    Y[8] += d - 2.0 * c1 * p[1] - m * p[1] * p[1]
    Y[12] += d - 2.0 * c2 * p[2] - m * p[2] * p[2]
    e01 = -c0 * p[1] - p[0] * c1 - m * p[0] * p[1]
    e02 = -c0 * p[2] - p[0] * c2 - m * p[0] * p[2]
    e12 = -c1 * p[2] - p[1] * c2 - m * p[1] * p[2]
    Y[5] += e01
    Y[7] += e01
    Y[6] += e02
    Y[10] += e02
    Y[9] += e12
    Y[11] += e12


@helper
def inertia_mul(Y, m, out):
    """out = Y m: f = mass v - h x w, n = h x v + Io w."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    out[0] = ms * m[0] - (h1 * m[5] - h2 * m[4])
    out[1] = ms * m[1] - (h2 * m[3] - h0 * m[5])
    out[2] = ms * m[2] - (h0 * m[4] - h1 * m[3])
    out[3] = h1 * m[2] - h2 * m[1] + Y[4] * m[3] + Y[5] * m[4] + Y[6] * m[5]
    out[4] = h2 * m[0] - h0 * m[2] + Y[7] * m[3] + Y[8] * m[4] + Y[9] * m[5]
    out[5] = h0 * m[1] - h1 * m[0] + Y[10] * m[3] + Y[11] * m[4] + Y[12] * m[5]


@helper
def inertia_dense(Y, A):
    """A (36, row-major 6x6) = the matrix of the compact inertia Y (unrolled)."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    A[0] = ms
    A[1] = 0.0
    A[2] = 0.0
    A[3] = 0.0
    A[4] = h2
    A[5] = -h1
    A[6] = 0.0
    A[7] = ms
    A[8] = 0.0
    A[9] = -h2
    A[10] = 0.0
    A[11] = h0
    A[12] = 0.0
    A[13] = 0.0
    A[14] = ms
    A[15] = h1
    A[16] = -h0
    A[17] = 0.0
    A[18] = 0.0
    A[19] = -h2
    A[20] = h1
    A[21] = Y[4]
    A[22] = Y[5]
    A[23] = Y[6]
    A[24] = h2
    A[25] = 0.0
    A[26] = -h0
    A[27] = Y[7]
    A[28] = Y[8]
    A[29] = Y[9]
    A[30] = -h1
    A[31] = h0
    A[32] = 0.0
    A[33] = Y[10]
    A[34] = Y[11]
    A[35] = Y[12]


@helper
def mat6_vec(A, x, out):
    """out = A x for a row-major 6x6 A (unrolled: constant indices compile to straight-line code)."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = (A[0] * x0 + A[1] * x1 + A[2] * x2 + A[3] * x3 + A[4] * x4
              + A[5] * x5)
    out[1] = (A[6] * x0 + A[7] * x1 + A[8] * x2 + A[9] * x3 + A[10] * x4
              + A[11] * x5)
    out[2] = (A[12] * x0 + A[13] * x1 + A[14] * x2 + A[15] * x3 + A[16] * x4
              + A[17] * x5)
    out[3] = (A[18] * x0 + A[19] * x1 + A[20] * x2 + A[21] * x3 + A[22] * x4
              + A[23] * x5)
    out[4] = (A[24] * x0 + A[25] * x1 + A[26] * x2 + A[27] * x3 + A[28] * x4
              + A[29] * x5)
    out[5] = (A[30] * x0 + A[31] * x1 + A[32] * x2 + A[33] * x3 + A[34] * x4
              + A[35] * x5)


@helper
def sub_outer6(A, x, y):
    """A -= x y^T for a row-major 6x6 A and 6-vectors x, y (unrolled)."""
    y0, y1, y2, y3, y4, y5 = y[0], y[1], y[2], y[3], y[4], y[5]
    xr = x[0]
    A[0] -= xr * y0
    A[1] -= xr * y1
    A[2] -= xr * y2
    A[3] -= xr * y3
    A[4] -= xr * y4
    A[5] -= xr * y5
    xr = x[1]
    A[6] -= xr * y0
    A[7] -= xr * y1
    A[8] -= xr * y2
    A[9] -= xr * y3
    A[10] -= xr * y4
    A[11] -= xr * y5
    xr = x[2]
    A[12] -= xr * y0
    A[13] -= xr * y1
    A[14] -= xr * y2
    A[15] -= xr * y3
    A[16] -= xr * y4
    A[17] -= xr * y5
    xr = x[3]
    A[18] -= xr * y0
    A[19] -= xr * y1
    A[20] -= xr * y2
    A[21] -= xr * y3
    A[22] -= xr * y4
    A[23] -= xr * y5
    xr = x[4]
    A[24] -= xr * y0
    A[25] -= xr * y1
    A[26] -= xr * y2
    A[27] -= xr * y3
    A[28] -= xr * y4
    A[29] -= xr * y5
    xr = x[5]
    A[30] -= xr * y0
    A[31] -= xr * y1
    A[32] -= xr * y2
    A[33] -= xr * y3
    A[34] -= xr * y4
    A[35] -= xr * y5


@helper
def add6(x, y):
    """y += x for 6-arrays (a loop: LLVM unrolls it; Numba types one statement, not 6)."""
    for k in range(6):
        y[k] += x[k]


@helper
def add13(x, y):
    """y += x for 13-arrays (a loop: LLVM unrolls it; Numba types one statement, not 13)."""
    for k in range(13):
        y[k] += x[k]


@helper
def add36(x, y):
    """y += x for 36-arrays (a loop: LLVM unrolls it; Numba types one statement, not 36)."""
    for k in range(36):
        y[k] += x[k]


@helper
def copy6(x, y):
    """y = x for 6-arrays (a loop: LLVM unrolls it; Numba types one statement, not 6)."""
    for k in range(6):
        y[k] = x[k]


@helper
def scale6(alpha, y):
    """y *= alpha for a 6-array (a loop, as add6)."""
    for k in range(6):
        y[k] *= alpha


@helper
def axpy6(alpha, x, y):
    """y += alpha x for 6-arrays (a loop, as add6)."""
    for k in range(6):
        y[k] += alpha * x[k]


@helper
def set6(y, alpha):
    """y = alpha for a 6-array (a loop, as add6)."""
    for k in range(6):
        y[k] = alpha


@helper
def sym_inverse(D, n, Dinv):
    """Dinv = D^-1 for a symmetric positive-definite n x n D (n <= 6, row-major with
    stride n), by Gauss-Jordan without pivoting (D is a joint-space inertia block, so
    its pivots are positive). D is destroyed."""
    if n == 1:
        Dinv[0] = 1.0 / D[0]
        return
    work = D
    for k in range(n * n):
        Dinv[k] = 0.0
    for k in range(n):
        Dinv[k * n + k] = 1.0
    for k in range(n):
        piv = 1.0 / work[k * n + k]
        for c in range(n):
            work[k * n + c] *= piv
            Dinv[k * n + c] *= piv
        for r in range(n):
            if r != k:
                fct = work[r * n + k]
                for c in range(n):
                    work[r * n + c] -= fct * work[k * n + c]
                    Dinv[r * n + c] -= fct * Dinv[k * n + c]


@helper
def inertia_rate(Y, v):
    """Ydot = v x* Y - Y v x, the rate of a world inertia moving with v, compact (its
    mass entry is 0): hdot = w x h + m v_lin, Iodot = C + C^T + 2 (v_lin . h) E with
    C = [w]x Io - h v_lin^T."""
    vl0, vl1, vl2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    m, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    i0, i1, i2, i3, i4, i5, i6, i7, i8 = Y[4], Y[5], Y[6], Y[7], Y[8], Y[9], Y[10], Y[11], Y[12]
    c00 = -w2 * i3 + w1 * i6 - h0 * vl0
    c01 = -w2 * i4 + w1 * i7 - h0 * vl1
    c02 = -w2 * i5 + w1 * i8 - h0 * vl2
    c10 = w2 * i0 - w0 * i6 - h1 * vl0
    c11 = w2 * i1 - w0 * i7 - h1 * vl1
    c12 = w2 * i2 - w0 * i8 - h1 * vl2
    c20 = -w1 * i0 + w0 * i3 - h2 * vl0
    c21 = -w1 * i1 + w0 * i4 - h2 * vl1
    c22 = -w1 * i2 + w0 * i5 - h2 * vl2
    d = 2.0 * (vl0 * h0 + vl1 * h1 + vl2 * h2)
    e01 = c01 + c10
    e02 = c02 + c20
    e12 = c12 + c21
    return (0.0 * m, w1 * h2 - w2 * h1 + m * vl0, w2 * h0 - w0 * h2 + m * vl1,
            w0 * h1 - w1 * h0 + m * vl2,
            2.0 * c00 + d, e01, e02, e01, 2.0 * c11 + d, e12, e02, e12, 2.0 * c22 + d)
