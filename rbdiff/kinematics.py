"""Forward kinematics, frame placements and frame Jacobians (Pinocchio's forwardKinematics,
updateFramePlacements and getFrameJacobian).

Every function takes one configuration (q of shape (nq,)) or a batch (B, nq) and returns
the same leading axis; a batch runs the kinematics kernel through rbdiff.cpu.batch (on
all cores when rbdiff.cpu.policy finds it worth it) and equals a loop of single calls
bit for bit. The placements and motions
the kernel leaves in its workspace are re-expressed here with element-wise NumPy only
(no matmul or einsum, whose summation order may depend on the batch shape).
"""

import numpy as np

from .cpu import batch as cb
from .cpu import policy
from .cpu import single as cs
from .kernels.workspace import D_S, W_A, W_P, W_R, W_V, W_WIDTH
from .results import REFERENCE_CODES, REFERENCE_FRAMES, Kinematics, KinematicsDerivatives
from .validation import explain, gpu_call, on_device, prepare


def _workspace(model, q, v=None, a=None):
    """The kinematics kernel's workspace (rows, W_WIDTH), or (B, rows, W_WIDTH) for a
    batch: world placements, S, v and a (with -g). v, a None: zero."""
    named = [("q", q, model.nq)] + [(n, x, model.nv) for n, x in (("v", v), ("a", a))
                                    if x is not None]
    arrays, _, batch, mf = prepare(model, None, named, wants_fext=False)
    lead = () if batch is None else (batch,)
    z = np.zeros(lead + (model.nv,), arrays[0].dtype)
    given = dict(zip((n for n, _, _ in named), arrays))
    ws = np.empty(lead + (model.njoints + 1 + model.nv, W_WIDTH), arrays[0].dtype)
    args = (model.mi, mf, given["q"], given.get("v", z), given.get("a", z), ws)
    try:
        if batch is None:
            cs.kinematics_one(*args)
        else:
            policy.run(model, cb.kinematics_batch, cb.kinematics_parallel, batch, args)
        return ws
    except ValueError:
        raise explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], None) from None


def _homogeneous(R9, p):
    T = np.zeros(R9.shape[:-1] + (4, 4), dtype=R9.dtype)
    T[..., :3, :3] = R9.reshape(R9.shape[:-1] + (3, 3))
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def _compose(A, B):
    """A @ B for homogeneous transforms (..., 4, 4), broadcast, summed term by term."""
    return (A[..., :, 0, None] * B[..., None, 0, :] + A[..., :, 1, None] * B[..., None, 1, :]
            + A[..., :, 2, None] * B[..., None, 2, :] + A[..., :, 3, None] * B[..., None, 3, :])


def _rotate_t(R, x):
    """R^T x for rotations R (..., 3, 3) and vectors x (..., 3), term by term."""
    return R[..., 0, :] * x[..., 0, None] + R[..., 1, :] * x[..., 1, None] \
        + R[..., 2, :] * x[..., 2, None]


