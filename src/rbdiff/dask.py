"""rbdiff's batched functions on Dask arrays: lazy, chunked along the batch axis, computed
by whatever Dask scheduler is active (threads, processes or a dask.distributed cluster).

    import dask.array as da
    import rbdiff.dask as rdd
    q = da.from_array(Q, chunks=(4096, -1))            # (B, nq), one chunk across nq
    dq, dv, dtau = rdd.aba_derivatives(model, q, v, tau)   # dask arrays, nothing run yet
    dq.compute()                                        # or client.compute(...)

Every function has the NumPy API's name, arguments and result type (a namedtuple of
dask arrays where the NumPy function returns one), and each chunk is one call of the
NumPy function on that chunk's rows, so results equal the local batch bit for bit (a
batch equals a loop of single calls, cpu/batch.py). The model is one key of the graph,
sent to each worker once and not pickled into every task; its key is a hash of the
model's content, so graphs built from the same model share it. Workers compile on first
use, or load the compiled code from Numba's cache (``python -m rbdiff compile`` in the
image the workers start from: they then compile nothing).

Shapes, dtypes, chunks and options are checked when the graph is built, before anything
is submitted: inputs (B, nq) / (B, nv) / fext (B, njoints, 6), dask or NumPy arrays (a
NumPy input is chunked like the first dask one), all float64 or all float32, one chunk
across every axis but the batch axis (``x.rechunk({1: -1})`` otherwise). Inputs whose
batch chunks differ are rechunked to the first input's. An item the kernels refuse (NaN,
an unnormalised quaternion, a singular mass matrix, dependent contacts) fails its chunk
with the NumPy API's error (its type kept), prefixed with the chunk's batch rows. The
contact functions take the contacts as the NumPy API does (checked when the graph is
built; their number of constraint rows sizes the outputs). Needs the ``dask`` extra:
``pip install 'rbdiff[dask]'``.
"""

from __future__ import annotations

import weakref

import numpy as np

import rbdiff as _rbd
from .derivatives import _check_method as _check_first_order
from .derivatives import _product_code
from .declare import DECLARED
from .kinematics import _joint_id
from .results import (ABADerivatives,
                      ABASecondOrderDerivatives, ContactDynamics, ContactDynamicsDerivatives,
                      ContactDynamicsContraction, ImpulseDynamics,
                      ImpulseDynamicsContraction, ImpulseDynamicsDerivatives, Kinematics,
                      KinematicsDerivatives,
                      RNEADerivatives, RNEASecondOrderDerivatives, reference_name)
from .second_order import ABA_METHODS, INNER_ROUTES, OUTER_ROUTES, RNEA_METHODS
from .second_order import _check_method
from .validation import fext_shape_message

try:
    import dask
    import dask.array as da
except ImportError as e:         # the module is optional; say which extra brings it
    raise ImportError("rbdiff.dask needs dask: pip install 'rbdiff[dask]'") from e


_model_keys = weakref.WeakKeyDictionary()     # model -> its Delayed (one key per model)


def _model_node(model):
    """The model as one graph key named by its content (immutable, so computed once)."""
    node = _model_keys.get(model)
    if node is None:
        token = dask.base.tokenize(model.mi, model.mf, model.frame_parents, model.frame_mf,
                                   model.names, [f.name for f in model.frames])
        node = dask.delayed(model, name=f"rbdiff-model-{token}")
        _model_keys[model] = node
    return node


def _run(name, model, lo, options, names, *blocks):
    """One chunk: the NumPy function on its rows (runs on a worker); a tuple of outputs."""
    try:
        out = getattr(_rbd, name)(model, **dict(zip(names, blocks)), **options)
    except ValueError as e:
        hi = lo + len(blocks[0])
        msg = (f"{name}: batch rows {lo}:{hi} (indices below count from row {lo}): {e}")
        try:        # keep a subclass (rbd.DependentContacts) catchable as such
            err = type(e)(msg)
        except Exception:
            err = ValueError(msg)
        raise err from None
    return tuple(out) if hasattr(out, "_fields") else (out,)     # result records


