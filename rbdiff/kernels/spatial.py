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

from .jit import kernel

Y_SIZE = 13


@kernel
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


@kernel
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


@kernel
def mat3_mul(A, B, C):
    """C = A B for row-major 3x3 9-arrays (C must not alias A or B)."""
    for r in range(3):
        for c in range(3):
            C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c]


@kernel
def se3_mul(Ra, pa, Rb, pb, Rc, pc):
    """(Rc, pc) = (Ra, pa) (Rb, pb); the output must not alias the inputs."""
    mat3_mul(Ra, Rb, Rc)
    for r in range(3):
        pc[r] = Ra[3 * r] * pb[0] + Ra[3 * r + 1] * pb[1] + Ra[3 * r + 2] * pb[2] + pa[r]


@kernel
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


@kernel
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


@kernel
def motion_cross(v, m, out):
    """out = v x m = [w x m_v + v_v x m_w; w x m_w] (out must not alias v or m)."""
    out[0] = v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4]
    out[1] = v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5]
    out[2] = v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3]
    out[3] = v[4] * m[5] - v[5] * m[4]
    out[4] = v[5] * m[3] - v[3] * m[5]
    out[5] = v[3] * m[4] - v[4] * m[3]


@kernel
def force_cross(v, f, out):
    """out = v x* f = [w x f_f; w x f_n + v_v x f_f] (out must not alias v or f)."""
    out[0] = v[4] * f[2] - v[5] * f[1]
    out[1] = v[5] * f[0] - v[3] * f[2]
    out[2] = v[3] * f[1] - v[4] * f[0]
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@kernel
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@kernel
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
    # R Io R^T into Y[4:13] via T = Io R^T (kept in Y as scratch row by row)
    for r in range(3):
        t0 = Io[3 * r] * R[0] + Io[3 * r + 1] * R[1] + Io[3 * r + 2] * R[2]
        t1 = Io[3 * r] * R[3] + Io[3 * r + 1] * R[4] + Io[3 * r + 2] * R[5]
        t2 = Io[3 * r] * R[6] + Io[3 * r + 1] * R[7] + Io[3 * r + 2] * R[8]
        Y[4 + 3 * r] = t0
        Y[5 + 3 * r] = t1
        Y[6 + 3 * r] = t2
    for c in range(3):
        t0 = Y[4 + c]
        t1 = Y[7 + c]
        t2 = Y[10 + c]
        Y[4 + c] = R[0] * t0 + R[1] * t1 + R[2] * t2
        Y[7 + c] = R[3] * t0 + R[4] * t1 + R[5] * t2
        Y[10 + c] = R[6] * t0 + R[7] * t1 + R[8] * t2
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


@kernel
def inertia_mul(Y, m, out):
    """out = Y m: f = mass v - h x w, n = h x v + Io w."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    out[0] = ms * m[0] - (h1 * m[5] - h2 * m[4])
    out[1] = ms * m[1] - (h2 * m[3] - h0 * m[5])
    out[2] = ms * m[2] - (h0 * m[4] - h1 * m[3])
    out[3] = h1 * m[2] - h2 * m[1] + Y[4] * m[3] + Y[5] * m[4] + Y[6] * m[5]
    out[4] = h2 * m[0] - h0 * m[2] + Y[7] * m[3] + Y[8] * m[4] + Y[9] * m[5]
    out[5] = h0 * m[1] - h1 * m[0] + Y[10] * m[3] + Y[11] * m[4] + Y[12] * m[5]


@kernel
def inertia_dense(Y, A):
    """A (36, row-major 6x6) = the matrix of the compact inertia Y."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    for k in range(36):
        A[k] = 0.0 * ms
    A[0] = ms
    A[7] = ms
    A[14] = ms
    # top-right block: -[h]x ; bottom-left: [h]x
    A[4] = h2
    A[5] = -h1
    A[9] = -h2
    A[11] = h0
    A[15] = h1
    A[16] = -h0
    A[19] = -h2
    A[20] = h1
    A[24] = h2
    A[26] = -h0
    A[30] = -h1
    A[31] = h0
    for r in range(3):
        for c in range(3):
            A[6 * (3 + r) + 3 + c] = Y[4 + 3 * r + c]


@kernel
def mat6_vec(A, x, out):
    """out = A x for a row-major 6x6 A."""
    for r in range(6):
        out[r] = (A[6 * r] * x[0] + A[6 * r + 1] * x[1] + A[6 * r + 2] * x[2]
                  + A[6 * r + 3] * x[3] + A[6 * r + 4] * x[4] + A[6 * r + 5] * x[5])


@kernel
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
