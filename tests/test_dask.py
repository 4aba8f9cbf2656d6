"""rbdiff.dask: every batched function on dask arrays equals the local batch bit for bit
(threaded scheduler and a real dask.distributed LocalCluster of two worker processes);
the model is one key per graph; bad input is refused before anything is submitted; a
failing chunk names its batch rows; a second call on a cluster compiles nothing."""

import pickle

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import rbdiff as rbd  # noqa: E402
import rbdiff.dask as rdd  # noqa: E402

B = 11                  # rows, cut into uneven chunks
CHUNKS = (4, 4, 3)


@pytest.fixture(scope="module")
def model():
    return rbd.models.random_tree(6, 5, floating_base=True)


def _states(model, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, a = rng.normal(size=(2, B, model.nv))
    fext = rng.normal(size=(B, model.njoints, 6))
    return tuple(x.astype(dtype) for x in (q, v, a, fext))


def _calls(model, q, v, a, fext):
    """(name, args, kwargs) of every function rbdiff.dask offers."""
    tau = rbd.rnea(model, q, v, a)
    frame = model.frames[-1].name
    q1 = rbd.integrate(model, q, 0.3 * v)
    cs = (rbd.Contact("body6", "3d", "local_world_aligned", gains=(1.0, 2.0),
                      placement=np.eye(4)),
          rbd.Contact("body3", "6d"))
    return [("rnea", (q, v, a, fext), {}), ("aba", (q, v, tau), {"fext": fext}),
            ("crba", (q,), {}), ("minverse", (q,), {}),
            ("nonlinear_effects", (q, v), {}), ("gravity", (q,), {}),
            ("integrate", (q, v), {}), ("difference", (q, q1), {}),
            ("rnea_derivatives", (q, v, a, fext), {}),
            ("aba_derivatives", (q, v, tau), {"product": "aza"}),
            ("rnea_second_order_derivatives", (q, v, a), {}),
            ("aba_second_order_derivatives", (q, v, tau), {}),
            ("forward_kinematics", (q, v, a), {}), ("forward_kinematics", (q,), {}),
            ("frame_placements", (q,), {}), ("frame_placement", (q, frame), {}),
            ("frame_jacobian", (q, frame), {"reference": "world"}),
            ("kinematics_derivatives", (q, v, a), {}),
            ("kinematics_derivatives", (q, v, a), {"joint": model.njoints - 1}),
            # the declared functions' generic wrappers (rbdiff.declare)
            ("frame_velocity", (q, v, frame, "world"), {}),
            ("frame_acceleration_derivatives", (q, v, a, frame), {"classical": True}),
            ("center_of_mass", (q,), {}), ("center_of_mass", (q, v, a), {}),
            ("centroidal_momentum", (q, v), {}),
            ("centroidal_dynamics_derivatives", (q, v, a), {}),
            ("kinetic_energy", (q, v), {}), ("integrate_jacobians", (q, v), {}),
            # contact and impulse dynamics: the contacts a keyword of every chunk's call
            ("contact_dynamics", (q, v, tau, cs), {"fext": fext}),
            ("contact_dynamics", (q, v, tau, cs[:1]), {"damping": 1e-3}),
            ("contact_dynamics_derivatives", (q, v, tau, cs), {}),
            ("impulse_dynamics", (q, v, cs), {"restitution": 0.5}),
            ("impulse_dynamics_derivatives", (q, v, cs), {"restitution": 0.2})]


def _lazy(x):
    return da.from_array(x, chunks=(CHUNKS,) + x.shape[1:]) if isinstance(x, np.ndarray) \
        and x.ndim >= 2 else x


def _assert_same(lazy_result, local):
    if hasattr(local, "_fields"):       # the result records: namedtuples and
        assert type(lazy_result) is type(local)     # KinematicsDerivatives
        for x, y in zip(lazy_result, local):
            _assert_same(x, y)
    elif local is None:
        assert lazy_result is None
    else:
        assert isinstance(lazy_result, np.ndarray) and lazy_result.dtype == local.dtype
        np.testing.assert_array_equal(lazy_result, local)


def _compute_all(model, calls, **compute_kw):
    lazy = [getattr(rdd, n)(model, *map(_lazy, args), **kw) for n, args, kw in calls]
    return dask.compute(*lazy, **compute_kw), lazy


def test_every_function_equals_the_local_batch(model):
    calls = _calls(model, *_states(model, 1))
    got, lazy = _compute_all(model, calls, scheduler="threads")
    for (name, args, kw), g, lz in zip(calls, got, lazy):
        local = getattr(rbd, name)(model, *args, **kw)
        _assert_same(g, local)
        for x in (lz if hasattr(lz, "_fields") else (lz,)):     # lazy, chunked as q
            assert x is None or x.chunks[0] == CHUNKS, name


def test_float32(model):
    q, v, a, fext = _states(model, 7, np.float32)
    got = rdd.rnea(model, *map(_lazy, (q, v, a, fext))).compute(scheduler="threads")
    _assert_same(got, rbd.rnea(model, q, v, a, fext))


def test_model_is_one_key_and_not_in_the_tasks(model):
    q, v, a, _ = _states(model, 2)
    dq = rdd.rnea_derivatives(model, *map(_lazy, (q, v, a))).dtau_dq
    graph = dict(dq.__dask_graph__())
    keys = [k for k in graph if "rbdiff-model-" in str(k)]
    assert len(keys) == 1
    size = len(pickle.dumps(model))
    others = [k for k in graph if k not in keys]
    assert max(len(pickle.dumps(graph[k])) for k in others) < size / 4
    # the same model in another graph: the same key (a cluster keeps one copy)
    tau = rdd.rnea(model, *map(_lazy, (q, v, a)))
    assert keys[0] in dict(tau.__dask_graph__())


def test_bad_input_refused_before_submission(model):
    q, v, a, fext = _states(model, 3)
    lq, lv, la = map(_lazy, (q, v, a))
    with pytest.raises(ValueError, match=r"v: expected shape \(B, 15\)"):
        rdd.rnea(model, lq, _lazy(v[:, :-1]), la)
    with pytest.raises(ValueError, match="chunks split axis 1"):
        rdd.rnea(model, da.from_array(q, chunks=(4, 5)), lv, la)
    with pytest.raises(ValueError, match="float64 or float32, got int64"):
        rdd.gravity(model, lq.astype(np.int64))
    with pytest.raises(ValueError, match="mix dtypes"):
        rdd.rnea(model, lq, lv.astype(np.float32), la)
    with pytest.raises(ValueError, match="batch of 10, expected 11"):
        rdd.rnea(model, lq, v[:10], la)
    with pytest.raises(TypeError, match="expected dask arrays"):
        rdd.rnea(model, q, v, a)
    with pytest.raises(KeyError):
        rdd.frame_placement(model, lq, "no such frame")
    with pytest.raises(ValueError, match="reference"):
        rdd.frame_jacobian(model, lq, 1, reference="body")
    with pytest.raises(ValueError, match="method"):
        rdd.aba_derivatives(model, lq, lv, la, method="magic")
    with pytest.raises(ValueError, match="fext: expected shape"):
        rdd.rnea(model, lq, lv, la, fext=fext[:, :-1])
    with pytest.raises(KeyError):
        rdd.contact_dynamics(model, lq, lv, la, [rbd.Contact("no such frame")])
    with pytest.raises(ValueError, match="restitution"):
        rdd.impulse_dynamics(model, lq, lv, rbd.Contact("body6"), restitution=2.0)
    with pytest.raises(ValueError, match="damping"):
        rdd.contact_dynamics(model, lq, lv, la, rbd.Contact("body6"), damping=-1.0)
    # batch chunks that differ between inputs are aligned to the first input's
    odd = da.from_array(v, chunks=(6, -1))
    np.testing.assert_array_equal(rdd.rnea(model, lq, odd, la).compute(scheduler="sync"),
                                  rbd.rnea(model, q, v, a))


def test_failing_chunk_names_its_rows(model):
    q, v, a, _ = _states(model, 4)
    v[9, 2] = np.nan                      # row 9: the third chunk (rows 8:11), its item 1
    lazy = rdd.aba(model, *map(_lazy, (q, v, a)))
    with pytest.raises(ValueError, match=r"batch rows 8:11 .* index \(1, 2\)"):
        lazy.compute(scheduler="sync")
    # dependent contacts (the same frame twice): rbd.DependentContacts, rows named
    same = (rbd.Contact("body6"), rbd.Contact("body6"))
    lazy = rdd.contact_dynamics(model, *(da.from_array(x[4:8], chunks=(2, -1))
                                         for x in (q, v, a)), same)
    with pytest.raises(rbd.DependentContacts, match=r"batch rows [02]:[24] .*contact 1"):
        lazy.forces.compute(scheduler="sync")


def test_missing_dask_names_the_extra(monkeypatch):
    import builtins
    import importlib
    import sys

    real = builtins.__import__

    def no_dask(name, *args, **kw):
        if name == "dask" or name.startswith("dask."):
            raise ImportError("no dask here")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    monkeypatch.delitem(sys.modules, "rbdiff.dask")
    with pytest.raises(ImportError, match=r"rbdiff\[dask\]"):
        importlib.import_module("rbdiff.dask")


def test_local_cluster_two_processes(model):
    """A real LocalCluster (two worker processes): every function bit-equal to the local
    batch; once each worker has run each function, another call compiles nothing there
    (the workers' compiled overloads don't grow)."""
    distributed = pytest.importorskip("distributed")
    calls = _calls(model, *_states(model, 6))
    # one Numba thread per worker, as docs/tutorials/batches.md advises: the batch policy then never
    # tries (and compiles) a parallel entry on a later call
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, worker_dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1"}
                                  ) as cluster, distributed.Client(cluster) as client:
        lazy = [getattr(rdd, n)(model, *map(_lazy, args), **kw) for n, args, kw in calls]
        workers = list(client.scheduler_info()["workers"])
        assert len(workers) == 2
        for w in workers:                        # every chunk of every function on w
            got = dask.compute(*lazy, workers=[w])
            for (name, args, kw), g in zip(calls, got):
                _assert_same(g, getattr(rbd, name)(model, *args, **kw))
        before = client.run(_compiled_count)
        again = dask.compute(*lazy)
        assert client.run(_compiled_count) == before
        assert all(n > 0 for n in before.values())
        for g, h in zip(got, again):
            _assert_same(h, g)


def _compiled_count():
    """Compiled signatures of every rbdiff CPU entry in this (worker) process."""
    from rbdiff.cpu import batch, single
    return sum(len(getattr(f, "overloads", ())) for mod in (batch, single)
               for f in vars(mod).values())
