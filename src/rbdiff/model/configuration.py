"""Configuration space: neutral, random, integrate and difference, as Pinocchio defines
them (each joint its own Lie group: R^n, SO(2) as (cos, sin), SO(3) as a unit quaternion
[x, y, z, w] composed on the right, SE(3) as [p, quaternion] with a body-frame twist).

``random_configuration`` is public (rbd.random_configuration). ``neutral``, ``integrate``
and ``difference`` here are the readable NumPy reference of the compiled ones
(rbdiff.kernels.configuration, public as rbd.neutral, rbd.integrate, rbd.difference),
which tests/test_configuration.py checks against them. They accept a leading batch axis;
integrate also complex arrays (complex step on the manifold)."""

import numpy as np

from . import layout as L

_SMALL = 1e-4   # below this rotation angle the series expansions are exact to rounding


def _theta2(w):
    return np.sum(w * w, axis=-1)


def _series(t2, fn, taylor):
    """fn(theta) where |theta| is large, the Taylor series in theta^2 where it is small."""
    small = np.abs(t2) < _SMALL ** 2
    safe = np.where(small, 1.0, t2)
    return np.where(small, taylor(t2), fn(np.sqrt(safe)))


def quat_exp(w):
    """Unit quaternion [x, y, z, w] of the rotation exp([w]x), w (..., 3)."""
    t2 = _theta2(w)
    s = _series(t2, lambda t: np.sin(t / 2) / t, lambda x: 0.5 - x / 48 + x * x / 3840)
    c = _series(t2, lambda t: np.cos(t / 2), lambda x: 1 - x / 8 + x * x / 384)
    return np.concatenate([w * s[..., None], c[..., None]], axis=-1)


def quat_mul(a, b):
    """Hamilton product of [x, y, z, w] quaternions."""
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv),
                           aw * bw - np.sum(av * bv, axis=-1, keepdims=True)], axis=-1)


def quat_conj(a):
    return np.concatenate([-a[..., :3], a[..., 3:]], axis=-1)


