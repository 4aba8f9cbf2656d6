"""Entry points of the Lie-group Jacobians of integrate and difference (kernels/lie.py):
single calls (``*_one``, no scratch: the blocks live in registers) and batches
(``*_batch`` serial with ``check``, ``*_parallel`` over chunks), as cpu/single.py and
cpu/batch.py. No math here.

Arguments: the model's mi (the configuration space is mi's alone: declare.py's
model_args="configuration", as integrate's entries), the inputs, then (single) the options and the outputs, or (batch) the outputs, the
options and ``check`` / ``nchunks``. Outputs are allocated by the caller; the Jacobians
are zeroed by the kernels before their blocks are written."""

from numba import prange

from ..kernels.checks import vector_finite
from ..kernels.fastargs import made, made2, missed, output_arg, state_args
from ..kernels.jit import entry, fast_entry, helper, pentry
from ..kernels.lie import ARG_V, difference_jacobians, integrate_jacobians, integrate_transport
from .batch import chunk
from .twin import twin
from .checks import (BAD_SHAPE, batch_configurations_ok, batch_tangent_ok, outputs_fit,
                     pair_ok, velocity_state_ok)

BAD_ARGUMENT = "argument: not 0 (q) or 1 (v)"
BAD_MATRIX = "J: not finite"


@helper
def square_fits(mi, J):
    """J is (nv, nv)."""
    return J.shape[0] == mi[0, 2] and J.shape[1] == mi[0, 2]


@helper
def matrix_finite(J):
    """Every entry of J (n, k) finite: vector_finite row by row (branch-free, unlike
    checks.rows_finite's x.flat, which cost a 50 x 50 transport half its time)."""
    ok = True
    for r in range(J.shape[0]):
        ok &= vector_finite(J[r])
    return ok


@helper
def transport_ok(mi, J, argument, Jout):
    """J (nv, k) finite, Jout of J's shape, argument a code of kernels.lie."""
    if J.shape[0] != mi[0, 2] or Jout.shape[0] != J.shape[0] or Jout.shape[1] != J.shape[1]:
        raise ValueError(BAD_SHAPE)
    if argument < 0 or argument > ARG_V:
        raise ValueError(BAD_ARGUMENT)
    if not matrix_finite(J):
        raise ValueError(BAD_MATRIX)


# ---- single calls ----------------------------------------------------------------------


# q and v (q0, q1): arrays, or on the fast paths any objects (kernels.fastargs.state_args:
# False, computing nothing, unless both are float64 1-D ndarrays; True when done)


@fast_entry
def integrate_jacobians_one(mi, q, v, Jq, Jv, result=None):
    """Jq, Jv (nv, nv) = d integrate(q, v) / d q, / d v; given as shapes, made here
    (kernels.fastargs.output_arg): the result is then (Jq, Jv), of the named tuple class
    ``result`` where given (a REF)."""
    ok, q, v, _, _ = state_args(q, v, None, None, None)
    if not ok:
        return missed(Jq)
    velocity_state_ok(mi, q, v)
    o_q, A = output_arg(Jq)
    o_v, B = output_arg(Jv)
    outputs_fit(square_fits(mi, A) and square_fits(mi, B), o_q, o_v)
    integrate_jacobians(mi, q, v, A, B)
    return made2(o_q, o_v, result)


@fast_entry
def difference_jacobians_one(mi, q0, q1, J0, J1, result=None):
    """J0, J1 (nv, nv) = d difference(q0, q1) / d q0, / d q1 (or their shapes, as
    integrate_jacobians_one's)."""
    ok, q0, q1, _, _ = state_args(q0, q1, None, None, None)
    if not ok:
        return missed(J0)
    pair_ok(mi, q0, q1)
    o_0, A = output_arg(J0)
    o_1, B = output_arg(J1)
    outputs_fit(square_fits(mi, A) and square_fits(mi, B), o_0, o_1)
    difference_jacobians(mi, q0, q1, A, B)
    return made2(o_0, o_1, result)


@fast_entry
def integrate_transport_one(mi, q, v, J, argument, Jout):
    """Jout (nv, k) = (d integrate(q, v) / d q or / d v) J, J (nv, k); Jout given as its
    shape is made here (kernels.fastargs.output_arg): the result is then Jout."""
    ok, q, v, _, _ = state_args(q, v, None, None, None)
    if not ok:
        return missed(Jout)
    velocity_state_ok(mi, q, v)
    transport_ok(mi, J, argument, J)
    obj, out = output_arg(Jout)
    outputs_fit(out.shape[0] == J.shape[0] and out.shape[1] == J.shape[1], obj)
    integrate_transport(mi, q, v, J, argument, out)
    return made(obj)


# ---- batches ---------------------------------------------------------------------------


@entry
def batch_transport_ok(mi, q, v, J, argument):
    """The batch's q (B, nq) valid, v (B, nv) and J (B, nv, k) finite, argument a code."""
    batch_tangent_ok(mi, q, v)
    if J.shape[0] != q.shape[0] or J.shape[1] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if argument < 0 or argument > ARG_V:
        raise ValueError(BAD_ARGUMENT)
    for b in range(J.shape[0]):
        if not matrix_finite(J[b]):
            raise ValueError(BAD_MATRIX)


@entry
def integrate_jacobians_batch(mi, q, v, Jq, Jv, check):
    if check:
        batch_tangent_ok(mi, q, v)
    for b in range(q.shape[0]):
        integrate_jacobians(mi, q[b], v[b], Jq[b], Jv[b])


@pentry
def integrate_jacobians_parallel(mi, q, v, Jq, Jv, nchunks):
    batch_tangent_ok(mi, q, v)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(integrate_jacobians_batch, (mi, q[lo:hi], v[lo:hi], Jq[lo:hi], Jv[lo:hi], False))


@entry
def difference_jacobians_batch(mi, q0, q1, J0, J1, check):
    if check:
        batch_configurations_ok(mi, q0)
        batch_configurations_ok(mi, q1)
    for b in range(q0.shape[0]):
        difference_jacobians(mi, q0[b], q1[b], J0[b], J1[b])


@pentry
def difference_jacobians_parallel(mi, q0, q1, J0, J1, nchunks):
    batch_configurations_ok(mi, q0)
    batch_configurations_ok(mi, q1)
    for c in prange(nchunks):
        lo, hi = chunk(q0.shape[0], nchunks, c)
        twin(difference_jacobians_batch, (mi, q0[lo:hi], q1[lo:hi], J0[lo:hi], J1[lo:hi],
                                          False))


@entry
def integrate_transport_batch(mi, q, v, J, Jout, argument, check):
    if check:
        batch_transport_ok(mi, q, v, J, argument)
    for b in range(q.shape[0]):
        integrate_transport(mi, q[b], v[b], J[b], argument, Jout[b])


@pentry
def integrate_transport_parallel(mi, q, v, J, Jout, argument, nchunks):
    batch_transport_ok(mi, q, v, J, argument)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(integrate_transport_batch, (mi, q[lo:hi], v[lo:hi], J[lo:hi], Jout[lo:hi],
                                         argument, False))
