"""Input checks the compiled entry points share: lengths, valid configurations (unit
quaternions and (cos, sin) pairs) and finite values. They raise ValueError with a short
code; the api layer (rbdiff.validation.explain) turns a refusal into a precise message."""

from ..kernels.checks import FLOAT_MAX, all_finite, configuration_ok, vector_finite
from ..kernels.fastargs import release
from ..kernels.jit import entry, helper
from ..kernels.kinematics_derivatives import STATE_WIDTH
from ..kernels.workspace import W_WIDTH, workspace_rows

BAD_Q = "q: not finite, or a quaternion / (cos, sin) pair is not unit"
BAD_STATE = "v, a/tau or fext: not finite"
BAD_SHAPE = "q, v or a/tau: wrong length"
BAD_FRAME = "frame: not an index into model.frames"
BAD_REFERENCE = "reference: not a reference-frame code"
BAD_JOINT = "joint: not a moving joint's index (1..njoints-1)"
BAD_SINGULAR = "M(q) is singular: an articulated inertia is not positive definite"


@helper
def state_ok(mi, q, v, a, fext):
    """Lengths right, q a valid configuration, v, a (or tau) and fext finite."""
    if q.shape[0] != mi[0, 1] or v.shape[0] != mi[0, 2] or a.shape[0] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a)):
        raise ValueError(BAD_STATE)
    if fext is not None:
        if fext.shape[0] != 0 and fext.shape[0] != mi[0, 0] + 1 or fext.shape[1] != 6:
            raise ValueError(BAD_SHAPE)     # the fast paths pass fext unchecked
        if not all_finite(fext):
            raise ValueError(BAD_STATE)


@helper
def dynamics_finite(qdd, made=None):
    """Raise BAD_SINGULAR unless the forward dynamics qdd (nv,) is finite: the inputs were
    checked finite, so a NaN or Inf here comes from a zero pivot of M(q) (an articulated
    inertia D = S^T I^A S that is not positive definite). ``made``: the object of qdd
    where the entry made it (kernels.fastargs.output_arg), dropped before the error."""
    if not vector_finite(qdd):
        release(made)
        raise ValueError(BAD_SINGULAR)


@helper
def diagonal_finite(Minv):
    """M^-1 (nv, nv) finite on its diagonal, where a zero pivot of M(q) shows."""
    ok = True
    for k in range(Minv.shape[0]):
        ok &= (abs(Minv[k, k].real) <= FLOAT_MAX) & (abs(Minv[k, k].imag) <= FLOAT_MAX)
    return ok


@helper
def minverse_finite(Minv, made=None):
    """dynamics_finite for M^-1."""
    if not diagonal_finite(Minv):
        release(made)
        raise ValueError(BAD_SINGULAR)


@helper
def outputs_fit(fits, made, made2=None):
    """Raise BAD_SHAPE unless ``fits`` (the outputs' shapes are right), dropping first the
    outputs the entry made (kernels.fastargs.output_arg's objects; None where given)."""
    if not fits:
        release(made)
        release(made2)
        raise ValueError(BAD_SHAPE)


@helper
def singular_found(bad, check):
    """How a forward-dynamics batch entry ends: ``bad`` is its first item whose result
    was not finite (-1: none). A serial call (check) raises BAD_SINGULAR; a chunk of a
    parallel entry returns ``bad``, and the parallel entry raises after its prange (an
    exception raised inside a parallel region does not propagate)."""
    if check and bad >= 0:
        raise ValueError(BAD_SINGULAR)
    return bad


@helper
def tangent_ok(mi, q, v, qout):
    """integrate's input: lengths right (qout's too), q a valid configuration, v finite."""
    if q.shape[0] != mi[0, 1] or v.shape[0] != mi[0, 2] or qout.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not vector_finite(v):
        raise ValueError(BAD_STATE)


@helper
def velocity_state_ok(mi, q, v):
    """state_ok without a/tau and fext: lengths right, q valid, v finite."""
    if q.shape[0] != mi[0, 1] or v.shape[0] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not all_finite(v):
        raise ValueError(BAD_STATE)


