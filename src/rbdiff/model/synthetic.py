"""Synthetic models: the serial chains and binary trees of Singh et al. 2022 (sec. VI) and
seeded random trees that mix every joint type."""

import numpy as np

from .model import FrameType, ModelBuilder

_LINK_INERTIA = np.diag([0.5, 0.5, 1.0])  # protocol: Izz = 1 (Ixx, Iyy: smallest physical values; planar motion never sees them)


def _protocol_link(b, parent, name, offset):
    T = np.eye(4)
    T[0, 3] = offset                      # 1 m links along x
    j = b.add_joint(parent, "revolute", name, placement=T, axis=[0.0, 0.0, 1.0])
    b.append_body(j, 1.0, [0.5, 0.0, 0.0], _LINK_INERTIA)
    return j


def serial_chain(n, gravity=(0.0, 0.0, -9.81)):
    """n revolute links in a chain: 1 kg, 1 m long, com at the midpoint, Izz = 1, about z."""
    if n < 1:
        raise ValueError(f"serial_chain: n must be >= 1, got {n}")
    b = ModelBuilder(gravity)
    parent = 0
    for k in range(n):
        parent = _protocol_link(b, parent, f"joint{k + 1}", 0.0 if k == 0 else 1.0)
    return b.build()


def binary_tree(n, gravity=(0.0, 0.0, -9.81)):
    """n links where link k (1-based, heap order) has children 2k and 2k+1; links as in
    serial_chain. Joints are numbered depth-first, as every rbdiff model is."""
    if n < 1:
        raise ValueError(f"binary_tree: n must be >= 1, got {n}")
    b = ModelBuilder(gravity)

    def visit(k, parent):
        j = _protocol_link(b, parent, f"joint{k}", 0.0 if k == 1 else 1.0)
        for child in (2 * k, 2 * k + 1):
            if child <= n:
                visit(child, j)

    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 100))
    visit(1, 0)
    return b.build()


def _random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_inertia(rng):
    """A random physical rigid body: (mass, com, rotational inertia about the com)."""
    m = rng.uniform(0.2, 3.0)
    principal = rng.uniform(0.05, 1.0, size=3)
    principal[2] = rng.uniform(abs(principal[0] - principal[1]) + 0.01,
                               principal[0] + principal[1])
    R = _random_rotation(rng)
    return m, rng.uniform(-0.3, 0.3, size=3), R @ np.diag(principal) @ R.T


def random_tree(n, rng=None, joint_types=("revolute", "prismatic", "continuous",
                                           "spherical", "free_flyer"),
                floating_base=False, gravity=(0.0, 0.0, -9.81)):
    """A random tree of n joints (depth-first numbered) with random axes, placements and
    inertias; joint types drawn from ``joint_types``. With floating_base the root joint is
    a free-flyer. rng: a numpy Generator or a seed."""
    rng = np.random.default_rng(rng)
    b = ModelBuilder(gravity)
    parents = [0]
    for k in range(n):
        parents.append(0 if k == 0 else int(rng.integers(1, k + 1)))
    children = {i: [] for i in range(n + 1)}
    for k in range(1, n + 1):
        children[parents[k]].append(k)

    def visit(k, parent):
        jt = "free_flyer" if (k == 1 and floating_base) else str(rng.choice(joint_types))
        T = np.eye(4)
        T[:3, :3] = _random_rotation(rng)
        T[:3, 3] = rng.uniform(-0.5, 0.5, size=3)
        axis = rng.normal(size=3)
        j = b.add_joint(parent, jt, f"j{k}_{jt}", placement=T, axis=axis,
                        lower=-2.0, upper=2.0)
        b.append_body(j, *random_inertia(rng))
        b.add_frame(f"body{k}", j, np.eye(4), FrameType.BODY)
        for c in children[k]:
            visit(c, j)

    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 100))
    for c in children[0]:
        visit(c, 0)
    return b.build()
