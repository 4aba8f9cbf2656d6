"""Forward kinematics, frame placements and frame Jacobians (Pinocchio's forwardKinematics,
updateFramePlacement(s) and computeFrameJacobian), and the kinematics derivatives.

Every function takes one configuration (q of shape (nq,)) or a batch (B, nq) and returns
the same leading axis; the work is done by compiled kernels (kernels/frames.py,
kernels/kinematics_derivatives.py) writing straight into the returned arrays. A batch
runs through rbdiff.cpu.batch (on all cores when rbdiff.cpu.policy finds it worth it)
and equals a loop of single calls bit for bit. Single float64 1-D calls take a fast path
as api.rnea's: a compiled front (cpu/fronts.py) that reads the model's record, finds the
frame by name and the reference by code in their dictionaries, and runs the single entry
on the model's held scratch.
"""

import numpy as np

from .cpu import batch as cb
from .cpu import policy
from .cpu import single as cs
from .cpu.fronts import bind as _bind
from .cpu import fronts as _fronts
from .kernels.jit import native, native_ref
from .model.lookup import frame_index as _frame_id
from .model.lookup import joint_index as _joint_id
from .cpu.scratch import HELD as _HELD
from .cpu.scratch import single_call_scratch
from .declare import Function, reference_code, reference_option
from .results import (REFERENCE_CODES, Kinematics, KinematicsDerivatives, pending,
                      reference_name)
from .validation import explain, gpu_call, on_device, prepare

# The fast paths (see api.py): the entries ask the arrays' types themselves; a frame (a
# name or an index) is turned into its index, and a reference into its code, by one
# dictionary lookup each (model._frame_ids, REFERENCE_CODES; in the fronts, compiled, or
# a subscript that raises KeyError or TypeError). Every miss takes the general path,
# which names the problem.
_FAST_MISS = (AttributeError, TypeError, ValueError, KeyError)
_empty = np.empty
_REF = REFERENCE_CODES
_S44 = (4, 4)
# (cpu/fronts.py: compiled, they take the call's own arguments and read the model's
# record; the entries they run make the outputs, kernels.fastargs.output_arg)
_fk_q = _bind(_fronts.fk_q_front, "_fk_q", globals())
_fk_qv = _bind(_fronts.fk_qv_front, "_fk_qv", globals())
_fk_qva = _bind(_fronts.fk_qva_front, "_fk_qva", globals())
_frame_placement_front = _bind(_fronts.frame_placement_front, "_frame_placement_front",
                               globals(), shapes=(3,))
_frame_placements_front = _bind(_fronts.frame_placements_front, "_frame_placements_front",
                                globals())
_frame_jacobian_front = _bind(_fronts.frame_jacobian_front, "_frame_jacobian_front",
                              globals())
_kinematics_state_one = native_ref(cs.kinematics_state_one, "_kinematics_state_one",
                                   globals(), (2, 3, 4))
_derivatives_of_state_one = native(cs.derivatives_of_state_one, "_derivatives_of_state_one",
                                   globals(), inputs=())
_joint_derivatives_of_state_one = native(cs.joint_derivatives_of_state_one,
                                         "_joint_derivatives_of_state_one", globals(),
                                         inputs=())
_joint_kinematics_derivatives_one = native_ref(cs.joint_kinematics_derivatives_one,
                                               "_joint_kinematics_derivatives_one", globals(),
                                               (2, 3, 4))


def _scratch(model, dtype):
    """A single call's workspace of ``dtype`` (the general path; the fast paths use
    cpu.scratch's HELD workspaces)."""
    return single_call_scratch(model.njoints, model.nv, dtype, False)[0]


def forward_kinematics(model, q, v=None, a=None):
    """Joint placements in the world (njoints, 4, 4) and, when v (and a) are given, each
    joint's spatial velocity (and acceleration, gravity excluded) in its local frame,
    (njoints, 6) [linear, angular] - Pinocchio's data.oMi, data.v and data.a after
    forwardKinematics (Featherstone 2008 Table 5.1, RNEA's forward pass without gravity).

    q (nq,), v (nv,) or None, a (nv,) or None (None: zero; velocities or accelerations
    None when v or a is). A leading batch axis, q (B, nq), v and a (B, nv), gives
    (B, njoints, 4, 4) and (B, njoints, 6)."""
    try:    # fast path (see _FAST_MISS); the entry checks types, lengths and values
        if v is None:
            r = None if a is not None else _fk_q(model, q, Kinematics)
        elif a is None:
            r = _fk_qv(model, q, v, Kinematics)
        else:
            r = _fk_qva(model, q, v, a, Kinematics)
        if r is not None:
            return r
    except _FAST_MISS:
        pass
    return _forward_kinematics(model, q, v, a)


