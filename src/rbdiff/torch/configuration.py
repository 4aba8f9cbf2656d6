"""integrate and difference on torch tensors: rbdiff.torch.lie's array-generic math with
torch's functions, differentiated by torch's own autograd (any order, any transform)."""

from types import SimpleNamespace

import torch

from ..model import lie
from ._checks import check

TORCH = SimpleNamespace(sqrt=torch.sqrt, sin=torch.sin, cos=torch.cos, atan2=torch.atan2,
                        where=torch.where, stack=lambda xs: torch.stack(xs, -1))


def _common(a, b):
    shape = torch.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    return a.expand(shape + a.shape[-1:]), b.expand(shape + b.shape[-1:])


def integrate(model, q, v):
    """q (+) v (Pinocchio's integrate, as rbd.integrate): q (..., nq), v (..., nv), leading
    shapes broadcast. Returns (..., nq). Pure torch ops: differentiable to any order, and
    it runs on any device (no rbdiff kernel is called). NaN propagates (no value check:
    it must trace under torch.func)."""
    _check_pair(model, ("q", q, "nq"), ("v", v, "nv"))
    q, v = _common(q, v)
    return torch.stack(lie.integrate(model, q, v, TORCH), -1)


def difference(model, q0, q1):
    """q1 (-) q0 (Pinocchio's difference, as rbd.difference): the tangent vector v
    (..., nv) with integrate(q0, v) = q1; q0, q1 (..., nq), leading shapes broadcast."""
    _check_pair(model, ("q0", q0, "nq"), ("q1", q1, "nq"))
    q0, q1 = _common(q0, q1)
    return torch.stack(lie.difference(model, q0, q1, TORCH), -1)


def _check_pair(model, a, b):
    """Types, dtypes and lengths as the other functions; any device and broadcast leading
    shapes (the math is plain torch)."""
    check(model, [a, b], any_device=True)
