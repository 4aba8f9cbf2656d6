"""Public configuration-space functions: neutral, integrate and difference (Pinocchio's
``neutral``, ``integrate``, ``difference``), compiled (rbdiff.kernels.configuration), and
their Lie-group Jacobians integrate_jacobians, difference_jacobians and
integrate_transport (``dIntegrate``, ``dDifference``, ``dIntegrateTransport``;
rbdiff.kernels.lie).

Every joint is its own Lie group: revolute and prismatic coordinates add, continuous
joints (cos, sin) rotate in SO(2), spherical joints compose unit quaternions [x, y, z, w]
on the right (SO(3)), free flyers [p, quaternion] move by the exponential of their
body-frame twist [linear, angular] (SE(3)).

``integrate`` and ``difference`` take a single configuration (q of shape (nq,)) or a
batch with a leading axis ((B, nq)), on either argument: a single one is used for every
item of the other's batch. Inputs may be float64, float32 (the result is float32) or
complex128: ``integrate(model, q, 1j * h * e_k)`` is a complex step on the manifold
(the imaginary part of the result, over h, is the tangent derivative). Results are new
arrays owned by the caller. ``rbd.random_configuration`` lives in
rbdiff.model.configuration, with the NumPy reference of these functions.
"""

import numpy as np

from .cpu import batch, policy, single
from .cpu import lie as _lie
from .declare import Function
from .kernels.jit import native_ref
from .kernels.lie import ARG_Q, ARG_V
from .results import DifferenceJacobians, IntegrateJacobians
from .validation import F64 as _F64
from .validation import SUPPORTED, explain, on_device, prepare

# The fast paths: q and v go to the compiled entry unchecked (jit.native_ref: typed
# fastargs.REF where that works on this platform): it takes them only as float64 1-D
# ndarrays and returns False for anything else, which saves the ~85 ns that asking dtype
# and ndim in Python costs (two thirds of a 9-joint integrate). What the entry does not
# take, or refuses (ValueError: a wrong length or an invalid value), goes to the general
# path, which validates it and names the argument.
_FAST_MISS = (AttributeError, TypeError, ValueError)
_integrate_fast = native_ref(single.integrate_one, "_integrate_fast", globals(), (1, 2),
                             outputs=(3,))
_difference_fast = native_ref(single.difference_one, "_difference_fast", globals(), (1, 2),
                              outputs=(3,))


# the general paths (declare.py): a single argument is broadcast along the other's batch
_INTEGRATE = Function("integrate", single.integrate_one,
                      (batch.integrate_batch, batch.integrate_parallel),
                      (("q", "nq"), ("v", "nv")), (("nq",),), model_args="configuration",
                      scratch="none", broadcast=True)
_DIFFERENCE = Function("difference", single.difference_one,
                       (batch.difference_batch, batch.difference_parallel),
                       (("q0", "nq"), ("q1", "nq")), (("nv",),), model_args="configuration",
                       scratch="none", broadcast=True, configurations=("q0", "q1"))


def neutral(model):
    """The neutral configuration (nq,): zeros, (cos, sin) = (1, 0) for continuous joints,
    identity quaternions [0, 0, 0, 1] for spherical joints and free flyers (Pinocchio's
    ``neutral``). A new array each call (a copy of the one the model keeps)."""
    return model._neutral.copy()


def integrate(model, q, v):
    """q (+) v: the configuration reached from q by the tangent velocity v in unit time
    (Pinocchio's ``integrate``): q + v for revolute and prismatic coordinates, q exp(v)
    for rotations (SO(2), SO(3) quaternions composed on the right), and for a free flyer
    the exponential of the body twist v = [linear, angular]: p + R(quat) V(w) nu,
    quat exp(w) (rbdiff.kernels.configuration). Quaternions and (cos, sin) pairs of the
    result are renormalised to first order, as Pinocchio does.

    q (nq,) or (B, nq) valid configurations (unit quaternions, to 1e-6); v (nv,) or
    (B, nv) finite. Returns (nq,), or (B, nq) when either argument has a batch axis."""
    try:    # fast path (see _FAST_MISS above); the entry makes qout from its shape
        qout = _integrate_fast(model.mi, q, v, model._sq)
        if qout is not None:
            return qout
    except _FAST_MISS:
        pass
    # a float64 batch: the declared batch pair without the general path's checks
    return _INTEGRATE.fast_batch(model, q, v)