def _forward_kinematics(model, q, v, a):
    """forward_kinematics' general path (its own function: the comprehension's closure
    over ``model`` made ``model`` a cell in the public function, ~25 ns a fast call)."""
    named = [("q", q, model.nq)] + [(n, x, model.nv) for n, x in (("v", v), ("a", a))
                                    if x is not None]
    arrays, _, batch, mf = prepare(model, None, named, wants_fext=False)
    given = dict(zip((n for n, _, _ in named), arrays))
    qq, vv, aa = given["q"], given.get("v"), given.get("a")
    if aa is not None and vv is None:
        vv = np.zeros_like(aa)
    lead = () if batch is None else (batch,)
    T = np.empty(lead + model._sT, qq.dtype)
    V = None if vv is None else np.empty(lead + model._sm, qq.dtype)
    A = None if aa is None else np.empty(lead + model._sm, qq.dtype)
    try:
        if batch is None:
            cs.forward_kinematics_one(model.mi, mf, qq, vv, aa, _scratch(model, qq.dtype),
                                      T, V, A)
        else:
            policy.run(model, cb.forward_kinematics_batch, cb.forward_kinematics_parallel,
                       batch, (model.mi, mf, qq, vv, aa, T, V, A))
    except ValueError:
        raise explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], None) from None
    return Kinematics(T, None if v is None else V, A)


_IN_Q = (("q", "nq"),)
_IN_QVA = (("q", "nq"), ("v", "nv"), ("a", "nv"))
_KD = (("njoints", 6, "nv"),) * 5
# the general paths (declare.py); the frame functions' entries take the frame table
_FRAME_PLACEMENTS = Function("frame_placements", cs.frame_placements_one,
                             (cb.frame_placements_batch, cb.frame_placements_parallel),
                             _IN_Q, (("nframes", 4, 4),), model_args="frames")
_FRAME_PLACEMENT = Function("frame_placement", cs.frame_placement_one,
                            (cb.frame_placement_batch, cb.frame_placement_parallel),
                            _IN_Q, ((4, 4),), model_args="frames",
                            params=(("frame", _frame_id),))
_FRAME_JACOBIAN = Function("frame_jacobian", cs.frame_jacobian_one,
                           (cb.frame_jacobian_batch, cb.frame_jacobian_parallel),
                           _IN_Q, ((6, "nv"),), model_args="frames",
                           params=(("frame", _frame_id), ("reference", reference_option)))
_KIN_D = Function("kinematics_derivatives", cs.kinematics_derivatives_one,
                  (cb.kinematics_derivatives_batch, cb.kinematics_derivatives_parallel),
                  _IN_QVA, _KD, result=KinematicsDerivatives,
                  params=(("reference", reference_option),))
_JOINT_KIN_D = Function("kinematics_derivatives", cs.joint_kinematics_derivatives_one,
                        (cb.joint_kinematics_derivatives_batch,
                         cb.joint_kinematics_derivatives_parallel),
                        _IN_QVA, ((6, "nv"),) * 5, result=KinematicsDerivatives,
                        variant="joint")


def frame_placements(model, q):
    """Placements of every frame in the world, oMf = oMi iMf, (len(model.frames), 4, 4);
    a batch q (B, nq) gives (B, len(model.frames), 4, 4). Pinocchio's forwardKinematics
    + updateFramePlacements (data.oMf)."""
    try:
        T = _frame_placements_front(model, q)
        if T is not None:
            return T
    except _FAST_MISS:
        pass
    return _FRAME_PLACEMENTS(model, q)


def frame_placement(model, q, frame):
    """Placement (4, 4) in the world of ``frame`` (a name or an index into model.frames),
    computed from the joints on its support only; a batch q (B, nq) gives (B, 4, 4).
    Bit for bit frame_placements(model, q)[frame]."""
    try:
        T = _frame_placement_front(model, q, frame, _S44)
        if T is not None:
            return T
    except _FAST_MISS:
        pass
    return _FRAME_PLACEMENT(model, q, options=(_frame_id(model, frame),))


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """Jacobian J (6, nv) of ``frame``'s spatial velocity [linear, angular]: in the frame
    itself ("local"), at the world origin in world axes ("world"), or at the frame origin
    in world axes ("local_world_aligned"), as Pinocchio's computeFrameJacobian
    (kernels/frames.py: the world motion-subspace columns of the frame's support,
    re-expressed). ``frame``: a name or an index into model.frames. A batch q (B, nq)
    gives (B, 6, nv)."""
    try:    # the front reads the model's record; the entry checks q's type, and makes J
        J = _frame_jacobian_front(model, q, frame, reference, _REF)
        if J is not None:
            return J
    except _FAST_MISS:
        pass
    return _FRAME_JACOBIAN(model, q, options=(_frame_id(model, frame),
                                              reference_code(reference)))


