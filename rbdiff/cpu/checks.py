"""Input checks the compiled entry points share: lengths, valid configurations (unit
quaternions and (cos, sin) pairs) and finite values. They raise ValueError with a short
code; the api layer (rbdiff.validation.explain) turns a refusal into a precise message."""

from ..kernels.checks import all_finite, configuration_ok
from ..kernels.jit import entry, helper
from ..kernels.workspace import W_WIDTH, workspace_rows

BAD_Q = "q: not finite, or a quaternion / (cos, sin) pair is not unit"
BAD_STATE = "v, a/tau or fext: not finite"
BAD_SHAPE = "q, v or a/tau: wrong length"
BAD_FRAME = "frame: not an index into model.frames"
BAD_REFERENCE = "reference: not a reference-frame code"


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
        if not all_finite(fext):
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
def frame_ok(fparent, frame):
    """frame indexes the model's frame table."""
    if frame < 0 or frame >= fparent.shape[0]:
        raise ValueError(BAD_FRAME)


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
def configuration_checked(mi, q, ws):
    """Length of q right, q a valid configuration, ws large enough."""
    if q.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    workspace_ok(mi, ws)


@entry
def batch_states_ok(mi, q, v, u, fext):
    """q (B, nq) valid configurations; v, u (B, nv) and fext (B, k, 6) finite. Raises
    ValueError(BAD_Q or BAD_STATE) before any item runs, so a refused batch writes
    nothing."""
    for b in range(q.shape[0]):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(u.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)


@entry
def batch_configurations_ok(mi, q):
    """q (B, nq) valid configurations, or ValueError(BAD_Q)."""
    for b in range(q.shape[0]):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
