"""GPU versions of the public functions: arguments on a CUDA device in, device arrays out.

Inputs are anything exposing ``__cuda_array_interface__`` (Numba device arrays, CuPy
arrays, PyTorch CUDA tensors), taken zero-copy, or NumPy arrays, copied to the device.
Outputs are Numba device arrays (``numba.cuda.DeviceNDArray``; ``cupy.asarray(x)`` and
``torch.as_tensor(x, device="cuda")`` take them zero-copy), or the caller's ``out=``
buffers, filled in place, so that a loop allocates nothing.

Only metadata is checked here (shapes, dtypes, batch sizes): reading the values would
cost a device-to-host transfer and a synchronisation per call, so a NaN or a
non-unit quaternion on the device gives NaN or wrong numbers, not an error. Validate on
the host with the CPU functions when in doubt. Kernels launch asynchronously on the
default stream: call ``numba.cuda.synchronize()`` before timing, and ``copy_to_host()``
(which synchronises) to read a result.
"""

import numpy as np
from numba import cuda

from ..results import (REFERENCE_CODES, ABADerivatives,
                       ABASecondOrderDerivatives, KinematicsDerivatives, RNEADerivatives,
                       RNEASecondOrderDerivatives, reference_name)
from ..validation import fext_shape_message
from . import launch

DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def is_device_array(x):
    """True for an array on a CUDA device: ``__cuda_array_interface__`` (CuPy, PyTorch
    CUDA tensors, Numba) or a Numba device array (the simulator's included)."""
    return x is not None and (getattr(x, "__cuda_ndarray__", False) is True
                              or hasattr(x, "__cuda_array_interface__"))


def _as_device(x):
    """A Numba device array viewing the device array x (zero-copy)."""
    if getattr(x, "__cuda_ndarray__", False) is True:
        return x
    return cuda.as_cuda_array(x)


def _host(x, name):
    if x is None:
        raise TypeError(f"{name}: expected an array, got None")
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: the GPU path computes in float32 or float64, got dtype "
                        f"{a.dtype}")
    return a


def _dtype(named, arrays, on_dev):
    """The one dtype of the device arrays among the inputs (host ones follow it);
    float64 for host-only input (float32 if all of it is float32)."""
    dev = [(n, np.dtype(a.dtype)) for (n, _, _), a, d in zip(named, arrays, on_dev) if d]
    kinds = {d for _, d in dev}
    if len(kinds) > 1:
        desc = ", ".join(f"{n}: {d}" for n, d in dev)
        raise TypeError(f"device arrays of different dtypes ({desc}); the GPU path does "
                        "not convert on the device: pass one dtype")
    if kinds:
        dt = kinds.pop()
        if dt not in DTYPES:
            raise TypeError(f"{dev[0][0]}: the GPU path computes in float32 or float64, "
                            f"got dtype {dt}")
        return dt
    dt = np.result_type(*(a.dtype for a in arrays))
    return dt if dt in DTYPES else np.dtype(np.float64)


def _prepare(model, named, fext=None, takes_fext=True):
    """Device arrays with a leading batch axis (host inputs copied to the device), the
    batch size, whether the input was a single state, the dtype, and fext as a device
    array (B, njoints, 6) or None."""
    on_dev = [is_device_array(x) for _, x, _ in named]
    arrays = [_as_device(x) if d else _host(x, n) for (n, x, _), d in zip(named, on_dev)]
    dt = _dtype(named, arrays, on_dev)
    first, shape0 = named[0][0], tuple(arrays[0].shape)   # (the simulator's shapes
    ndim = len(shape0)                                     # take no negative index)
    for (name, _, n), a in zip(named, arrays):
        shape = tuple(a.shape)
        if len(shape) not in (1, 2) or shape[-1] != n:
            raise ValueError(f"{name}: expected shape ({n},) or (B, {n}), got {shape}")
        if len(shape) != ndim:
            raise ValueError(f"{name}: shape {shape} mixes single and batched inputs "
                             f"({first} has shape {shape0})")
        if ndim == 2 and shape[0] != shape0[0]:
            raise ValueError(f"{name}: batch size {shape[0]} differs from {first}'s "
                             f"{shape0[0]}")
    out = []
    for (name, x, n), a, d in zip(named, arrays, on_dev):
        if not d:
            a = cuda.to_device(np.ascontiguousarray(a, dtype=dt))
        out.append(a if ndim == 2 else a.reshape(1, n))
    single = ndim == 1
    B = out[0].shape[0]
    f = None
    if takes_fext and fext is not None:
        want = (model.njoints, 6) if single else (B, model.njoints, 6)
        on_dev = is_device_array(fext)
        f = _as_device(fext) if on_dev else _host(fext, "fext")
        if tuple(f.shape) != want:
            raise ValueError(fext_shape_message(want, f.shape))
        if on_dev and np.dtype(f.dtype) != dt:
            raise TypeError(f"fext: dtype {f.dtype} differs from the state's {dt}; the GPU "
                            "path does not convert on the device")
        if not on_dev:
            f = cuda.to_device(np.ascontiguousarray(f, dtype=dt))
        if single:
            f = f.reshape(1, model.njoints, 6)
    return out, B, single, dt, f