def _all_of_state(model, st, code):
    """The five (njoints, 6, nv) arrays of a pending KinematicsDerivatives."""
    s = model._skd
    out = (_empty(s), _empty(s), _empty(s), _empty(s), _empty(s))
    _derivatives_of_state_one(model.mi, model.mf, code, st, *out)
    return out


def _joint_of_state(model, st, i, code):
    """Joint i's five (6, nv) arrays of a pending KinematicsDerivatives."""
    s = model._sJ
    out = (_empty(s), _empty(s), _empty(s), _empty(s), _empty(s))
    _joint_derivatives_of_state_one(model.mi, model.mf, i, code, st, *out)
    return KinematicsDerivatives(*out)


def kinematics_derivatives(model, q, v, a, reference="world", joint=None):
    """Derivatives of the spatial velocity v_i and acceleration a_i (gravity excluded) of
    every joint with respect to q (tangent space), v and a (Carpentier & Mansard 2018
    sec. III-D: the motion sets of the RNEA chain-rule forward pass, Alg. 2 lines 3, 5).

    q (nq,), v (nv,), a (nv,). Returns KinematicsDerivatives(dv_dq, dv_dv, da_dq, da_dv,
    da_da), each (njoints, 6, nv), row i for joint i (row 0, the universe, zero); a leading batch axis gives
    (B, njoints, 6, nv); CUDA device arrays give device arrays
    (rbdiff.gpu.kinematics_derivatives). Entries against dofs that are not joint i's or its ancestors'
    are zero.

    As Pinocchio's computeForwardKinematicsDerivatives followed by
    getJointVelocityDerivatives / getJointAccelerationDerivatives(model, data, i, rf):
    on one float64 state the call computes the kinematics state only, at the cost of
    Pinocchio's compute; the five arrays are written when a field is first read, and
    ``result.joint(i)`` gives joint i's five (6, nv) from that state without them (four
    feet: one call, four getters). Batches, other dtypes and device arrays return the
    arrays written. ``joint`` (a name or an index 1..njoints-1) computes that joint's alone:
    each (6, nv) ((B, 6, nv) for a batch), in one pass over joints 1..joint. Every route
    runs the same closed forms, so they agree bit for bit.

    reference="world" (pin.WORLD): v_i, a_i at the world origin in world axes; for a
      dof k of joint j (j = i or an ancestor), lambda = j's parent, S_k its world column:
      dv_dq = (v_lambda - v_i) x S_k, dv_dv = da_da = S_k,
      da_dq = (a_lambda - a_i) x S_k + (v_lambda - v_i) x (v_lambda x S_k),
      da_dv = (v_j + v_lambda - v_i) x S_k (kernels/kinematics_derivatives.py);
    "local" (pin.LOCAL): the derivatives of v_i, a_i in joint i's own frame;
    "local_world_aligned" (pin.LOCAL_WORLD_ALIGNED): the world-frame derivatives
      re-expressed at joint i's origin with world axes, that origin held fixed (as
      Pinocchio; not the derivative of the velocity of the moving origin).
    Pinocchio's acceleration getter in WORLD and LOCAL_WORLD_ALIGNED differs from the true
    da_dq in the columns of a multi-dof joint (spherical, free-flyer) that has a parent;
    rbdiff returns the true derivative (checked against central differences)."""
    try:    # fast path: a fresh kinematics state (all joints) or the model's workspace
        # (one joint); a bad joint or reference raises KeyError
        if joint is None:
            code = _REF[reference]
            st = _empty(model._sstate)
            if _kinematics_state_one(model.mi, model.mf, q, v, a, st):
                return pending(_all_of_state, _joint_of_state, model, st, code)
        else:
            s = model._sJ
            out = (_empty(s), _empty(s), _empty(s), _empty(s), _empty(s))
            if _joint_kinematics_derivatives_one(model.mi, model.mf, q, v, a,
                                                 model._joint_ids[joint],
                                                 _REF[reference],
                                                 _HELD[model._scratch_key], *out):
                return KinematicsDerivatives(*out)
    except _FAST_MISS:
        pass
    reference = reference_name(reference)
    j = None if joint is None else _joint_id(model, joint)
    if on_device(q, v, a):
        full = gpu_call("kinematics_derivatives", model, q, v, a, reference=reference)
        if j is None:
            return full
        row = (slice(None), j) if len(q.shape) == 2 else (j,)   # device views
        return KinematicsDerivatives(*(d[row] for d in full))
    code = REFERENCE_CODES[reference]
    if j is None:
        return _KIN_D(model, q, v, a, options=(code,))
    return _JOINT_KIN_D(model, q, v, a, options=(j, code))
