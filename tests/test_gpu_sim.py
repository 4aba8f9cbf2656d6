"""The GPU backend in Numba's CUDA simulator: device arrays in, device arrays out, equal to
the CPU (itself checked against Pinocchio) and to Pinocchio directly, for every function,
every aba_derivatives partition, the fine-grained variant, the second-order derivatives
(IDSVA-SO, FDSVA-SO) and the kinematics derivatives, both workspace layouts, float64 and
float32, with and without external forces.

The simulator must be switched on before Numba is imported, so under a plain ``pytest``
run this file holds three runner tests: the cases below in a fresh interpreter with
``NUMBA_ENABLE_CUDASIM=1`` (the other test files keep their process untouched), the
same cases on a real GPU where there is one, and an offline compile of every launch
kernel to PTX where numba-cuda is installed. The cases are collected only in those
subprocesses (or when the whole run has ``NUMBA_ENABLE_CUDASIM=1`` set).
In the simulator the device functions run as Python, so the tests also check that the
frames executed are those rebuilt by rbdiff.gpu.compile, not the CPU dispatchers.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
ON_GPU = os.environ.get("RBDIFF_TEST_ON_GPU") == "1"     # set by the runner below
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

if not (SIM or ON_GPU):
    import importlib.util

    def _python(code, **env):
        """Run code in a fresh interpreter (the repository importable); its stdout."""
        env = dict(os.environ, **env)
        env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=1500)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        return r.stdout

    def _run_cases(**env):
        """Run this file's cases in a subprocess; fail with their report."""
        env = dict(os.environ, **env)
        env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
        r = subprocess.run([sys.executable, "-m", "pytest", os.path.abspath(__file__),
                            "-o", "addopts=", "-q", "-p", "no:cacheprovider", "-x",
                            "--rootdir", ROOT],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
        assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-4000:]
        assert " passed" in r.stdout and " failed" not in r.stdout, r.stdout[-4000:]

    def test_gpu_backend_in_simulator():
        """The cases below in Numba's CUDA simulator (no GPU needed)."""
        if importlib.util.find_spec("numba.cuda") is None:
            pytest.skip("numba.cuda is not available")
        _run_cases(NUMBA_ENABLE_CUDASIM="1")

    def test_gpu_backend_on_a_gpu():
        """The same cases on a real CUDA GPU, where there is one."""
        if importlib.util.find_spec("numba.cuda") is None:
            pytest.skip("numba.cuda is not available")
        found = _python("from numba import cuda; print(cuda.is_available())",
                        NUMBA_ENABLE_CUDASIM="0")
        if found.strip().splitlines()[-1:] != ["True"]:
            pytest.skip("no CUDA GPU")
        _run_cases(RBDIFF_TEST_ON_GPU="1", NUMBA_ENABLE_CUDASIM="0")

    def test_kernels_compile_for_a_gpu():
        """Every launch kernel and the device functions it calls through the real CUDA
        typing and NVVM (to PTX for sm_90), no GPU needed: numba-cuda and its NVVM wheel
        are (pip install rbdiff[gpu]). The simulator runs Python and types nothing."""
        if importlib.util.find_spec("numba_cuda") is None:
            pytest.skip("numba-cuda is not installed")
        code = (
            "import numpy as np, rbdiff as rbd\n"
            "from numba.cuda.cudadrv import nvvm\n"
            "try:\n    nvvm.NVVM()\n"
            "except Exception as e:\n    print('NO_NVVM', e); raise SystemExit(0)\n"
            "from rbdiff.gpu.launch import compile_ptx, _FACTORIES, NO_FEXT\n"
            "m = rbd.models.random_tree(5, 3, floating_base=True)\n"
            "s = compile_ptx(m, dtypes=(np.float64,), layouts=('interleaved',))\n"
            "s.update(compile_ptx(m, names=['completely_fused', 'columns',\n"
            "                               'aba_second_order'],\n"
            "                     dtypes=(np.float32,), layouts=('blocked',)))\n"
            "assert len(s) == 2 * len(_FACTORIES) - len(NO_FEXT) + 6\n"
            "assert min(s.values()) > 10000\n"
            "print('COMPILED', len(s))\n")
        out = _python(code, NUMBA_ENABLE_CUDASIM="0")
        if "NO_NVVM" in out:
            pytest.skip("NVVM not found: " + out.strip()[-200:])
        assert "COMPILED" in out, out