def _outputs(out, shapes, B, single, dt, names, flat=False):
    """Device outputs of shape (B,) + shape each: new, or views of the caller's out=
    buffers (checked: on the device, of the right shape and dtype, and C-contiguous when
    ``flat``: the second-order kernels view their tensors flat)."""
    if out is None:
        return [cuda.device_array((B,) + s, dt) for s in shapes]
    outs = list(out) if len(shapes) > 1 else [out]
    if len(outs) != len(shapes):
        raise ValueError(f"out: expected {len(shapes)} arrays ({', '.join(names)}), got "
                         f"{len(outs)}")
    res = []
    for name, o, s in zip(names, outs, shapes):
        want = s if single else (B,) + s
        if not is_device_array(o):
            raise TypeError(f"out: {name} must be a device array (a Numba device array, "
                            f"CuPy array or CUDA tensor), got {type(o).__name__}")
        d = _as_device(o)
        if tuple(d.shape) != want or np.dtype(d.dtype) != dt:
            raise ValueError(f"out: {name} must have shape {want} and dtype {dt}, got "
                             f"{tuple(d.shape)} and {d.dtype}")
        if flat and not d.is_c_contiguous():
            raise ValueError(f"out: {name} must be C-contiguous (the kernel views it flat)")
        res.append(d.reshape((1,) + s) if single else d)
    return res


def _new(arrays, single):
    """New outputs as returned: the batch axis dropped for a single state."""
    return [a[0] if single else a for a in arrays]


def _layout(layout):
    if layout not in launch.LAYOUTS:
        raise ValueError(f"layout: expected one of {launch.LAYOUTS}, got {layout!r}")
    return layout


def rnea(model, q, v, a, fext=None, out=None, layout="interleaved"):
    """Inverse dynamics on the GPU, one evaluation per thread: tau = RNEA(q, v, a, fext)
    (Featherstone Table 5.1). q (nq,) or (B, nq), v and a (nv,) or (B, nv), fext
    (njoints, 6) or (B, njoints, 6) local-frame forces or None. Returns a device array
    (nv,) or (B, nv), or fills ``out``."""
    (q, v, a), B, single, dt, f = _prepare(
        model, [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)], fext)
    (tau,) = _outputs(out, [(model.nv,)], B, single, dt, ["tau"])
    launch.launch_dynamics(model, "rnea", q, v, a, f, tau, _layout(layout))
    return _new([tau], single)[0] if out is None else out