def _act_inv(T, m):
    """Motion m (..., 6) expressed in the frame of placement T (..., 4, 4) (world -> local)."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    w = m[..., 3:]
    lin = m[..., :3] - np.cross(p, w)
    return np.concatenate([_rotate_t(R, lin), _rotate_t(R, w)], axis=-1)


def forward_kinematics(model, q, v=None, a=None):
    """Joint placements in the world (njoints+1, 4, 4) and, when v (and a) are given, each
    joint's spatial velocity (and acceleration, gravity excluded) in its local frame,
    (njoints+1, 6) [linear, angular] - Pinocchio's data.oMi, data.v and data.a.

    q (nq,), v (nv,) or None, a (nv,) or None (None: zero). A leading batch axis,
    q (B, nq), v and a (B, nv), gives (B, njoints+1, 4, 4) and (B, njoints+1, 6)."""
    ws = _workspace(model, q, v, a)
    n = model.njoints
    T = _homogeneous(ws[..., :n + 1, 0:9], ws[..., :n + 1, W_P:W_P + 3])
    vel = acc = None
    if v is not None:
        vel = _act_inv(T, ws[..., :n + 1, W_V:W_V + 6])
    if a is not None:
        aw = ws[..., :n + 1, W_A:W_A + 6].copy()
        aw[..., :3] += model.gravity    # remove the fictitious base acceleration -g
        acc = _act_inv(T, aw)
    return Kinematics(T, vel, acc)


def _frame_table(model):
    """(parents (nframes,), placements (nframes, 4, 4)) of model.frames."""
    return (np.array([f.parent for f in model.frames], dtype=np.int64),
            np.array([f.placement for f in model.frames]).reshape(-1, 4, 4))


def frame_placements(model, q):
    """Placements of every frame in the world, (len(model.frames), 4, 4); a batch q
    (B, nq) gives (B, len(model.frames), 4, 4)."""
    T = forward_kinematics(model, q).placements
    parents, placements = _frame_table(model)
    return _compose(T[..., parents, :, :], placements)


def _frame_id(model, frame):
    return model.get_frame_id(frame) if isinstance(frame, str) else int(frame)


def frame_placement(model, q, frame):
    """Placement (4, 4) in the world of ``frame`` (a name or an index into model.frames);
    a batch q (B, nq) gives (B, 4, 4)."""
    f = model.frames[_frame_id(model, frame)]
    return _compose(forward_kinematics(model, q).placements[..., f.parent, :, :], f.placement)


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """Jacobian J (6, nv) of ``frame``'s spatial velocity [linear, angular]: in the frame
    itself ("local"), at the world origin in world axes ("world"), or at the frame origin
    in world axes ("local_world_aligned"), as Pinocchio's getFrameJacobian. A batch q
    (B, nq) gives (B, 6, nv)."""
    if reference not in REFERENCE_FRAMES:
        raise ValueError(f"reference: expected one of {REFERENCE_FRAMES}, got {reference!r}")
    f = model.frames[_frame_id(model, frame)]
    ws = _workspace(model, q)
    n = model.njoints
    J = np.zeros(ws.shape[:-2] + (6, model.nv), dtype=ws.dtype)
    cols = []
    j = f.parent
    while j > 0:
        cols.extend(range(int(model.idx_v[j]), int(model.idx_v[j] + model.nvs[j])))
        j = int(model.parents[j])
    cols = np.array(cols, dtype=np.int64)
    J[..., :, cols] = np.swapaxes(ws[..., n + 1 + cols, D_S:D_S + 6], -1, -2)
    if reference == "world":
        return J
    oMf = _compose(_homogeneous(ws[..., f.parent, W_R:W_R + 9], ws[..., f.parent, W_P:W_P + 3]),
                   f.placement)
    if reference == "local":
        return np.ascontiguousarray(
            np.swapaxes(_act_inv(oMf[..., None, :, :], np.swapaxes(J, -1, -2)), -1, -2))
    J[..., :3, :] += np.swapaxes(np.cross(np.swapaxes(J[..., 3:, :], -1, -2),
                                          oMf[..., None, :3, 3]), -1, -2)
    return J


def kinematics_derivatives(model, q, v, a, reference="world"):
    """Derivatives of the spatial velocity v_i and acceleration a_i (gravity excluded) of
    every joint with respect to q (tangent space), v and a (Carpentier & Mansard 2018
    sec. III-D: the motion sets of the RNEA chain-rule forward pass, Alg. 2 lines 3, 5).

    q (nq,), v (nv,), a (nv,). Returns KinematicsDerivatives(dv_dq, dv_dv, da_dq, da_dv,
    da_da), each (njoints, 6, nv), [i - 1] for joint i; a leading batch axis gives
    (B, njoints, 6, nv); CUDA device arrays give device arrays
    (rbdiff.gpu.kinematics_derivatives). Entries against dofs that are not joint i's or its ancestors'
    are zero. As Pinocchio's computeForwardKinematicsDerivatives followed by
    getJointVelocityDerivatives / getJointAccelerationDerivatives(model, data, i, rf):

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
    if reference not in REFERENCE_CODES:
        raise ValueError(f"reference: expected one of {REFERENCE_FRAMES}, got {reference!r}")
    if on_device(q, v, a):
        return gpu_call("kinematics_derivatives", model, q, v, a, reference=reference)
    named = [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)]
    arrays, _, batch, mf = prepare(model, None, named, wants_fext=False)
    shape = (model.njoints, 6, model.nv)
    if batch is not None:
        shape = (batch,) + shape
    outs = tuple(np.empty(shape, arrays[0].dtype) for _ in range(5))
    args = (model.mi, mf, *arrays, REFERENCE_CODES[reference], *outs)
    try:
        if batch is None:
            cs.kinematics_derivatives_one(*args)
        else:
            policy.run(model, cb.kinematics_derivatives_batch,
                       cb.kinematics_derivatives_parallel, batch, args)
    except ValueError:
        raise explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], None) from None
    return KinematicsDerivatives(*outs)