def _inputs(named):
    """[(name, x, trailing shape)] (None entries dropped) as (names, dask arrays with one
    chunk across the trailing axes and the first one's batch chunks); errors name the
    input."""
    given = [(n, x, s) for n, x, s in named if x is not None]
    first = next((x for _, x, _ in given if isinstance(x, da.Array)), None)
    if first is None:
        raise TypeError("expected dask arrays chunked along the batch axis, e.g. "
                        "da.from_array(q, chunks=(4096, -1)); for NumPy arrays call rbdiff "
                        "itself")
    dtypes = set()
    out = []
    for n, x, s in given:
        if not isinstance(x, da.Array):
            x = np.asarray(x)
        if x.ndim != 1 + len(s) or tuple(x.shape[1:]) != s:
            if n == "fext":
                raise ValueError(fext_shape_message(("B",) + s, ("B",) + tuple(x.shape[1:])))
            raise ValueError(f"{n}: expected shape (B, {', '.join(map(str, s))}), got "
                             f"{tuple(x.shape)}")
        if x.dtype not in (np.float64, np.float32):
            raise ValueError(f"{n}: expected float64 or float32, got {x.dtype}")
        dtypes.add(x.dtype)
        if x.shape[0] != first.shape[0]:
            raise ValueError(f"{n}: batch of {x.shape[0]}, expected {first.shape[0]} (as "
                             "the first dask input)")
        if not isinstance(x, da.Array):
            x = da.from_array(x, chunks=(first.chunks[0],) + s)
        if any(np.isnan(c).any() for c in x.chunks):
            raise ValueError(f"{n}: unknown chunk sizes; call {n}.compute_chunk_sizes()")
        for axis, c in enumerate(x.chunks[1:], start=1):
            if len(c) > 1:
                raise ValueError(f"{n}: chunks split axis {axis} ({c}); only the batch "
                                 f"axis may be chunked: {n}.rechunk({{{axis}: -1}})")
        if x.chunks[0] != first.chunks[0]:
            x = x.rechunk({0: first.chunks[0]})
        out.append(x)
    if len(dtypes) > 1:
        raise ValueError(f"inputs mix dtypes {sorted(map(str, dtypes))}; use one")
    return [n for n, _, _ in given], out


def _call(name, model, named, outs, options=None, result=None):
    """The lazy batch of ``rbdiff.<name>``: one task per chunk; ``outs``: the trailing
    shape of each output (None: an output the NumPy function returns as None);
    ``result``: the namedtuple type of a multi-output function."""
    names, arrays = _inputs(named)
    dtype = arrays[0].dtype
    node = _model_node(model)
    options = options or {}
    blocks = [x.to_delayed().reshape(-1) for x in arrays]
    parts = [[] for _ in outs]
    lo = 0
    for c, rows in enumerate(arrays[0].chunks[0]):
        task = dask.delayed(_run, pure=True, nout=len(outs))(
            name, node, lo, options, names, *(b[c] for b in blocks))
        for k, s in enumerate(outs):
            if s is not None:
                parts[k].append(da.from_delayed(task[k], (rows,) + s, dtype=dtype))
        lo += rows
    got = [None if s is None else da.concatenate(p, axis=0) for p, s in zip(parts, outs)]
    if result is not None:
        return result(*got)
    return got[0] if len(got) == 1 else tuple(got)


def _fext(model, fext):
    return ("fext", fext, (model.njoints, 6))


# ---- every declared function (declare.py) without a wrapper of its own below --------


def _lazy(name):
    """The lazy batch of the declared function ``name``: its inputs (B, ...) in order,
    then fext where it takes one, then its keyword options (frame, reference...) by
    position or keyword, checked now with the resolver the NumPy function uses."""
    fn = DECLARED[name]
    keys = [k for k, _ in fn.params]
    inputs = [spec[0] + ("=None" if len(spec) == 3 else "") for spec in fn.inputs]

    def lazy(model, *args, **kwargs):
        n = len(fn.inputs)
        required = sum(len(spec) == 2 for spec in fn.inputs)
        if len(args) < required:
            raise TypeError(f"{name}: expected the inputs {', '.join(inputs)}")
        xs, rest = list(args[:n]), list(args[n:])
        xs += [kwargs.pop(spec[0], None) for spec in fn.inputs[len(xs):]]
        named = [(spec[0], x, (getattr(model, spec[1]),)) for spec, x in zip(fn.inputs, xs)]
        given = {spec[0] for spec, x in zip(fn.inputs, xs) if x is not None}
        # outputs of an optional input not given are not returned (center_of_mass(q))
        outs = [shape for shape, need in zip(fn.shapes(model), fn.needs)
                if need is None or need in given]
        if fn.fext:
            fext = rest.pop(0) if rest else kwargs.pop("fext", None)
            named.append(_fext(model, fext))
        if len(rest) > len(keys):
            raise TypeError(f"{name}: too many arguments")
        options = dict(zip(keys, rest), **kwargs)
        unknown = set(options) - set(keys)
        if unknown:
            raise TypeError(f"{name}: unexpected keyword {sorted(unknown)[0]!r}")
        for k, resolver in fn.params:
            if k in options:
                resolver(model, options[k])     # a bad frame or reference fails now
        return _call(name, model, named, outs, options, fn.result_type(len(outs)))

    lazy.__name__ = lazy.__qualname__ = name
    lazy.__doc__ = (f"Lazy rbd.{name}: one call of it per chunk of the batch axis "
                    f"(inputs {', '.join(inputs)}"
                    f"{', fext' if fn.fext else ''}{''.join(', ' + k for k in keys)}).")
    return lazy