def aba(model, q, v, tau, fext=None, out=None, layout="interleaved"):
    """Forward dynamics on the GPU, one evaluation per thread: qdd = ABA(q, v, tau, fext)
    (Featherstone Table 7.1). Shapes as :func:`rnea`; returns qdd (nv,) or (B, nv)."""
    (q, v, tau), B, single, dt, f = _prepare(
        model, [("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv)], fext)
    (qdd,) = _outputs(out, [(model.nv,)], B, single, dt, ["qdd"])
    launch.launch_dynamics(model, "aba", q, v, tau, f, qdd, _layout(layout))
    return _new([qdd], single)[0] if out is None else out


def crba(model, q, out=None, layout="interleaved"):
    """Joint-space inertia matrix M(q) on the GPU (CRBA, Featherstone Table 6.2):
    q (nq,) or (B, nq) -> (nv, nv) or (B, nv, nv) device array."""
    (q,), B, single, dt, _ = _prepare(model, [("q", q, model.nq)], takes_fext=False)
    (M,) = _outputs(out, [model._svv], B, single, dt, ["M"])
    launch.launch_inertia(model, "crba", q, M, _layout(layout))
    return _new([M], single)[0] if out is None else out


def minverse(model, q, out=None, layout="interleaved"):
    """M(q)^-1 on the GPU without forming M (Carpentier & Mansard 2018 sec. IV-C):
    q (nq,) or (B, nq) -> (nv, nv) or (B, nv, nv) device array."""
    (q,), B, single, dt, _ = _prepare(model, [("q", q, model.nq)], takes_fext=False)
    (Minv,) = _outputs(out, [model._svv], B, single, dt, ["Minv"])
    launch.launch_inertia(model, "minverse", q, Minv, _layout(layout))
    return _new([Minv], single)[0] if out is None else out


def _gpu_method(method, product="dmm"):
    if method != "idsva":
        raise ValueError(f"method={method!r} runs on the CPU only: the GPU computes "
                         "method='idsva' (pass host arrays for the others)")
    if product not in ("auto", "dmm"):
        raise ValueError(f"product={product!r} runs on the CPU only: the GPU forms "
                         "-M^-1 dtau/du densely (product='dmm'; 'auto' means it there)")


def nonlinear_effects(model, q, v, out=None, layout="interleaved"):
    """C(q, v) v + g(q) = RNEA(q, v, 0) on the GPU: (nv,) or (B, nv) device array."""
    (q, v), B, single, dt, _ = _prepare(model, [("q", q, model.nq), ("v", v, model.nv)],
                                        takes_fext=False)
    z = cuda.to_device(np.zeros((B, model.nv), dt))
    return rnea(model, q[0] if single else q, v[0] if single else v, z[0] if single else z,
                out=out, layout=layout)


def gravity(model, q, out=None, layout="interleaved"):
    """g(q) = RNEA(q, 0, 0) on the GPU: (nv,) or (B, nv) device array."""
    (q,), B, single, dt, _ = _prepare(model, [("q", q, model.nq)], takes_fext=False)
    z = cuda.to_device(np.zeros((B, model.nv), dt))
    return rnea(model, q[0] if single else q, z[0] if single else z, z[0] if single else z,
                out=out, layout=layout)


def _derivatives(model, result, shapes, launcher, q, v, u, fext, out, *args,
                 u_name="a", flat=False):
    """Validate (q, v, u, fext) and out= (``flat``: C-contiguous), run
    ``launcher(model, q, v, u, f, outs, *args)`` and return ``result`` (a NamedTuple) of
    the new device arrays or of ``out``."""
    (q, v, u), B, single, dt, f = _prepare(
        model, [("q", q, model.nq), ("v", v, model.nv), (u_name, u, model.nv)], fext)
    outs = _outputs(out, shapes, B, single, dt, result._fields, flat)
    launcher(model, q, v, u, f, outs, *args)
    return result(*(_new(outs, single) if out is None else out))


def rnea_derivatives(model, q, v, a, fext=None, out=None, method="idsva",
                     layout="interleaved"):
    """First-order ID derivatives on the GPU by IDSVA (Singh et al. 2022 Alg. 1), one
    evaluation per thread. Shapes as :func:`rnea`. Returns RNEADerivatives(dtau_dq,
    dtau_dv, dtau_da) of device arrays (nv, nv) or (B, nv, nv); ``out``: three device
    arrays of those shapes, filled in place and returned. method: "idsva" only."""
    _gpu_method(method)
    return _derivatives(model, RNEADerivatives, [model._svv] * 3, launch.launch_derivatives,
                        q, v, a, fext, out, "rnea_derivatives", _layout(layout))


def aba_derivatives(model, q, v, tau, fext=None, out=None, partition="completely_fused",
                    threads_per_eval=1, method="idsva", product="dmm",
                    layout="interleaved"):
    """First-order FD derivatives on the GPU (Plancher et al. 2021 Alg. 3: qdd by ABA,
    the ID gradient by IDSVA at qdd, then dqdd/du = -M^-1 dtau/du, Carpentier & Mansard
    2018 eq. 24). Shapes as :func:`aba`. Returns ABADerivatives(dqdd_dq, dqdd_dv,
    dqdd_dtau) of device arrays (nv, nv) or (B, nv, nv), or fills ``out``.

    partition: "completely_fused" (one launch), "fused" (ABA+IDSVA, then -M^-1 dtau/du)
    or "split" (ABA, IDSVA, -M^-1 dtau/du: three launches); see rbdiff.gpu.launch.
    threads_per_eval: 1 (one evaluation per thread) or more: Alg. 4-style fine-grained
    parallelism, M^-1 concurrent with ABA+IDSVA and the columns of -M^-1 dtau/du spread
    over that many threads per evaluation (completely fused only; at most
    launch.MAX_THREADS_PER_EVAL = 8, 32 evaluations a block).
    method: "idsva" only; product: "dmm" ("auto" accepted and means "dmm" here)."""
    _gpu_method(method, product)
    if partition not in launch.PARTITIONS:
        raise ValueError(f"partition: expected one of {launch.PARTITIONS}, got "
                         f"{partition!r}")
    if not isinstance(threads_per_eval, (int, np.integer)) or not \
            1 <= threads_per_eval <= launch.MAX_THREADS_PER_EVAL:
        raise ValueError(f"threads_per_eval: expected an integer from 1 to "
                         f"{launch.MAX_THREADS_PER_EVAL}, got {threads_per_eval!r}")
    if threads_per_eval > 1 and partition != "completely_fused":
        raise ValueError("threads_per_eval > 1 (fine-grained) needs "
                         "partition='completely_fused'")
    return _derivatives(model, ABADerivatives, [model._svv] * 3,
                        launch.launch_aba_derivatives, q, v, tau, fext, out, _layout(layout),
                        partition, int(threads_per_eval), u_name="tau")


def rnea_second_order_derivatives(model, q, v, a, fext=None, out=None, method="idsva",
                                  layout="interleaved"):
    """Second-order ID derivatives on the GPU by IDSVA-SO (Singh et al. 2023 Appendix C),
    one evaluation per thread. Shapes as :func:`rnea`. Returns
    RNEASecondOrderDerivatives(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) of device arrays
    (nv, nv, nv) or (B, nv, nv, nv), output index first (rbdiff.second_order); ``out``:
    four C-contiguous device arrays of those shapes, filled in place and returned.
    method: "idsva" only."""
    _gpu_method(method)
    nv = model.nv
    return _derivatives(model, RNEASecondOrderDerivatives, [(nv, nv, nv)] * 4,
                        launch.launch_derivatives, q, v, a, fext, out, "rnea_second_order",
                        _layout(layout), flat=True)


def aba_second_order_derivatives(model, q, v, tau, fext=None, out=None, method="idsva",
                                 layout="interleaved"):
    """Second-order FD derivatives on the GPU by FDSVA-SO (Singh et al. 2023 eq. 46: qdd
    by ABA, IDSVA-SO and FDSVA at qdd, M^-1 without M, the outer products), one evaluation
    per thread. Shapes as :func:`aba`. Returns ABASecondOrderDerivatives(d2qdd_dq2,
    d2qdd_dv2, d2qdd_dqdv, d2qdd_dtaudq) of device arrays (nv, nv, nv) or
    (B, nv, nv, nv); ``out``: four C-contiguous device arrays, filled in place and
    returned. method: "idsva" only. Each evaluation's workspace holds five (nv, nv, nv)
    tensors: large batches of large robots run in chunks (launch.workspace_budget)."""
    _gpu_method(method)
    nv = model.nv
    return _derivatives(model, ABASecondOrderDerivatives, [(nv, nv, nv)] * 4,
                        launch.launch_derivatives, q, v, tau, fext, out, "aba_second_order",
                        _layout(layout), u_name="tau", flat=True)


def kinematics_derivatives(model, q, v, a, reference="world", out=None,
                           layout="interleaved"):
    """Derivatives of every joint's spatial velocity and acceleration (gravity excluded)
    with respect to q (tangent space), v and a on the GPU, one evaluation per thread
    (Carpentier & Mansard 2018 sec. III-D; rbdiff.kinematics_derivatives). q (nq,) or
    (B, nq), v and a (nv,) or (B, nv). Returns KinematicsDerivatives(dv_dq, dv_dv, da_dq,
    da_dv, da_da) of device arrays (njoints, 6, nv) or (B, njoints, 6, nv), or fills
    ``out`` (five device arrays). reference: "world", "local" or "local_world_aligned"."""
    reference = reference_name(reference)
    return _derivatives(model, KinematicsDerivatives, [(model.njoints, 6, model.nv)] * 5,
                        launch.launch_kinematics_derivatives, q, v, a, None, out,
                        _layout(layout), REFERENCE_CODES[reference])