@helper
def pair_ok(mi, q0, q1):
    """difference's inputs: lengths right, q0 and q1 valid configurations."""
    if q0.shape[0] != mi[0, 1] or q1.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not (configuration_ok(mi, q0) and configuration_ok(mi, q1)):
        raise ValueError(BAD_Q)



@helper
def frame_ok(fparent, frame):
    """frame indexes the model's frame table."""
    if frame < 0 or frame >= fparent.shape[0]:
        raise ValueError(BAD_FRAME)


@helper
def joint_ok(mi, joint):
    """joint is a moving joint's index, 1..njoints-1 (mi[0, 0] moving joints)."""
    if joint < 1 or joint > mi[0, 0]:
        raise ValueError(BAD_JOINT)


@helper
def reference_ok(reference):
    """reference is one of kinematics_derivatives' WORLD, LOCAL, LOCAL_WORLD_ALIGNED."""
    if reference < 0 or reference > 2:
        raise ValueError(BAD_REFERENCE)


@helper
def workspace_ok(mi, ws):
    """ws has the rows and columns the kernels index (the fast entries trust their caller
    for everything else about it)."""
    if ws.shape[0] < workspace_rows(mi) or ws.shape[1] < W_WIDTH:
        raise ValueError("ws: too small")


@helper
def state_width_ok(mi, st):
    """st holds a kinematics state: the rows and the columns fk.kinematics_pass writes."""
    if st.shape[0] < workspace_rows(mi) or st.shape[1] < STATE_WIDTH:
        raise ValueError("kinematics state: wrong shape")


@helper
def configuration_checked(mi, q, ws):
    """Length of q right, q a valid configuration, ws large enough."""
    if q.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    workspace_ok(mi, ws)


@helper
def rows_finite(x):
    """Every entry of x (B, n) finite, row by row (x.ravel() of a strided x would copy)."""
    for b in range(x.shape[0]):
        if not all_finite(x[b]):
            return False
    return True


@entry
def batch_states_ok(mi, q, v, u, fext):
    """q (B, nq) valid configurations; v, u (B, nv) and fext (B, k, 6) (k = 0 or
    njoints, the universe counted) or None finite. Raises ValueError(BAD_SHAPE, BAD_Q or BAD_STATE) before any
    item runs, so a refused batch writes nothing."""
    B = q.shape[0]
    if (q.shape[1] != mi[0, 1] or v.shape[0] != B or v.shape[1] != mi[0, 2]
            or u.shape[0] != B or u.shape[1] != mi[0, 2]):
        raise ValueError(BAD_SHAPE)
    for b in range(B):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    if not (rows_finite(v) and rows_finite(u)):
        raise ValueError(BAD_STATE)
    if fext is not None:
        if fext.shape[0] != B or (fext.shape[1] != 0 and fext.shape[1] != mi[0, 0] + 1):
            raise ValueError(BAD_SHAPE)
        for b in range(B):
            if not rows_finite(fext[b]):
                raise ValueError(BAD_STATE)


@entry
def batch_tangent_ok(mi, q, v):
    """q (B, nq) valid configurations and v (B, nv) finite (integrate), or ValueError."""
    if q.shape[1] != mi[0, 1] or v.shape[0] != q.shape[0] or v.shape[1] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    for b in range(q.shape[0]):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    if not rows_finite(v):
        raise ValueError(BAD_STATE)


@entry
def batch_configurations_ok(mi, q):
    """q (B, nq) valid configurations, or ValueError(BAD_SHAPE or BAD_Q)."""
    if q.shape[1] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    for b in range(q.shape[0]):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)


@entry
def fk_batch_ok(mi, q, v, a):
    """forward_kinematics' batch: q (B, nq) valid configurations; v, a (B, nv) finite, or
    None (a None whenever v is)."""
    if v is None:
        batch_configurations_ok(mi, q)
    elif a is None:
        batch_states_ok(mi, q, v, v, None)
    else:
        batch_states_ok(mi, q, v, a, None)