else:
    import threading

    from numba import cuda
    from numba.core.dispatcher import Dispatcher

    import rbdiff as rbd
    from rbdiff import gpu
    from rbdiff.gpu import compile as gcompile
    from rbdiff.gpu import launch

    from conftest import full, random_state, rel_err, robot_pair, tree_pair, pin_fext

    import pinocchio as pin

    B = 3
    F64_TOL = 1e-11        # the simulator evaluates the same statements in Python
    F32_TOL = 2e-3         # float32 on the device vs float64 on the CPU (relative)
    _PAIRS = {}

    def _pair(key):
        if key not in _PAIRS:
            _PAIRS[key] = robot_pair("iiwa14", False) if key == "iiwa14" else \
                tree_pair(int(key[-1]), n=7, floating=True)
        return _PAIRS[key]

    @pytest.fixture(params=["iiwa14", "tree-2"])
    def pair(request):
        """iiwa14, and a random tree with a free-flyer root and every joint type."""
        return _pair(request.param)

    def _states(model, pm, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        st = [random_state(pm, rng) for _ in range(B)]
        q, v, u = (np.stack([s[k] for s in st]) for k in range(3))
        f = rng.normal(size=(B, model.njoints, 6))
        return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (q, v, u, f))

    def _dev(*xs):
        return tuple(None if x is None else cuda.to_device(x) for x in xs)

    def _host(x):
        assert gpu.is_device_array(x) and not isinstance(x, np.ndarray), type(x)
        return x.copy_to_host()

    def _close(got, ref, tol):
        got = _host(got)
        assert got.shape == ref.shape
        assert rel_err(got, ref) < tol, rel_err(got, ref)

    # -- every function: device in, device out, equal to the CPU --------------------------

    @pytest.mark.parametrize("with_fext", [False, True])
    @pytest.mark.parametrize("name", ["rnea", "aba"])
    def test_dynamics(pair, name, with_fext):
        model, pm = pair
        q, v, u, f = _states(model, pm)
        f = f if with_fext else None
        out = getattr(rbd, name)(model, *_dev(q, v, u, f))
        _close(out, getattr(rbd, name)(model, q, v, u, f), F64_TOL)

    @pytest.mark.parametrize("name", ["crba", "minverse", "gravity"])
    def test_functions_of_q(pair, name):
        model, pm = pair
        q, v, _, _ = _states(model, pm, 1)
        _close(getattr(rbd, name)(model, *_dev(q)), getattr(rbd, name)(model, q), F64_TOL)
        _close(rbd.nonlinear_effects(model, *_dev(q, v)), rbd.nonlinear_effects(model, q, v),
               F64_TOL)

    @pytest.mark.parametrize("with_fext", [False, True])
    def test_rnea_derivatives(pair, with_fext):
        model, pm = pair
        q, v, a, f = _states(model, pm, 2)
        f = f if with_fext else None
        got = rbd.rnea_derivatives(model, *_dev(q, v, a, f))
        assert type(got) is rbd.derivatives.RNEADerivatives
        for g, r in zip(got, rbd.rnea_derivatives(model, q, v, a, f)):
            _close(g, r, F64_TOL)

    @pytest.mark.parametrize("partition", launch.PARTITIONS)
    def test_aba_derivatives_partitions(pair, partition):
        """Plancher Alg. 3 split / fused / completely fused: all equal the CPU, and the
        first one Pinocchio's computeABADerivatives (external forces included)."""
        model, pm = pair
        q, v, tau, f = _states(model, pm, 3)
        got = gpu.aba_derivatives(model, *_dev(q, v, tau, f), partition=partition)
        ref = rbd.aba_derivatives(model, q, v, tau, f, product="dmm")
        for g, r in zip(got, ref):
            _close(g, r, F64_TOL)
        data = pm.createData()
        pin.computeABADerivatives(pm, data, q[0], v[0], tau[0], pin_fext(model, f[0]))
        for g, r in zip(got, (data.ddq_dq, data.ddq_dv, full(data.Minv))):
            assert rel_err(_host(g)[0], np.array(r)) < 1e-9

    def test_armature():
        """The device functions read the model's armature as the CPU kernels do."""
        model, pm = _pair("tree-2")
        model = model.with_armature(np.linspace(0.05, 0.4, model.nv))
        q, v, tau, _ = _states(model, pm, 5)
        for name in ("rnea", "aba"):
            _close(getattr(rbd, name)(model, *_dev(q, v, tau)),
                   getattr(rbd, name)(model, q, v, tau), F64_TOL)
        for name in ("crba", "minverse"):
            _close(getattr(rbd, name)(model, *_dev(q)), getattr(rbd, name)(model, q), F64_TOL)
        for threads_per_eval in (1, 2):
            got = rbd.gpu.aba_derivatives(model, *_dev(q, v, tau),
                                          threads_per_eval=threads_per_eval)
            for g, r in zip(got, rbd.aba_derivatives(model, q, v, tau, product="dmm")):
                _close(g, r, F64_TOL)

    @pytest.mark.parametrize("threads_per_eval", [2, 3])
    def test_aba_derivatives_fine_grained(pair, threads_per_eval):
        """Alg. 4-style variant: M^-1 beside ABA+IDSVA, columns over the block's threads
        (a barrier between): equal to the CPU."""
        model, pm = pair
        q, v, tau, _ = _states(model, pm, 4)
        got = rbd.gpu.aba_derivatives(model, *_dev(q, v, tau), threads_per_eval=threads_per_eval)
        for g, r in zip(got, rbd.aba_derivatives(model, q, v, tau, product="dmm")):
            _close(g, r, F64_TOL)

    @pytest.mark.parametrize("kind", ["completely_fused", "split", "columns", "rnea_d"])
    def test_blocked_layout(kind):
        """The batch-first workspace layout gives the same numbers."""
        model, pm = _pair("tree-2")
        q, v, u, f = _states(model, pm, 5)
        dq, dv, du, df = _dev(q, v, u, f)
        if kind == "rnea_d":
            got = gpu.rnea_derivatives(model, dq, dv, du, df, layout="blocked")
            ref = rbd.rnea_derivatives(model, q, v, u, f)
        else:
            got = gpu.aba_derivatives(
                model, dq, dv, du, df, layout="blocked",
                partition="completely_fused" if kind == "columns" else kind,
                threads_per_eval=2 if kind == "columns" else 1)
            ref = rbd.aba_derivatives(model, q, v, u, f, product="dmm")
        for g, r in zip(got, ref):
            _close(g, r, F64_TOL)

    @pytest.mark.parametrize("name", ["rnea", "aba", "minverse", "rnea_derivatives",
                                      "aba_derivatives", "fine_grained"])
    def test_float32(name):
        """float32 device arrays compute in float32 (results float32) near float64."""
        model, pm = _pair("iiwa14")
        q, v, u, _ = _states(model, pm, 6)
        args = (q,) if name == "minverse" else (q, v, u)
        kw = {}
        if name == "fine_grained":
            name, kw = "aba_derivatives", dict(threads_per_eval=2)
        got = getattr(gpu, name)(model, *_dev(*(x.astype(np.float32) for x in args)), **kw)
        ref = getattr(rbd, name)(model, *args)
        for g, r in (zip(got, ref) if hasattr(ref, "_fields") else [(got, ref)]):
            assert g.dtype == np.float32
            _close(g, r, F32_TOL)

    # -- batches, out= buffers, chunks, single states --------------------------------------

    def test_batch_equals_loop_with_out_buffers():
        """Device batch == loop of single device calls; out= buffers are filled in place
        and returned, and reused across calls."""
        model, pm = _pair("tree-2")
        q, v, tau, f = _states(model, pm, 7)
        dq, dv, dt, df = _dev(q, v, tau, f)
        nv = model.nv
        outs = tuple(cuda.device_array((B, nv, nv)) for _ in range(3))
        got = gpu.aba_derivatives(model, dq, dv, dt, df, out=outs)
        assert all(g is o for g, o in zip(got, outs))
        for b in range(B):
            single = tuple(cuda.device_array((nv, nv)) for _ in range(3))
            one = rbd.gpu.aba_derivatives(model, dq[b], dv[b], dt[b], df[b], out=single)
            for k in range(3):
                np.testing.assert_array_equal(_host(one[k]), _host(outs[k])[b])
        tau_out = cuda.device_array((B, nv))
        assert gpu.rnea(model, dq, dv, dt, df, out=tau_out) is tau_out
        loop = [_host(rbd.rnea(model, dq[b], dv[b], dt[b], df[b])) for b in range(B)]
        np.testing.assert_array_equal(_host(tau_out), np.stack(loop))
        M_out = cuda.device_array((B, nv, nv))
        gpu.crba(model, dq, out=M_out)
        np.testing.assert_array_equal(_host(M_out),
                                      np.stack([_host(rbd.crba(model, dq[b]))
                                                for b in range(B)]))
        np.testing.assert_allclose(_host(M_out), rbd.crba(model, q), rtol=0, atol=1e-12)

    def test_chunks_within_the_workspace_budget():
        """A budget smaller than the batch's workspaces: the batch runs in chunks."""
        model, pm = _pair("iiwa14")
        q, v, tau, _ = _states(model, pm, 8)
        per = sum(int(np.prod(s)) for s in launch.scratch_shapes(model, "split").values())
        launch.set_workspace_budget(per * 8)            # one evaluation per launch
        try:
            assert launch.slots_per_launch(model, "split", np.float64) == 1
            got = gpu.aba_derivatives(model, *_dev(q, v, tau), partition="split")
        finally:
            launch.set_workspace_budget(None)
        for g, r in zip(got, rbd.aba_derivatives(model, q, v, tau, product="dmm")):
            _close(g, r, F64_TOL)

    def test_single_state_and_host_inputs():
        """A 1-D state gives unbatched device outputs; host arrays mixed in are copied."""
        model, pm = _pair("iiwa14")
        q, v, a, _ = _states(model, pm, 9)
        tau = rbd.rnea(model, cuda.to_device(q[0]), v[0], a[0])
        assert tuple(tau.shape) == (model.nv,)
        _close(tau, rbd.rnea(model, q[0], v[0], a[0]), F64_TOL)
        d = rbd.aba_derivatives(model, cuda.to_device(q[1]), v[1], a[1])
        for g, r in zip(d, rbd.aba_derivatives(model, q[1], v[1], a[1], product="dmm")):
            assert tuple(g.shape) == (model.nv, model.nv)
            _close(g, r, F64_TOL)

    # -- bad input -------------------------------------------------------------------------

    def test_bad_input():
        model, pm = _pair("iiwa14")
        q, v, a, f = _states(model, pm)
        dq, dv, da, df = _dev(q, v, a, f)
        with pytest.raises(ValueError, match=r"v: expected shape \(7,\) or \(B, 7\)"):
            gpu.rnea(model, dq, cuda.to_device(np.ascontiguousarray(v[:, :3])), da)
        with pytest.raises(ValueError, match="batch size 2 differs"):
            gpu.aba(model, dq, dv[:2], da)
        with pytest.raises(TypeError, match="different dtypes"):
            gpu.aba(model, dq, cuda.to_device(v.astype(np.float32)), da)
        with pytest.raises(ValueError, match="fext: expected shape"):
            gpu.rnea(model, dq, dv, da, df[:, :2])
        with pytest.raises(ValueError, match="partition: expected one of"):
            gpu.aba_derivatives(model, dq, dv, da, partition="bogus")
        with pytest.raises(ValueError, match="needs partition='completely_fused'"):
            gpu.aba_derivatives(model, dq, dv, da, partition="split", threads_per_eval=2)
        for bad in (0, launch.MAX_THREADS_PER_EVAL + 1):
            with pytest.raises(ValueError, match="threads_per_eval"):
                gpu.aba_derivatives(model, dq, dv, da, threads_per_eval=bad)
        with pytest.raises(ValueError, match="layout"):
            gpu.rnea(model, dq, dv, da, layout="diagonal")
        with pytest.raises(ValueError, match="CPU only"):
            rbd.rnea_derivatives(model, dq, dv, da, method="chain_rule")
        with pytest.raises(ValueError, match="CPU only"):
            rbd.aba_derivatives(model, dq, dv, da, product="aza")
        with pytest.raises(TypeError, match="must be a device array"):
            gpu.rnea(model, dq, dv, da, out=np.empty((B, model.nv)))
        with pytest.raises(ValueError, match=r"out: tau must have shape \(3, 7\)"):
            gpu.rnea(model, dq, dv, da, out=cuda.device_array((B, model.nv + 1)))
        with pytest.raises(ValueError, match="expected 3 arrays"):
            gpu.rnea_derivatives(model, dq, dv, da, out=(cuda.device_array((B, 7, 7)),))

    def test_public_functions_route_cuda_array_interface(monkeypatch):
        """Anything with __cuda_array_interface__ (CuPy, PyTorch) goes to rbdiff.gpu;
        NumPy input never does."""
        calls = []
        monkeypatch.setattr(gpu, "rnea", lambda *a, **k: calls.append(a) or "gpu")
        model, pm = _pair("iiwa14")
        q, v, a, _ = _states(model, pm)

        class Foreign:
            __cuda_array_interface__ = {}
        assert rbd.rnea(model, Foreign(), v, a) == "gpu"
        assert rbd.rnea(model, q, v, Foreign()) == "gpu"
        n = len(calls)
        rbd.rnea(model, q, v, a)
        rbd.rnea(model, q[0], v[0], a[0])
        assert len(calls) == n == 2

    # -- second-order and kinematics derivatives -------------------------------------------

    SO_NAMES = ["rnea_second_order_derivatives", "aba_second_order_derivatives"]
    SO_TYPES = {"rnea_second_order_derivatives": rbd.second_order.RNEASecondOrderDerivatives,
                "aba_second_order_derivatives": rbd.second_order.ABASecondOrderDerivatives}

    @pytest.mark.parametrize("with_fext", [False, True])
    @pytest.mark.parametrize("name", SO_NAMES)
    def test_second_order(pair, name, with_fext):
        """IDSVA-SO and FDSVA-SO, one evaluation per thread: the public function routes
        device arrays to rbdiff.gpu, whose four (B, nv, nv, nv) device tensors equal the
        CPU's."""
        model, pm = pair
        q, v, u, f = (x[:2] for x in _states(model, pm, 11))
        f = f if with_fext else None
        got = getattr(rbd, name)(model, *_dev(q, v, u, f))
        assert type(got) is SO_TYPES[name]
        for g, r in zip(got, getattr(rbd, name)(model, q, v, u, f)):
            _close(g, r, F64_TOL)

    @pytest.mark.parametrize("name", SO_NAMES)
    def test_second_order_float32_blocked(name):
        """float32 computes in float32 near float64; the blocked layout gives the same
        numbers as the CPU (FDSVA-SO's tensor scratch is batch-first in both layouts)."""
        model, pm = _pair("iiwa14")
        q, v, u, _ = (x[:2] for x in _states(model, pm, 12))
        ref = getattr(rbd, name)(model, q, v, u)
        got = getattr(gpu, name)(model, *_dev(*(x.astype(np.float32) for x in (q, v, u))))
        for g, r in zip(got, ref):
            assert g.dtype == np.float32
            _close(g, r, F32_TOL)
        for g, r in zip(getattr(gpu, name)(model, *_dev(q, v, u), layout="blocked"), ref):
            _close(g, r, F64_TOL)

    @pytest.mark.parametrize("name", SO_NAMES)
    def test_second_order_out_buffers_and_chunks(name):
        """out= buffers are filled in place and returned; a batch equals a loop of single
        device calls bit for bit, also when the workspace budget forces one evaluation
        per launch."""
        model, pm = _pair("tree-2")
        q, v, u, f = (x[:2] for x in _states(model, pm, 13))
        nv = model.nv
        args = _dev(q, v, u, f)
        outs = tuple(cuda.device_array((2, nv, nv, nv)) for _ in range(4))
        got = getattr(gpu, name)(model, *args, out=outs)
        assert all(g is o for g, o in zip(got, outs))
        kind = "rnea_second_order" if name.startswith("rnea") else "aba_second_order"
        launch.set_workspace_budget(1)
        try:
            assert launch.slots_per_launch(model, kind, np.float64) == 1
            chunked = getattr(gpu, name)(model, *args)
        finally:
            launch.set_workspace_budget(None)
        for b in range(2):
            one = getattr(rbd, name)(model, *(x[b] for x in args))
            for k in range(4):
                assert tuple(one[k].shape) == (nv, nv, nv)
                np.testing.assert_array_equal(_host(one[k]), _host(outs[k])[b])
                np.testing.assert_array_equal(_host(chunked[k])[b], _host(outs[k])[b])

    @pytest.mark.parametrize("reference", ["world", "local", "local_world_aligned"])
    def test_kinematics_derivatives(pair, reference):
        """Velocity and acceleration derivatives of every joint, device in and out, equal
        to the CPU's; out= buffers."""
        model, pm = pair
        q, v, a, _ = _states(model, pm, 14)
        ref = rbd.kinematics_derivatives(model, q, v, a, reference=reference)
        got = rbd.kinematics_derivatives(model, *_dev(q, v, a), reference=reference)
        assert type(got) is rbd.kinematics.KinematicsDerivatives
        for g, r in zip(got, ref):
            _close(g, r, F64_TOL)
        outs = tuple(cuda.device_array((B, model.njoints, 6, model.nv)) for _ in range(5))
        filled = gpu.kinematics_derivatives(model, *_dev(q, v, a), reference=reference,
                                            out=outs, layout="blocked")
        for g, o, r in zip(filled, outs, ref):
            assert g is o
            _close(g, r, F64_TOL)
        j = model.njoints - 1          # joint=: that joint's rows of the device result
        one = rbd.kinematics_derivatives(model, *_dev(q, v, a), reference=reference, joint=j)
        for g, r in zip(one, ref):
            assert tuple(g.shape) == (B, 6, model.nv)
            _close(g, r[:, j], F64_TOL)

    def test_kinematics_derivatives_float32_single():
        model, pm = _pair("tree-2")
        q, v, a, _ = _states(model, pm, 15)
        got = gpu.kinematics_derivatives(model, *_dev(*(x[0].astype(np.float32)
                                                        for x in (q, v, a))))
        for g, r in zip(got, rbd.kinematics_derivatives(model, q[0], v[0], a[0])):
            assert g.dtype == np.float32 and tuple(g.shape) == r.shape
            _close(g, r, F32_TOL)

    def test_second_order_bad_input():
        model, pm = _pair("iiwa14")
        q, v, a, f = _states(model, pm)
        dq, dv, da, df = _dev(q, v, a, f)
        nv = model.nv
        for name, method, error in (
                ("rnea_second_order_derivatives", "complex_step", "CPU only"),
                ("aba_second_order_derivatives", "finite_difference", "CPU only"),
                ("aba_second_order_derivatives", "bogus", "method: expected one of")):
            with pytest.raises(ValueError, match=error):
                getattr(rbd, name)(model, dq, dv, da, method=method)
        with pytest.raises(ValueError, match="tau: batch size 2 differs"):
            gpu.aba_second_order_derivatives(model, dq, dv, da[:2])
        with pytest.raises(ValueError, match="fext: expected shape"):
            gpu.rnea_second_order_derivatives(model, dq, dv, da, df[:, :2])
        with pytest.raises(ValueError, match="expected 4 arrays"):
            gpu.rnea_second_order_derivatives(model, dq, dv, da,
                                              out=(cuda.device_array((B, nv, nv, nv)),))
        strided = cuda.device_array((B, nv, nv, 2 * nv))[:, :, :, ::2]
        with pytest.raises(ValueError, match="d2qdd_dv2 must be C-contiguous"):
            gpu.aba_second_order_derivatives(
                model, dq, dv, da, out=(cuda.device_array((B, nv, nv, nv)), strided,
                                        strided, strided))
        with pytest.raises(ValueError, match=r"out: dM_dq must have shape \(3, 7, 7, 7\)"):
            gpu.rnea_second_order_derivatives(
                model, dq, dv, da, out=tuple(cuda.device_array((B, nv, nv, nv + k // 3))
                                             for k in range(4)))
        with pytest.raises(ValueError, match="reference: expected one of"):
            rbd.kinematics_derivatives(model, dq, dv, da, reference="body")
        with pytest.raises(ValueError, match="reference: expected one of"):
            gpu.kinematics_derivatives(model, dq, dv, da, reference="body")
        with pytest.raises(TypeError, match="different dtypes"):
            gpu.kinematics_derivatives(model, dq, cuda.to_device(v.astype(np.float32)), da)

    # -- the device functions are the kernels' own source, rebuilt ---------------------------

    def test_device_functions_are_rebuilt_kernels():
        """Every device function was built from an rbdiff kernel's code object, and its
        globals reference device functions only (no CPU dispatcher)."""
        graph = gcompile.device_graph()
        assert "rbdiff.kernels.aba_derivatives.aba_derivatives" in graph
        assert "rbdiff.kernels.idsva.idsva_backward_pass" in graph
        for name in ("idsva_so.idsva_so", "fdsva_so.fdsva_so",
                     "kinematics_derivatives.kinematics_derivatives"):
            assert "rbdiff.kernels." + name in graph
        for name, (cpu_fn, dev) in graph.items():
            fn = gcompile.python_function(dev)
            assert fn.__code__ is cpu_fn.py_func.__code__, name
            assert fn.__globals__ is not cpu_fn.py_func.__globals__, name
            for k, obj in fn.__globals__.items():
                assert not isinstance(obj, Dispatcher), (name, k)
        with pytest.raises(TypeError, match="not an rbdiff kernel"):
            gcompile.device(launch.model_state)

    @pytest.mark.skipif(not SIM, reason="device code leaves no Python frames on a GPU")
    def test_simulator_runs_the_rebuilt_functions():
        """Profile one launch: every rbdiff kernel frame executed has the rebuilt globals
        (a CPU dispatcher would run machine code and leave no Python frame at all), and
        the frames cover the three steps of Alg. 3."""
        model, pm = _pair("iiwa14")
        q, v, tau, _ = _states(model, pm, 10)
        args = _dev(q, v, tau)
        seen = {}

        def prof(frame, event, arg):
            if event == "call" and os.sep + "kernels" + os.sep in frame.f_code.co_filename:
                seen.setdefault(frame.f_code.co_name, set()).add(id(frame.f_globals))

        threading.setprofile(prof)
        sys.setprofile(prof)
        try:
            gpu.aba_derivatives(model, *args)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        assert {"aba_forward_pass", "idsva_backward_pass", "minverse_forward_pass",
                "neg_minv_mul_column"} <= set(seen)
        module_globals = {id(sys.modules[m].__dict__) for m in sys.modules
                          if m.startswith("rbdiff.kernels")}
        for name, globs in seen.items():
            assert not (globs & module_globals), name

    # -- the GPU benchmark script runs (tiny) --------------------------------------------

    def test_bench_gpu_tiny(tmp_path):
        """python -m rbdiff.bench.gpu --tiny: report, JSON rows for every timing kind and
        variant, the GPU-vs-CPU check, and 'not installed' JAX rows without JAX."""
        import json

        from rbdiff.bench import gpu as bench
        from rbdiff.cli import main
        assert main(["bench-gpu", "--tiny", "--out", str(tmp_path)]) == 0
        out = json.loads((tmp_path / "results.json").read_text())
        report = (tmp_path / "report.md").read_text()
        assert "## iiwa14 (nv = 7)" in report and "CUDA simulator" in report
        rows = out["rows"]
        assert {r["N"] for r in rows} == {1, 2}
        kinds = {(r["what"], r["variant"]) for r in rows if r["seconds"] is not None}
        for v in bench.VARIANTS:
            assert ("gpu_device", v) in kinds and ("gpu_end_to_end", v) in kinds
        assert any(w == "cpu_batch" for w, _ in kinds)
        assert any(w == "pinocchio_loop" for w, _ in kinds)
        usable, why = bench.jax_status()
        if not usable:
            assert all(r["variant"] == why for r in rows if r["what"] == "jax")
        errs = out["checks"][0]["max_rel_err"]
        assert set(errs) == set(bench.VARIANTS) and max(errs.values()) < 1e-12
