"""The cost terms' exact residual curvature on floating-base trees (issue 27's legged DDP):
Gauss-Newton's l_xx plus ``curvature`` is the Hessian of the cost in tangent-space q
(q (+) dq, free-flyer and spherical joints included), checked against a complex step of
the cost (rbdiff's complex128 kinematics on the manifold) differentiated once more by a
five-point central difference; and the legged problems' cost_derivatives carry it."""

import numpy as np
import pytest

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.trajopt.costs import joint_relation


def _hessian(model, q, f, h=1e-3):
    """d2 f(q (+) x)/dx2 at x = 0: the complex step in x_a (exact first derivative on the
    manifold), a five-point difference in x_b."""
    nv = model.nv

    def d1(x, a):
        z = x.astype(complex)
        z[a] += 1e-30j
        return f(rbd.integrate(model, q.astype(complex), z)).imag / 1e-30
    H = np.zeros((nv, nv))
    for a in range(nv):
        for b in range(nv):
            e = np.zeros(nv)
            e[b] = h
            H[a, b] = (-d1(2 * e, a) + 8 * d1(e, a) - 8 * d1(-e, a) + d1(-2 * e, a)) / (12 * h)
    return 0.5 * (H + H.T)


def _models():
    tree = rbd.models.random_tree(6, 5, floating_base=True)
    return [(tree, tree.frames[-1].name), (rbd.load_robot("solo12", floating_base=True),
                                           "FL_FOOT")]


@pytest.mark.parametrize("which", [0, 1])
def test_frame_translation_curvature_on_free_flyer_trees(which):
    model, frame = _models()[which]
    types = {int(t) for t in model.mi[1:, 1]}
    rng = np.random.default_rng(7)
    q = rbd.random_configuration(model, rng)
    term = to.FrameTranslation(frame, rng.normal(size=3), 3.0)

    def f(x):
        r = rbd.frame_placement(model, x, frame)[:3, 3] - term.target
        return 0.5 * term.weight * (r @ r)
    H = _hessian(model, q, f)
    _, _, _, lxx, _ = term.derivatives(model, q[None], np.zeros((1, model.nv)), None)
    C = term.curvature(model, q[None])[0]
    got = lxx[0, :model.nv, :model.nv] + C
    assert np.abs(got - H).max() < 1e-9 * np.abs(H).max()
    assert np.abs(C).max() > 1e-3 * np.abs(H).max()         # the curvature counts
    assert 4 in types                                         # a free flyer in the tree
    if which == 0:
        assert 3 in types                                     # and a spherical joint


def test_joint_relation():
    model, _ = _models()[0]
    rel = joint_relation(model)
    assert (rel[:6, :6] == 2).all() and (rel[:6, 6:] == 1).all() and (rel[6:, :6] == 0).all()
