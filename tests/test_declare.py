"""rbdiff.declare, the one way into the compiled entries: what a declaration gives every
public function it declares (checks that name the argument, batches, the generic
rbdiff.dask wrapper, an `rbdiff compile` job) without code of its own."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff import precompile
from rbdiff.declare import DECLARED

# functions whose output sizes each call supplies (a contact set's rows) take arguments
# the generic samples cannot make: their own tests cover them (tests/test_contact_dynamics.py)
PUBLIC = sorted(n for n in DECLARED if "[" not in n and not DECLARED[n].sizes)
SIZED = sorted(n for n in DECLARED if "[" not in n and DECLARED[n].sizes)


def _sample(model, fn, rng, batch=None):
    """Valid inputs of declared function ``fn`` (every optional one given) and its
    keyword options, single or with a leading batch axis."""
    q = rbd.random_configuration(model, rng, batch=batch)
    lead = () if batch is None else (batch,)
    xs = [q if size == "nq" else rng.normal(size=lead + (model.nv,))
          for _, size, *_ in fn.inputs]
    kw = {k: v for k, v in {"frame": model.frames[-1].name, "reference": "world",
                            "joint": model.njoints - 1}.items()
          if k in dict(fn.params)}
    return xs, kw


def _parts(result):
    """A result's arrays: an array or scalar alone, a record's fields in order."""
    if isinstance(result, np.ndarray) or np.isscalar(result):
        return (np.asarray(result),)
    return tuple(np.asarray(x) for x in result)


def test_the_contact_kinematics_functions_are_declared():
    for name in ("rnea", "aba", "crba", "minverse", "rnea_derivatives", "aba_derivatives",
                 "frame_jacobian", "frame_velocity", "frame_acceleration_derivatives",
                 "center_of_mass", "centroidal_dynamics_derivatives", "kinetic_energy",
                 "integrate_jacobians", "difference_jacobians"):
        assert name in DECLARED, name


@pytest.mark.parametrize("name", PUBLIC)
def test_declared_functions_follow_from_their_declaration(name):
    """Each declared name is public, has an rbdiff compile job, batches equal a loop, and
    a wrong-length input is refused with an error naming it."""
    fn = DECLARED[name]
    public = getattr(rbd, name)
    assert public.__doc__ and "(" in public.__doc__          # a docstring with shapes
    assert any(name in precompile.job_functions(j) for j in precompile.JOBS), name
    model = rbd.models.random_tree(5, 3, floating_base=True)
    rng = np.random.default_rng(0)
    xs, kw = _sample(model, fn, rng, batch=3)
    got = _parts(public(model, *xs, **kw))
    for b in range(3):
        one = _parts(public(model, *(x[b] for x in xs), **kw))
        assert len(got) == len(one)
        for g, o in zip(got, one):
            np.testing.assert_array_equal(g[b], o)
    last = fn.inputs[-1][0] if len(fn.inputs) > 1 else fn.inputs[0][0]
    short = [x[0] for x in xs]
    k = [spec[0] for spec in fn.inputs].index(last)
    short[k] = short[k][:-1]
    with pytest.raises(ValueError, match=f"^{last}: expected shape"):
        public(model, *short, **kw)


@pytest.mark.parametrize("name", SIZED)
def test_sized_functions_are_public_with_a_compile_job(name):
    assert getattr(rbd, name).__doc__
    assert any(name in precompile.job_functions(j) for j in precompile.JOBS), name


def test_dask_wraps_every_declared_function():
    rdd = pytest.importorskip("rbdiff.dask")
    for name in PUBLIC + list(SIZED):     # call-supplied sizes: wrappers of their own
        assert callable(getattr(rdd, name)), name
        assert name in rdd.__all__