def quat_to_rot(qt):
    """R (..., 3, 3) of quaternions qt (..., 4) [x, y, z, w] (unit ones: a rotation)."""
    if type(qt) is np.ndarray and qt.shape == (4,) and qt.dtype == np.float64:
        # one quaternion (a plant's state, a controller's tick): Python floats, ~1.5 us
        # against ~15 for the array path's dozen small ufunc calls and stacks
        x, y, z, w = qt.tolist()
        return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    x, y, z, w = qt[..., 0], qt[..., 1], qt[..., 2], qt[..., 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def quat_log(qt):
    """Rotation vector w with exp([w]x) = R(qt), for real quaternions."""
    qt = np.where(qt[..., 3:] < 0, -qt, qt)     # shortest arc
    v, w = qt[..., :3], qt[..., 3]
    s = np.sqrt(_theta2(v))
    theta = 2 * np.arctan2(s, w)
    small = np.abs(s) < 1e-8
    k = np.where(small, 2 / w * (1 - s * s / (3 * w * w)), theta / np.where(small, 1, s))
    return v * k[..., None]


def _skew(w):
    z = np.zeros_like(w[..., 0])
    return np.stack([np.stack([z, -w[..., 2], w[..., 1]], -1),
                     np.stack([w[..., 2], z, -w[..., 0]], -1),
                     np.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def _V(w):
    """Left Jacobian of SO(3): p = V(w) v in the SE(3) exponential."""
    t2 = _theta2(w)
    b = _series(t2, lambda t: (1 - np.cos(t)) / t ** 2, lambda x: 0.5 - x / 24 + x * x / 720)
    c = _series(t2, lambda t: (t - np.sin(t)) / t ** 3, lambda x: 1 / 6 - x / 120 + x * x / 5040)
    K = _skew(w)
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye + b[..., None, None] * K + c[..., None, None] * (K @ K)


def _Vinv(w):
    t2 = _theta2(w)
    d = _series(t2, lambda t: (1 - t * np.sin(t) / (2 * (1 - np.cos(t)))) / t ** 2,
                lambda x: 1 / 12 + x / 720 + x * x / 30240)
    K = _skew(w)
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye - 0.5 * K + d[..., None, None] * (K @ K)


def neutral(model):
    """The neutral configuration (nq,): zeros, (1, 0) pairs and identity quaternions."""
    q = np.zeros(model.nq)
    for i in range(1, model.njoints):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        if t == L.REVOLUTE_UNBOUNDED:
            q[iq] = 1.0
        elif t == L.SPHERICAL:
            q[iq + 3] = 1.0
        elif t == L.FREE_FLYER:
            q[iq + 6] = 1.0
    return q


def _random_quat(rng, shape):
    x = rng.normal(size=shape + (4,))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def random_configuration(model, rng=None, batch=None):
    """A configuration drawn uniformly within the joint limits; unbounded coordinates use
    finite bounds: translations of free-flyers in [-1, 1], angles in [-pi, pi], rotations
    uniform on SO(3). rng: numpy Generator or seed; batch: leading batch size or None."""
    rng = np.random.default_rng(rng)
    shape = () if batch is None else (int(batch),)
    q = np.zeros(shape + (model.nq,))
    for i in range(1, model.njoints):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            lo, hi = model.lower_limits[iq], model.upper_limits[iq]
            lo, hi = (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (-np.pi, np.pi)
            q[..., iq] = rng.uniform(min(lo, hi), max(lo, hi), size=shape)   # swapped: URDF
        elif t == L.REVOLUTE_UNBOUNDED:
            th = rng.uniform(-np.pi, np.pi, size=shape)
            q[..., iq], q[..., iq + 1] = np.cos(th), np.sin(th)
        elif t == L.SPHERICAL:
            q[..., iq:iq + 4] = _random_quat(rng, shape)
        else:
            q[..., iq:iq + 3] = rng.uniform(-1.0, 1.0, size=shape + (3,))
            q[..., iq + 3:iq + 7] = _random_quat(rng, shape)
    return q


def _check(model, name, x, n):
    x = np.asarray(x)
    if x.shape[-1:] != (n,) or x.ndim > 2:
        raise ValueError(f"{name}: expected shape ({n},) or (B, {n}), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: contains NaN or Inf")
    return x


def integrate(model, q, v):
    """q (+) v: the configuration reached from q by the tangent velocity v in unit time
    (Pinocchio's integrate). q (nq,) or (B, nq), v (nv,) or (B, nv)."""
    q = _check(model, "q", q, model.nq)
    v = _check(model, "v", v, model.nv)
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    out = np.zeros(shape + (model.nq,), dtype=np.result_type(q, v, np.float64))
    out[...] = q
    for i in range(1, model.njoints):
        t, iq, iv = int(model.joint_types[i]), int(model.idx_q[i]), int(model.idx_v[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out[..., iq] = q[..., iq] + v[..., iv]
        elif t == L.REVOLUTE_UNBOUNDED:
            c, s = q[..., iq], q[..., iq + 1]
            cv, sv = np.cos(v[..., iv]), np.sin(v[..., iv])
            out[..., iq:iq + 2] = _normalise(np.stack([c * cv - s * sv, s * cv + c * sv], -1))
        elif t == L.SPHERICAL:
            out[..., iq:iq + 4] = _normalise(quat_mul(q[..., iq:iq + 4],
                                                      quat_exp(v[..., iv:iv + 3])))
        else:
            qt = q[..., iq + 3:iq + 7]
            w, lin = v[..., iv + 3:iv + 6], v[..., iv:iv + 3]
            dp = np.einsum("...ij,...j->...i", _V(w), lin)
            out[..., iq:iq + 3] = q[..., iq:iq + 3] + np.einsum("...ij,...j->...i",
                                                                quat_to_rot(qt), dp)
            q1 = quat_mul(qt, quat_exp(w))
            flip = np.sum(q1 * qt, axis=-1, keepdims=True).real < 0   # stay on qt's side
            out[..., iq + 3:iq + 7] = _normalise(np.where(flip, -q1, q1))
    return out


def _normalise(x):
    """Pinocchio's first-order renormalisation of a quaternion or (cos, sin) pair."""
    return x * (3 - np.sum(x * x, axis=-1, keepdims=True)) / 2


def difference(model, q0, q1):
    """The tangent vector v with integrate(q0, v) = q1 (Pinocchio's difference)."""
    q0 = _check(model, "q0", q0, model.nq)
    q1 = _check(model, "q1", q1, model.nq)
    shape = np.broadcast_shapes(q0.shape[:-1], q1.shape[:-1])
    out = np.zeros(shape + (model.nv,), dtype=np.result_type(q0, q1, np.float64))
    for i in range(1, model.njoints):
        t, iq, iv = int(model.joint_types[i]), int(model.idx_q[i]), int(model.idx_v[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out[..., iv] = q1[..., iq] - q0[..., iq]
        elif t == L.REVOLUTE_UNBOUNDED:
            c0, s0, c1, s1 = q0[..., iq], q0[..., iq + 1], q1[..., iq], q1[..., iq + 1]
            out[..., iv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        elif t == L.SPHERICAL:
            dq = quat_mul(quat_conj(q0[..., iq:iq + 4]), q1[..., iq:iq + 4])
            out[..., iv:iv + 3] = quat_log(dq)
        else:
            qa, qb = q0[..., iq + 3:iq + 7], q1[..., iq + 3:iq + 7]
            w = quat_log(quat_mul(quat_conj(qa), qb))
            dp = np.einsum("...ji,...j->...i", quat_to_rot(qa),
                           q1[..., iq:iq + 3] - q0[..., iq:iq + 3])
            out[..., iv:iv + 3] = np.einsum("...ij,...j->...i", _Vinv(w), dp)
            out[..., iv + 3:iv + 6] = w
    return out
