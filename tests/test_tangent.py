"""rbdiff.model.tangent: the ambient-to-tangent map of the jax and torch front ends,
against central differences of difference(q, retract(q + t dq)) on random trees with
every joint type and a free flyer, on and off the unit sphere."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model.synthetic import random_tree
from rbdiff.model.tangent import normalised_blocks, tangent_of_ambient


def _retract(model, q):
    """Normalise every quaternion and (cos, sin) pair exactly."""
    q = q.copy()
    for k, n in normalised_blocks(model):
        q[k:k + n] /= np.linalg.norm(q[k:k + n])
    return q


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("off", [1.0, 1.7])
def test_tangent_matches_central_difference(seed, off):
    rng = np.random.default_rng(seed)
    model = random_tree(6, rng, floating_base=True)
    q = rbd.random_configuration(model, rng) * off     # off the manifold when off != 1
    q[:3] /= off                                        # (translations stay where they were)
    dq = rng.normal(size=model.nq)
    e = np.stack(tangent_of_ambient(model, q, dq), -1)
    q0, h = _retract(model, q), 1e-6
    fd = (rbd.difference(model, q0, _retract(model, q + h * dq))
          - rbd.difference(model, q0, _retract(model, q - h * dq))) / (2 * h)
    assert e.shape == (model.nv,)
    assert np.max(np.abs(e - fd)) < 1e-8 * max(1.0, np.max(np.abs(fd)))


def test_tangent_batched_and_linear():
    rng = np.random.default_rng(3)
    model = random_tree(5, rng, floating_base=True)
    q = rbd.random_configuration(model, rng, batch=3)
    d1, d2 = rng.normal(size=(2, 3, model.nq))
    e = lambda d: np.stack(tangent_of_ambient(model, q, d), -1)
    assert e(d1).shape == (3, model.nv)
    assert np.allclose(e(2 * d1 - d2), 2 * e(d1) - e(d2), rtol=1e-13, atol=1e-13)
    row = np.stack(tangent_of_ambient(model, q[1], d1[1]), -1)
    assert np.allclose(row, e(d1)[1], rtol=0, atol=1e-15)
