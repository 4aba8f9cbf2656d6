"""No silent NaN: a model whose mass matrix is singular for every q is refused at load,
and forward dynamics on a singular M(q) raises a clear error instead of returning NaN."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.cpu import policy

URDF = """<robot name="r">
  <link name="base"/>
  <link name="upper"><inertial><mass value="1.0"/><origin xyz="0 0 0.2"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="revolute"><parent link="upper"/><child link="tip"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def test_massless_leaf_joint_is_refused_at_load():
    with pytest.raises(ValueError, match=r"joint 'wrist': no mass or inertia along the motion"
                                         r".*allow_singular=True"):
        rbd.load_urdf(URDF)
    model = rbd.load_urdf(URDF, allow_singular=True)      # kinematics-only use
    q = np.array([0.3, -0.2])
    assert rbd.frame_placement(model, q, "tip").shape == (4, 4)
    assert np.all(np.isfinite(rbd.rnea(model, q, np.ones(2), np.ones(2))))


def test_massless_subtree_root_is_named_once():
    b = rbd.ModelBuilder()
    j1 = b.add_joint(0, "revolute", "j1", axis=[0, 0, 1])
    b.append_body(j1, mass=1.0, com=[0.1, 0, 0], inertia=np.eye(3) * 0.01)
    j2 = b.add_joint(j1, "prismatic", "slider", placement=(np.eye(3), [0.3, 0, 0]),
                     axis=[1, 0, 0])
    b.add_joint(j2, "spherical", "ball")                  # no body anywhere below j1
    with pytest.raises(ValueError, match=r"^joint 'slider': "):
        b.build()
    assert b.build(allow_singular=True).nv == 5


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_forward_dynamics_on_a_singular_model_raise(mode):
    model = rbd.load_urdf(URDF, allow_singular=True)
    rng = np.random.default_rng(0)
    q, v, tau = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    msg = r"M\(q\) is singular .*joint 'wrist' \(dof 1\) carries no mass or inertia"
    calls = [lambda *x: rbd.aba(model, *x), lambda *x: rbd.minverse(model, x[0]),
             lambda *x: rbd.aba_derivatives(model, *x),
             lambda *x: rbd.aba_derivatives(model, *x, product="aza"),
             lambda *x: rbd.aba_derivatives(model, *x, method="chain_rule"),
             lambda *x: rbd.aba_second_order_derivatives(model, *x)]
    for call in calls:
        with pytest.raises(ValueError, match=msg):
            call(q, v, tau)
        Q, V, T = np.stack([q, q + 1]), np.stack([v, v]), np.stack([tau, tau])
        with policy.forced(mode), pytest.raises(ValueError,
                                                match=r"M\(q\) of batch item 0 is singular"):
            call(Q, V, T)