# ---- configuration space ----------------------------------------------------------------


def integrate(model, q, v):
    """Lazy rbd.integrate: q (+) v, (B, nq)."""
    return _call("integrate", model, [("q", q, (model.nq,)), ("v", v, (model.nv,))],
                 [(model.nq,)])


def difference(model, q0, q1):
    """Lazy rbd.difference: q1 (-) q0, (B, nv)."""
    return _call("difference", model, [("q0", q0, (model.nq,)), ("q1", q1, (model.nq,))],
                 [(model.nv,)])


# ---- derivatives ------------------------------------------------------------------------


def rnea_derivatives(model, q, v, a, fext=None, method="idsva"):
    """Lazy rbd.rnea_derivatives: RNEADerivatives of three (B, nv, nv)."""
    _check_first_order(method)
    nv = model.nv
    return _call("rnea_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("a", a, (nv,)),
                  _fext(model, fext)], [(nv, nv)] * 3, {"method": method}, RNEADerivatives)


def aba_derivatives(model, q, v, tau, fext=None, method="idsva", product="auto"):
    """Lazy rbd.aba_derivatives: ABADerivatives of three (B, nv, nv)."""
    _check_first_order(method)
    _product_code(model, product)
    nv = model.nv
    return _call("aba_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("tau", tau, (nv,)),
                  _fext(model, fext)], [(nv, nv)] * 3,
                 {"method": method, "product": product}, ABADerivatives)


def rnea_second_order_derivatives(model, q, v, a, fext=None, method="idsva"):
    """Lazy rbd.rnea_second_order_derivatives: four (B, nv, nv, nv)."""
    _check_method(method, RNEA_METHODS)
    nv = model.nv
    return _call("rnea_second_order_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("a", a, (nv,)),
                  _fext(model, fext)], [(nv, nv, nv)] * 4, {"method": method},
                 RNEASecondOrderDerivatives)


def aba_second_order_derivatives(model, q, v, tau, fext=None, method="idsva", inner="auto",
                                 outer="auto"):
    """Lazy rbd.aba_second_order_derivatives: four (B, nv, nv, nv)."""
    _check_method(method, ABA_METHODS)
    _check_method(inner, INNER_ROUTES, "inner")
    _check_method(outer, OUTER_ROUTES, "outer")
    nv = model.nv
    return _call("aba_second_order_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("tau", tau, (nv,)),
                  _fext(model, fext)], [(nv, nv, nv)] * 4,
                 {"method": method, "inner": inner, "outer": outer},
                 ABASecondOrderDerivatives)


# ---- kinematics -------------------------------------------------------------------------


def forward_kinematics(model, q, v=None, a=None):
    """Lazy rbd.forward_kinematics: Kinematics((B, njoints, 4, 4), velocities and
    accelerations (B, njoints, 6) or None as the NumPy function)."""
    m = (model.njoints, 6)
    return _call("forward_kinematics", model,
                 [("q", q, (model.nq,)), ("v", v, (model.nv,)), ("a", a, (model.nv,))],
                 [model._sT, None if v is None else m, None if a is None else m],
                 result=Kinematics)


def kinematics_derivatives(model, q, v, a, reference="world", joint=None):
    """Lazy rbd.kinematics_derivatives: KinematicsDerivatives of five (B, njoints, 6, nv),
    or (B, 6, nv) for one ``joint``."""
    options = {"reference": reference_name(reference)}
    shape = (model.njoints, 6, model.nv)
    if joint is not None:
        options["joint"] = _joint_id(model, joint)
        shape = (6, model.nv)
    return _call("kinematics_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (model.nv,)), ("a", a, (model.nv,))],
                 [shape] * 5, options, KinematicsDerivatives)


# ---- contact and impulse dynamics (call-supplied sizes: nc rows from the contacts) ------


def _contact_options(model, contacts, **numbers):
    """(contacts as a tuple, nc), checked now: frames resolved, numbers validated as the
    NumPy functions do; the tuple is a keyword of every chunk's call (small, pickled with
    each task; the packing is cached per model on the worker)."""
    from . import contacts as C
    t = C._as_tuple(contacts)
    _cint, _cflt, nc = C.pack(model, t)
    for key, value in numbers.items():
        if key == "restitution":
            C._restitution(value)
        else:
            C._number(value, key, C.cc.BAD_DAMPING)
    return t, nc