def difference(model, q0, q1):
    """q1 (-) q0: the tangent vector v (nv,) with integrate(q0, v) = q1 (Pinocchio's
    ``difference``): q1 - q0 for revolute and prismatic coordinates, log(q0^-1 q1) on the
    shortest arc for rotations (angles in [-pi, pi]), and for a free flyer the twist
    [V(w)^-1 R0^T (p1 - p0), w] with w = log(conj(quat0) quat1).

    q0, q1 (nq,) or (B, nq) valid configurations. Returns (nv,), or (B, nv) when either
    argument has a batch axis."""
    try:
        v = _difference_fast(model.mi, q0, q1, model._sv)
        if v is not None:
            return v
    except _FAST_MISS:
        pass
    return _DIFFERENCE.fast_batch(model, q0, q1)


# ---- Lie-group Jacobians (rbdiff.kernels.lie) -------------------------------------------

# the general paths (declare.py): validation, dtypes, equal batch axes, errors
_INTEGRATE_JACOBIANS = Function(
    "integrate_jacobians", _lie.integrate_jacobians_one,
    (_lie.integrate_jacobians_batch, _lie.integrate_jacobians_parallel),
    (("q", "nq"), ("v", "nv")), (("nv", "nv"), ("nv", "nv")), model_args="configuration",
    scratch="none", result=IntegrateJacobians)
_DIFFERENCE_JACOBIANS = Function(
    "difference_jacobians", _lie.difference_jacobians_one,
    (_lie.difference_jacobians_batch, _lie.difference_jacobians_parallel),
    (("q0", "nq"), ("q1", "nq")), (("nv", "nv"), ("nv", "nv")), model_args="configuration",
    scratch="none", result=DifferenceJacobians, configurations=("q0", "q1"))
_ARGUMENTS = {"q": ARG_Q, "v": ARG_V, "ARG0": ARG_Q, "ARG1": ARG_V}
# Fast paths for single float64 calls, as integrate's (_FAST_MISS): natively bound
# entries that check q and v themselves (jit.native_ref); integrate_transport asks J's
# dtype and ndim in Python. What they do not take or refuse goes to the general path,
# which names the problem.
# (outputs: made by the entry from the shapes given, kernels.fastargs.output_arg)
_integrate_jacobians_fast = native_ref(_lie.integrate_jacobians_one,
                                       "_integrate_jacobians_fast", globals(), (1, 2),
                                       outputs=(3, 4), result=5)
_difference_jacobians_fast = native_ref(_lie.difference_jacobians_one,
                                        "_difference_jacobians_fast", globals(), (1, 2),
                                        outputs=(3, 4), result=5)
_integrate_transport_fast = native_ref(_lie.integrate_transport_one,
                                       "_integrate_transport_fast", globals(), (1, 2),
                                       inputs=(3,), outputs=(5,))


def integrate_jacobians(model, q, v):
    """The Jacobians of q' = integrate(q, v) (Pinocchio's dIntegrate with ARG0 and ARG1):
    IntegrateJacobians(dq, dv), dq = d q' / d q and dv = d q' / d v, each (nv, nv), from
    the tangent space at q (a step q (+) e) to the one at q'. Block diagonal, one block
    per joint: 1 for revolute, prismatic and continuous joints; R(v)^T and the right
    Jacobian Jr(v) of SO(3) for spherical joints; Ad(exp(-v)) and SE(3)'s Jr(v) for a free
    flyer (rbdiff.kernels.lie).

    q (nq,) a valid configuration, v (nv,) finite, or both with the same leading batch
    axis (B, nq), (B, nv): each (B, nv, nv). float32 and complex128 inputs give results
    of their dtype."""
    try:    # fast path
        r = _integrate_jacobians_fast(model.mi, q, v, model._svv, model._svv,
                                      IntegrateJacobians)
        if r is not None:
            return r
    except _FAST_MISS:
        pass
    return _INTEGRATE_JACOBIANS(model, q, v)


