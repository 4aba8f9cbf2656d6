"""Packed model layout shared by the Python model and the compiled kernels.

A model reaches a kernel as two arrays, indexed by joint like Pinocchio (row 0 is the
universe, rows 1..N the joints, a parent always before its children):

``mi`` (int64, (N+1, MI_WIDTH))
    row 0: ``[N, nq, nv, 0, ...]`` and, in column MI_ARM_WORLD, the number of joints
    flagged there; row i: parent, joint type, first q index,
    first v index, nq_i, nv_i, nv of the subtree (depth-first numbering makes the
    subtree's dofs the contiguous range idx_v .. idx_v + nvsub), and for a revolute or
    prismatic joint the length of the run of revolute / prismatic joints i, i+1, ...
    (their q and v coordinates are the contiguous ranges idx_q .. idx_q + run and
    idx_v .. idx_v + run, which the configuration kernels treat as one vector), and 1
    for a free flyer whose linear armature acts on the world-frame linear velocity
    (MuJoCo's convention, kernels/armature.py), else 0.
``mf`` (float64, (N+1, MF_WIDTH))
    row 0: gravity (3); row i: the joint placement in its parent joint's frame
    (rotation R row-major, translation p: x_parent = R x_child + p), the joint axis,
    the body inertia in the joint frame (mass m, centre of mass c, rotational inertia
    Ic about c, row-major) and the motion-subspace columns S_k (6 each, [linear, angular],
    joint frame) of the joint's nv_i dofs.

Frames reach a kernel as two more: ``frame_parents`` (int64, (nframes,), the parent
joint of each frame) and ``frame_mf`` (float64, (nframes, FM_WIDTH), each frame's
placement in its parent joint's frame).

The offsets below are module constants so that Numba folds them into the kernels.
"""

# joint types
REVOLUTE = 0             # nq = 1, nv = 1, about any unit axis
PRISMATIC = 1            # nq = 1, nv = 1, along any unit axis
REVOLUTE_UNBOUNDED = 2   # continuous: q = (cos, sin), nv = 1
SPHERICAL = 3            # q = quaternion [x, y, z, w], nv = 3
FREE_FLYER = 4           # q = [x, y, z, qx, qy, qz, qw], v = body twist [lin, ang]

JOINT_NQ = {REVOLUTE: 1, PRISMATIC: 1, REVOLUTE_UNBOUNDED: 2, SPHERICAL: 4, FREE_FLYER: 7}
JOINT_NV = {REVOLUTE: 1, PRISMATIC: 1, REVOLUTE_UNBOUNDED: 1, SPHERICAL: 3, FREE_FLYER: 6}
JOINT_NAMES = {
    REVOLUTE: "revolute", PRISMATIC: "prismatic", REVOLUTE_UNBOUNDED: "continuous",
    SPHERICAL: "spherical", FREE_FLYER: "free_flyer",
}

# mi columns
MI_PARENT = 0
MI_TYPE = 1
MI_IQ = 2
MI_IV = 3
MI_NQ = 4
MI_NV = 5
MI_NVSUB = 6        # dofs in the subtree rooted at the joint (the joint's own included)
MI_RUN = 7          # revolute / prismatic joints i, i+1, ... in a row (0 for other types)
MI_ARM_WORLD = 8    # 1: free flyer with MuJoCo's world-frame linear armature; row 0: how many
MI_WIDTH = 9
# row 0 (the universe) holds (njoints - 1, nq, nv) in its first columns, and:
MI_ROOT_FREE_FLYER = 3   # the first root joint (parent 0) that is a free flyer, 0 for none

# mf columns
MF_GRAVITY = 0      # row 0 only
MF_R = 0            # 9: placement rotation, row-major
MF_P = 9            # 3: placement translation
MF_AXIS = 12        # 3: joint axis (revolute, prismatic, continuous)
MF_Y = 15           # 13: body inertia about the joint origin, compact (kernels/spatial.py):
MF_MASS = 15        #     mass m,
MF_H = 16           #     first moment m c,
MF_IO = 19          #     rotational inertia about the origin Ic + m (|c|^2 I - c c^T)
MF_COM = 28         # 3: centre of mass in the joint frame
MF_IC = 31          # 9: rotational inertia about the com, joint-frame axes
MF_S = 40           # 6 * nv_i: motion subspace columns
MF_ARM = MF_S + 36  # nv_i: armature of the joint's dofs (rotor inertia, added to M's diagonal)
MF_WIDTH = MF_ARM + 6

# frame table (``Model.frame_mf``, float64, (nframes, FM_WIDTH)): frame k's placement in
# its parent joint's frame (``Model.frame_parents[k]``), rotation row-major then translation
FM_R = 0            # 9
FM_P = 9            # 3
FM_ID = 12          # 1.0 where that placement is the identity (most URDF frames): oMf = oMi
FM_WIDTH = 13
