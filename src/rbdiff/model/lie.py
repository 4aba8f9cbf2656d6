"""integrate and difference (Pinocchio's, as rbd.integrate / rbd.difference) written once
over per-coordinate arrays, for any array library.

rbdiff's own integrate and difference are compiled kernels (no autodiff through them)
and their NumPy reference (rbdiff.model.configuration) calls NumPy by name. The front ends
need the same maps differentiable in their framework, so this module writes them with
indexing, arithmetic and six functions taken from a namespace ``xp`` (sqrt, sin, cos,
atan2, where, stack): ``NUMPY`` here, ``TORCH`` in rbdiff.torch.configuration. Small
angles use the Taylor series of rbdiff.model.configuration, with the singular branch fed
a safe value, so first and second derivatives are finite at 0 (where jacfwd and hessian of
f(integrate(q, dq)) are taken). tests/test_torch.py checks the NumPy instance against
rbdiff.model.configuration and the torch instance against rbd.integrate / rbd.difference.
"""

from types import SimpleNamespace

import numpy as np

from . import layout as L

_SMALL2 = 1e-8     # theta^2 below which the series are used (rbdiff.model.configuration)

NUMPY = SimpleNamespace(sqrt=np.sqrt, sin=np.sin, cos=np.cos, atan2=np.arctan2,
                        where=np.where, stack=lambda xs: np.stack(xs, -1))


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _qmul(a, b):
    """Hamilton product of quaternions given as [x, y, z, w] component lists."""
    c = _cross(a[:3], b[:3])
    return [a[3] * b[i] + b[3] * a[i] + c[i] for i in range(3)] + [
        a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]]


def _rotate(n, p, xp, transpose=False):
    """R(n) p (or R(n)^T p) for a unit quaternion n: p + 2 w (u x p) + 2 u x (u x p)."""
    u, w = n[:3], -n[3] if transpose else n[3]
    uxp = _cross(u, p)
    uxuxp = _cross(u, uxp)
    return [p[i] + 2 * w * uxp[i] + 2 * uxuxp[i] for i in range(3)]


def _series(xp, t2, fn, taylor):
    """fn(theta) for theta^2 = t2 above _SMALL2, else the series taylor(t2); the unused
    branch gets a safe argument so that its derivatives stay finite."""
    small = t2 < _SMALL2
    safe = xp.where(small, 1.0 + 0 * t2, t2)
    return xp.where(small, taylor(t2), fn(xp.sqrt(safe), xp))


def _qexp(xp, w):
    t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    s = _series(xp, t2, lambda t, xp: xp.sin(t / 2) / t, lambda x: 0.5 - x / 48 + x * x / 3840)
    c = _series(xp, t2, lambda t, xp: xp.cos(t / 2), lambda x: 1 - x / 8 + x * x / 384)
    return [w[0] * s, w[1] * s, w[2] * s, c]


def _qlog(xp, n):
    """Rotation vector of the quaternion n (shortest arc)."""
    sign = xp.where(n[3] < 0, -1.0 + 0 * n[3], 1.0 + 0 * n[3])
    n = [sign * c for c in n]
    s2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2]
    small = s2 < 1e-16
    s = xp.sqrt(xp.where(small, 1.0 + 0 * s2, s2))
    w = xp.where(small, n[3], 1.0 + 0 * s2)      # near 0 only off the small branch
    k = xp.where(small, 2 / w * (1 - s2 / (3 * w * w)), 2 * xp.atan2(s, n[3]) / s)
    return [c * k for c in n[:3]]


def _V(xp, w, p, inverse=False):
    """V(w) p (the left Jacobian of SO(3) in SE(3)'s exponential), or V(w)^-1 p."""
    t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    wxp = _cross(w, p)
    wxwxp = _cross(w, wxp)
    if inverse:
        d = _series(xp, t2, lambda t, xp: (1 - t * xp.sin(t) / (2 * (1 - xp.cos(t)))) / t ** 2,
                    lambda x: 1 / 12 + x / 720 + x * x / 30240)
        return [p[i] - 0.5 * wxp[i] + d * wxwxp[i] for i in range(3)]
    b = _series(xp, t2, lambda t, xp: (1 - xp.cos(t)) / t ** 2,
                lambda x: 0.5 - x / 24 + x * x / 720)
    c = _series(xp, t2, lambda t, xp: (t - xp.sin(t)) / t ** 3,
                lambda x: 1 / 6 - x / 120 + x * x / 5040)
    return [p[i] + b * wxp[i] + c * wxwxp[i] for i in range(3)]


def _renormalise(x):
    """Pinocchio's first-order renormalisation x (3 - |x|^2) / 2, as rbd.integrate."""
    a = (3 - sum(c * c for c in x)) / 2
    return [c * a for c in x]


def integrate(model, q, v, xp):
    """q (+) v per joint (rbd.integrate's math); q (..., nq), v (..., nv) of one leading
    shape. Returns the nq components of the result, each (...)."""
    out = []
    for i in range(1, model.njoints):
        t, k, j = int(model.joint_types[i]), int(model.idx_q[i]), int(model.idx_v[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out.append(q[..., k] + v[..., j])
        elif t == L.REVOLUTE_UNBOUNDED:
            c, s, cv, sv = q[..., k], q[..., k + 1], xp.cos(v[..., j]), xp.sin(v[..., j])
            out.extend(_renormalise([c * cv - s * sv, s * cv + c * sv]))
        elif t == L.SPHERICAL:
            n = [q[..., k + m] for m in range(4)]
            out.extend(_renormalise(_qmul(n, _qexp(xp, [v[..., j + m] for m in range(3)]))))
        else:
            n = [q[..., k + 3 + m] for m in range(4)]
            w = [v[..., j + 3 + m] for m in range(3)]
            dp = _rotate(n, _V(xp, w, [v[..., j + m] for m in range(3)]), xp)
            out.extend(q[..., k + m] + dp[m] for m in range(3))
            n1 = _qmul(n, _qexp(xp, w))
            dot = sum(a * b for a, b in zip(n1, n))
            flip = xp.where(dot < 0, -1.0 + 0 * dot, 1.0 + 0 * dot)   # stay on n's side
            out.extend(_renormalise([flip * c for c in n1]))
    return out


def difference(model, q0, q1, xp):
    """q1 (-) q0 per joint (rbd.difference's math); q0, q1 (..., nq) of one leading shape.
    Returns the nv components of the result, each (...)."""
    out = []
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out.append(q1[..., k] - q0[..., k])
        elif t == L.REVOLUTE_UNBOUNDED:
            c0, s0, c1, s1 = q0[..., k], q0[..., k + 1], q1[..., k], q1[..., k + 1]
            out.append(xp.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1))
        elif t == L.SPHERICAL:
            a = [q0[..., k + m] for m in range(3)] + [q0[..., k + 3]]
            b = [q1[..., k + m] for m in range(4)]
            out.extend(_qlog(xp, _qmul([-a[0], -a[1], -a[2], a[3]], b)))
        else:
            a = [q0[..., k + 3 + m] for m in range(4)]
            b = [q1[..., k + 3 + m] for m in range(4)]
            w = _qlog(xp, _qmul([-a[0], -a[1], -a[2], a[3]], b))
            dp = _rotate(a, [q1[..., k + m] - q0[..., k + m] for m in range(3)], xp,
                         transpose=True)
            out.extend(_V(xp, w, dp, inverse=True))
            out.extend(w)
    return out