def difference_jacobians(model, q0, q1):
    """The Jacobians of v = difference(q0, q1) = q1 (-) q0 (Pinocchio's dDifference with
    ARG0 and ARG1): DifferenceJacobians(dq0, dq1), each (nv, nv), against steps q0 (+) e
    and q1 (+) e. Block diagonal: -1 and 1 for revolute, prismatic and continuous
    joints; -Jr(-v)^-1 and Jr(v)^-1 (the inverse right Jacobians of SO(3) or SE(3) at
    the difference v) for spherical joints and free flyers (rbdiff.kernels.lie).

    q0, q1 (nq,) valid configurations, or both (B, nq): each (B, nv, nv)."""
    try:    # fast path
        r = _difference_jacobians_fast(model.mi, q0, q1, model._svv, model._svv,
                                       DifferenceJacobians)
        if r is not None:
            return r
    except _FAST_MISS:
        pass
    return _DIFFERENCE_JACOBIANS(model, q0, q1)


def integrate_transport(model, q, v, J, argument="q"):
    """(d integrate(q, v) / d q) J (argument "q") or (d integrate(q, v) / d v) J (argument
    "v"), without forming the Jacobian (Pinocchio's dIntegrateTransport with ARG0 or ARG1,
    which are accepted too): each joint's block of integrate_jacobians times that joint's
    rows of J.

    q (nq,), v (nv,), J (nv, k): (nv, k); or a batch with the same leading axis on all
    three, q (B, nq), v (B, nv), J (B, nv, k): (B, nv, k)."""
    try:    # fast path
        code = _ARGUMENTS[argument]
        if J.dtype is _F64 and J.ndim == 2:
            out = _integrate_transport_fast(model.mi, q, v, J, code, J.shape)
            if out is not None:
                return out
    except (KeyError, *_FAST_MISS):
        pass
    name = getattr(argument, "name", argument)      # pin.ARG0 / pin.ARG1: an enum's name
    code = _ARGUMENTS.get(name) if isinstance(name, str) else None
    if code is None:
        raise ValueError(f'argument: expected "q" or "v" (or pin.ARG0, pin.ARG1), got '
                         f"{argument!r}")
    named = [("q", q, model.nq), ("v", v, model.nv)]
    if on_device(q, v, J):
        raise TypeError(_ON_DEVICE)
    (q, v), _, nb, _ = prepare(model, None, named, wants_fext=False)
    J = np.asarray(J)
    lead = () if nb is None else (nb,)        # J's batch axis must be q's and v's
    if J.ndim != len(lead) + 2 or J.shape[:-1] != lead + (model.nv,):
        want = ", ".join(map(str, lead + (model.nv, "k")))
        raise ValueError(f"J: expected shape ({want}) (q, v: {q.shape}, {v.shape}), got "
                         f"{J.shape}")
    if J.dtype.kind not in "biufc":
        raise TypeError(f"J: expected a real or complex numeric array, got dtype {J.dtype}")
    dtype = np.result_type(q, J)
    if dtype not in SUPPORTED:
        dtype = np.dtype(np.complex128) if dtype.kind == "c" else _F64
    q, v = q.astype(dtype, copy=False), v.astype(dtype, copy=False)
    J = np.ascontiguousarray(J, dtype=dtype)
    out = np.empty(J.shape, dtype)
    try:
        if nb is None:
            _lie.integrate_transport_one(model.mi, q, v, J, code, out)
        else:
            policy.run(model, _lie.integrate_transport_batch, _lie.integrate_transport_parallel,
                       nb, (model.mi, q, v, J, out), (code,))
    except ValueError:
        raise explain(model, [("q", q), ("v", v), ("J", J)], None, ("q",)) from None
    return out


_ON_DEVICE = ("rbdiff's configuration functions run on the CPU: pass NumPy arrays (copy "
              "device arrays to the host first)")

