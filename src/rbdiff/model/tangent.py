"""From a variation of q in its ambient layout (nq) to a tangent vector (nv).

Front ends that take q in its ambient layout (rbdiff.jax, rbdiff.torch) evaluate a
function f of the configuration as f(retract(q)), where retract normalises each
quaternion and (cos, sin) pair exactly (x / |x|). Their derivative with respect to q is
rbdiff's tangent derivative (d f(q (+) e) / d e at e = 0) times the map written here:

    e = tangent_of_ambient(model, q, dq)   with   retract(q + t dq) = q (+) t e + O(t^2)

for a q on the manifold, and the derivative of that extension off it. The map is
written with indexing and arithmetic only, so the same source runs on NumPy, jax.numpy
and torch tensors (and their tracers), and their autodiff differentiates it again for
Hessians. Per joint (r = |x|, n = x / r):
- revolute, prismatic: e = dq;
- continuous (c, s): e = (c ds - s dc) / r^2;
- spherical quaternion n = (u, w): e = 2 vec(conj(n) (x) dx) / r
  = (2 / r) (w dx_u - dx_w u - u x dx_u);
- free flyer [p, quaternion]: e_lin = R(n)^T dp, e_ang as the spherical joint.
"""

from . import layout as L
from .lie import _cross, _rotate


def _quaternion(q, dq, k):
    """The unit quaternion n at q[..., k:k+4] and 2 vec(conj(n) (x) dq) / |q[..., k:k+4]|."""
    x = [q[..., k + i] for i in range(4)]
    d = [dq[..., k + i] for i in range(4)]
    r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]) ** 0.5
    n = [xi / r for xi in x]
    uxd = _cross(n, d)
    return n, [2 * (n[3] * d[i] - d[3] * n[i] - uxd[i]) / r for i in range(3)]


def normalised_blocks(model):
    """(start, length) in q of every quaternion and (cos, sin) pair: the blocks that
    retract(q) divides by their norms."""
    out = []
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        block = {L.REVOLUTE_UNBOUNDED: (k, 2), L.SPHERICAL: (k, 4),
                 L.FREE_FLYER: (k + 3, 4)}.get(t)
        if block:
            out.append(block)
    return out


def tangent_of_ambient(model, q, dq):
    """The tangent components e_0 .. e_{nv-1} of the ambient variation dq at q.

    q, dq: arrays (..., nq) of one kind (NumPy, jax.numpy, torch). Returns a list of nv
    arrays of shape (...), which the caller stacks on its own framework's last axis.
    """
    e = []
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            e.append(dq[..., k])
        elif t == L.REVOLUTE_UNBOUNDED:
            c, s = q[..., k], q[..., k + 1]
            e.append((c * dq[..., k + 1] - s * dq[..., k]) / (c * c + s * s))
        elif t == L.SPHERICAL:
            e.extend(_quaternion(q, dq, k)[1])
        else:
            n, omega = _quaternion(q, dq, k + 3)
            e.extend(_rotate(n, [dq[..., k + j] for j in range(3)], None, transpose=True))
            e.extend(omega)
    return e