def contact_dynamics(model, q, v, tau, contacts, damping=0.0, fext=None):
    """Lazy rbd.contact_dynamics: ContactDynamics(qdd (B, nv), forces (B, nc))."""
    t, nc = _contact_options(model, contacts, damping=damping)
    nv = model.nv
    return _call("contact_dynamics", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("tau", tau, (nv,)),
                  _fext(model, fext)], [(nv,), (nc,)], {"contacts": t, "damping": damping},
                 ContactDynamics)


def contact_dynamics_derivatives(model, q, v, tau, contacts, damping=0.0, fext=None):
    """Lazy rbd.contact_dynamics_derivatives: three (B, nv, nv) and three (B, nc, nv)."""
    t, nc = _contact_options(model, contacts, damping=damping)
    nv = model.nv
    return _call("contact_dynamics_derivatives", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("tau", tau, (nv,)),
                  _fext(model, fext)], [(nv, nv)] * 3 + [(nc, nv)] * 3,
                 {"contacts": t, "damping": damping}, ContactDynamicsDerivatives)


def impulse_dynamics(model, q, v_before, contacts, restitution=0.0, damping=0.0):
    """Lazy rbd.impulse_dynamics: ImpulseDynamics(v_after (B, nv), impulses (B, nc))."""
    t, nc = _contact_options(model, contacts, restitution=restitution, damping=damping)
    return _call("impulse_dynamics", model,
                 [("q", q, (model.nq,)), ("v_before", v_before, (model.nv,))],
                 [(model.nv,), (nc,)],
                 {"contacts": t, "restitution": restitution, "damping": damping},
                 ImpulseDynamics)


def impulse_dynamics_derivatives(model, q, v_before, contacts, restitution=0.0, damping=0.0):
    """Lazy rbd.impulse_dynamics_derivatives: two (B, nv, nv) and two (B, nc, nv)."""
    t, nc = _contact_options(model, contacts, restitution=restitution, damping=damping)
    nv = model.nv
    return _call("impulse_dynamics_derivatives", model,
                 [("q", q, (model.nq,)), ("v_before", v_before, (nv,))],
                 [(nv, nv)] * 2 + [(nc, nv)] * 2,
                 {"contacts": t, "restitution": restitution, "damping": damping},
                 ImpulseDynamicsDerivatives)


def contact_dynamics_contraction(model, q, v, tau, contacts, lam_a, lam_f, damping=0.0):
    """Lazy rbd.contact_dynamics_contraction: four (B, nv, nv) blocks; lam_a (B, nv),
    lam_f (B, nc)."""
    t, nc = _contact_options(model, contacts, damping=damping)
    nv = model.nv
    return _call("contact_dynamics_contraction", model,
                 [("q", q, (model.nq,)), ("v", v, (nv,)), ("tau", tau, (nv,)),
                  ("lam_a", lam_a, (nv,)), ("lam_f", lam_f, (nc,))], [(nv, nv)] * 4,
                 {"contacts": t, "damping": damping}, ContactDynamicsContraction)


def impulse_dynamics_contraction(model, q, v_before, contacts, lam_v, lam_f, restitution=0.0,
                                 damping=0.0):
    """Lazy rbd.impulse_dynamics_contraction: two (B, nv, nv) blocks; lam_v (B, nv),
    lam_f (B, nc)."""
    t, nc = _contact_options(model, contacts, restitution=restitution, damping=damping)
    nv = model.nv
    return _call("impulse_dynamics_contraction", model,
                 [("q", q, (model.nq,)), ("v_before", v_before, (nv,)),
                  ("lam_v", lam_v, (nv,)), ("lam_f", lam_f, (nc,))], [(nv, nv)] * 2,
                 {"contacts": t, "restitution": restitution, "damping": damping},
                 ImpulseDynamicsContraction)


_CONTACTS = ["contact_dynamics", "contact_dynamics_derivatives", "impulse_dynamics",
             "impulse_dynamics_derivatives", "contact_dynamics_contraction",
             "impulse_dynamics_contraction"]

# the declared functions written above by hand keep their wrappers (method keywords)
for _name in [n for n in DECLARED if "[" not in n and n not in globals()
              and not DECLARED[n].sizes]:     # call-supplied output sizes: no generic wrapper
    globals()[_name] = _lazy(_name)
__all__ = sorted(n for n in DECLARED if "[" not in n and not DECLARED[n].sizes) + [
    "integrate", "difference", "forward_kinematics"] + _CONTACTS
