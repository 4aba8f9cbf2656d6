"""Synthetic models: the papers' serial chains and binary trees, random trees."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model import layout as L


def test_serial_chain_protocol():
    m = rbd.models.serial_chain(5)
    assert (m.nq, m.nv, m.njoints) == (5, 5, 6)      # njoints counts the universe
    assert list(m.parents) == [0, 0, 1, 2, 3, 4]
    assert np.allclose(m.masses[1:], 1.0) and np.allclose(m.coms[1:], [0.5, 0, 0])
    assert np.allclose(m.inertias[1:, 2, 2], 1.0)
    assert np.allclose(m.placements[2:, 0, 3], 1.0)


def test_binary_tree_shape_and_depth_first_numbering():
    m = rbd.models.binary_tree(15)
    assert m.njoints == 16
    depth = [0] * 16
    for i in range(1, 16):
        depth[i] = depth[m.parents[i]] + 1
    assert max(depth) == 4
    assert sum(1 for i in range(1, 16) if m.parents[i] == 1) == 2


def test_random_tree_has_every_joint_type():
    m = rbd.models.random_tree(40, 0)
    assert set(m.joint_types[1:]) == {L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED,
                                      L.SPHERICAL, L.FREE_FLYER}


def test_builder_rejects_bad_input():
    b = rbd.ModelBuilder()
    with pytest.raises(ValueError, match="unsupported joint type"):
        b.add_joint(0, "helical", "h")
    with pytest.raises(ValueError, match="axis"):
        b.add_joint(0, "revolute", "r", axis=[0, 0, 0])
    j = b.add_joint(0, "revolute", "r")
    with pytest.raises(ValueError, match="negative|non-negative"):
        b.append_body(j, -1.0, [0, 0, 0], np.eye(3))
    with pytest.raises(ValueError, match="triangle"):
        b.append_body(j, 1.0, [0, 0, 0], np.diag([0.1, 0.1, 1.0]))
    with pytest.raises(ValueError, match="positive semi-definite"):
        b.append_body(j, 1.0, [0, 0, 0], np.diag([1.0, 1.0, -0.5]))
    with pytest.raises(ValueError, match="already exists"):
        b.add_joint(0, "revolute", "r")


def test_non_depth_first_numbering_is_refused():
    b = rbd.ModelBuilder()
    a = b.add_joint(0, "revolute", "a")
    b.add_joint(0, "revolute", "b")
    b.add_joint(a, "revolute", "a_child")
    with pytest.raises(ValueError, match="depth-first"):
        b.build()
