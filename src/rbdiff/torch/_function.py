"""One torch.autograd.Function per derivative level, wired from a table.

A ``Level`` is a NumPy function of rbdiff's (model, q, ...) -> outputs, plus where each
output's Jacobian lies among the outputs of the next level (a Level itself, so the rules
nest: value -> first-order kernels -> second-order kernels -> a clear error). The Function
built from it:
- forward: q normalised (retract: quaternions and (cos, sin) pairs by x/|x|), every
  input cast to float64, all leading axes flattened into one batch, one call of the
  NumPy API, results cast back to the input dtype;
- backward / jvp: the next level's outputs (an autograd.Function too, so double
  backward, jacfwd(jacrev) and hessian run rbdiff's second-order kernels) contracted
  with the output cotangents / input tangents; a q tangent goes through
  rbdiff.model.tangent.tangent_of_ambient, written in torch ops so that autograd
  differentiates the map itself for second derivatives;
- vmap: the batch axis moved first (unbatched inputs repeated; C-contiguous) and the
  Function applied once to the whole batch: one rbdiff call.
Fast paths (``call``; the rules above are what they shortcut, and the tests run both):
no autograd asked for -> the NumPy forward alone; outside torch.func and forward AD ->
the level's ``Lean`` Function (an old-style Function: no setup_context, no inputs saved
for a jvp, the NumPy arrays and inputs kept on ctx), whose backward, where it records no
graph (plain .backward()), is the same contraction in NumPy with the next level's
kernels called directly, and else Rule's. For rnea and aba on one float64 state
(``call_one``, the shape of a training step's call) the level's ``One`` Function goes
further: its forward and its plain backward are one compiled call each (cpu/vjp.py: q
retracted there, the derivatives, their products with the cotangent and the tangent
map's transpose), writing into fresh NumPy buffers, with the per-model constants and
scratch in a cached plan; every other case takes Lean's or Rule's way. contact_dynamics
and impulse_dynamics on one float64 state (``call_single``) skip check() and call()'s
tests (theirs, for that case, in one pass) before the NumPy forward or Lean.
"""

import math
import threading
import weakref
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch
from torch.autograd import forward_ad as fwAD

from ..model import layout as L
from ..model.model import Model as _Model
from ..model.tangent import normalised_blocks, tangent_of_ambient


@dataclass(frozen=True)
class Level:
    """fn(model, arrays, extra) -> list of float64 arrays, each batch + out_shape (arrays:
    one per tensor input, q normalised, 1-D or (B, n)); jac[o][x]: the index of
    d output_o / d input_x (out_shape + (nv,), tangent in q) among nxt's outputs, or None
    where it is zero; nxt None: ``missing`` is the error that asking for it raises."""
    name: str
    fn: Callable
    q_inputs: tuple
    jac: Optional[list] = None
    nxt: Optional["Level"] = None
    missing: str = ""
    one: Optional[int] = None     # rnea / aba: their cpu.vjp code (the One Function)


_GROUPS = weakref.WeakKeyDictionary()    # model -> [(start, length)] of normalised blocks


def _groups(model):
    g = _GROUPS.get(model)
    if g is None:
        g = _GROUPS[model] = normalised_blocks(model)
    return g


def retract(model, q):
    """q (..., nq) float64 with every quaternion and (cos, sin) pair divided by its norm
    (a copy; q itself where the model has none, or one state's blocks are all unit)."""
    g = _groups(model)
    if not g:
        return q
    if q.ndim == 1:     # one state: Python floats, summed in the compiled retraction's order
        out = q
        for k, n in g:
            x = q[k:k + n].tolist()
            r2 = x[0] * x[0]
            for c in x[1:]:
                r2 += c * c
            if not 0 < r2 < _INF:
                _bad_rotation(k, n, r2 == 0)
            r = _sqrt(r2)
            if r != 1.0:        # (x / 1.0 is x: a unit block is its own retraction)
                if out is q:
                    out = q.copy()
                out[k:k + n] = [c / r for c in x]
        return out
    q = q.copy()
    for k, n in g:
        x = q[..., k:k + n]
        r = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
        if not np.all((r > 0) & (r < _INF)):
            _bad_rotation(k, n, np.any(r == 0))
        x /= r
    return q


_INF, _sqrt = float("inf"), math.sqrt


def _bad_rotation(k, n, zero):
    if zero:
        raise ValueError(f"q: the rotation coordinates q[..., {k}:{k + n}] are zero; "
                         "they must have a nonzero norm")
    raise ValueError(f"q: the rotation coordinates q[..., {k}:{k + n}] contain NaN or Inf")


def tangent_matrix(model, q):
    """Tt (..., nq, nv) with Tt[..., r, c] = d e_c / d dq_r: the transpose of the
    ambient-to-tangent map at q, in torch ops (differentiable in q)."""
    nq = model.nq
    eye = torch.eye(nq, dtype=q.dtype, device=q.device).expand(q.shape[:-1] + (nq, nq))
    qb = q.unsqueeze(-2).expand(q.shape[:-1] + (nq, nq))
    return torch.stack(tangent_of_ambient(model, qb, eye), -1)


def tangent(model, q, dq):
    """The tangent vector e (..., nv) of the ambient variation dq (..., nq) at q."""
    return torch.stack(tangent_of_ambient(model, q, dq), -1)


def _to_numpy(x, n_batch):
    a = x.detach().numpy()
    if a.dtype != np.float64:
        a = a.astype(np.float64)
    if n_batch > 1:
        a = a.reshape((-1,) + a.shape[n_batch:])
    return a


def build(level):
    """The torch.autograd.Function of ``level``: apply(model, extra, *tensors)."""

    class Rule(torch.autograd.Function):
        generate_vmap_rule = False

        @staticmethod
        def forward(model, extra, *xs):
            outs, arrays = _forward(level, model, extra, xs, True)
            _STASH.last = (xs, arrays)
            return outs

        @staticmethod
        def setup_context(ctx, inputs, output):
            model, extra, *xs = inputs
            ctx.model, ctx.extra = model, extra
            ctx.save_for_backward(*xs)
            ctx.save_for_forward(*xs)
            ctx.arrays = _stashed(xs)

        @staticmethod
        def backward(ctx, *gs):
            xs = ctx.saved_tensors
            wanted = ctx.needs_input_grad[2:]
            if not any(wanted):
                return (None, None) + (None,) * len(xs)
            if not _graph_wanted(gs):
                return (None, None) + _backward_numpy(level, ctx.model, ctx.extra, xs, gs,
                                                      wanted, ctx.arrays)
            return (None, None) + _graph_backward(ctx.model, ctx.extra, xs, gs, wanted)

        @staticmethod
        def jvp(ctx, _model, _extra, *dxs):
            xs = ctx.saved_tensors
            J = _jacobians(ctx.model, ctx.extra, xs)
            dxs = [None if d is None else tangent(ctx.model, x, d) if isq else d
                   for x, d, isq in zip(xs, dxs, level.q_inputs)]
            outs = []
            for row in level.jac:
                t = None
                for k, d in zip(row, dxs):
                    if k is None or d is None:
                        continue
                    term = _contract(J[k], d)
                    t = term if t is None else t + term
                outs.append(t)
            return tuple(outs)

        @staticmethod
        def vmap(info, in_dims, model, extra, *xs):
            size = info.batch_size
            moved = []
            for x, d in zip(xs, in_dims[2:]):
                # contiguous: strided inputs would compile the entries' 'A' specialisations
                moved.append(x.movedim(d, 0).contiguous() if d is not None
                             else x.unsqueeze(0).expand((size,) + x.shape).contiguous())
            out = Rule.apply(model, extra, *moved)
            return out, (0,) * len(out)

    class Lean(torch.autograd.Function):
        """Rule for a call outside torch.func and forward AD (call() picks it): an
        old-style forward, without setup_context's binding, save_for_backward and
        save_for_forward (a jvp never reaches it), keeping the NumPy arrays and the inputs
        on ctx, their versions checked as saved tensors would be; backward as Rule's."""

        @staticmethod
        def forward(ctx, model, extra, *xs):
            outs, arrays, raw = _forward_lean(level, model, extra, xs)
            ctx.st = (model, extra, xs, arrays, raw, [x._version for x in xs])
            return outs

        @staticmethod
        def backward(ctx, *gs):
            model, extra, xs, arrays, raw, versions = ctx.st
            for x, k in zip(xs, versions):
                if x._version != k:
                    raise RuntimeError(_MODIFIED.format(level.name, tuple(x.shape),
                                                        x._version, k))
            wanted = ctx.needs_input_grad[2:]
            if not any(wanted):
                return (None, None) + (None,) * len(xs)
            if not _graph_wanted(gs):
                return (None, None) + _backward_numpy(level, model, extra, xs, gs, wanted,
                                                      arrays, raw)
            return (None, None) + _graph_backward(model, extra, xs, gs, wanted)

    def _graph_backward(model, extra, xs, gs, wanted):
        """The input cotangents in torch ops (a graph for double backward; vmap-safe)."""
        J = _jacobians(model, extra, xs)
        nx = len(xs)
        grads = [None] * nx
        for o, g in enumerate(gs):
            if g is None:
                continue
            nb = xs[0].dim() - 1
            gflat = g.reshape(g.shape[:nb] + (-1,))
            for x in range(nx):
                k = level.jac[o][x]
                if k is None or not wanted[x]:
                    continue
                Jk = J[k].reshape(J[k].shape[:nb] + (-1, J[k].shape[-1]))
                w = (gflat.unsqueeze(-2) @ Jk).squeeze(-2)     # matmul: vmap-safe
                grads[x] = w if grads[x] is None else grads[x] + w
        for x in range(nx):
            if grads[x] is None and wanted[x]:
                grads[x] = torch.zeros_like(xs[x])
            elif grads[x] is not None and level.q_inputs[x]:
                grads[x] = (tangent_matrix(model, xs[x])
                            @ grads[x].unsqueeze(-1)).squeeze(-1)
        return tuple(grads)

    def _jacobians(model, extra, xs):
        if level.nxt is None:
            raise RuntimeError(level.missing)
        return nxt_rule.apply(model, extra, *xs)

    class One(torch.autograd.Function):
        """Lean for rnea and aba on one float64 state (call_one picks it): the forward
        and a plain .backward() one compiled call each (cpu/vjp.py: q retracted there,
        the derivatives, their products with the cotangent and the tangent map's
        transpose), into fresh NumPy buffers; anything else (create_graph, a refused
        input) goes Lean's way."""

        @staticmethod
        def forward(ctx, model, plan, q, v, u):
            qa = q.numpy(force=True)
            # C-contiguous (themselves where they are): _bind_entries binds v and u as such
            va, ua = _contiguous(v.numpy(force=True)), _contiguous(u.numpy(force=True))
            out = _np_empty(plan.nv)
            # a refused input raises ValueError: call_one then goes call()'s way
            _FORWARD[0](plan.mi, plan.mf, qa, va, ua, plan.fn, plan.ws, plan.qr, out)
            ctx.st = (model, plan, qa, va, ua, q, v, u, q._version, v._version, u._version)
            return _from_numpy(out)

        @staticmethod
        def backward(ctx, g):
            model, plan, qa, va, ua, q, v, u, k0, k1, k2 = ctx.st
            if q._version != k0 or v._version != k1 or u._version != k2:
                for x, k in zip((q, v, u), (k0, k1, k2)):
                    if x._version != k:
                        raise RuntimeError(_MODIFIED.format(level.name, tuple(x.shape),
                                                            x._version, k))
            if (g.dtype is _F64 and not torch.is_grad_enabled() and not _transforming()
                    and not _wrapped(g)):
                grad = _np_empty(plan.ng)
                _VJP[0](plan.mi, plan.mf, qa, va, ua, g.numpy(), plan.vjp, plan.qr, plan.D,
                        grad)
                nq = plan.nq
                return (None, None, _from_numpy(grad[:nq]),
                        _from_numpy(grad[nq:plan.nq_nv]), _from_numpy(grad[plan.nq_nv:]))
            xs = (q, v, u)
            wanted = ctx.needs_input_grad[2:]
            if not any(wanted):
                return (None,) * 5
            if not _graph_wanted((g,)):
                return (None, None) + _backward_numpy(level, model, None, xs, (g,), wanted,
                                                      [retract(model, qa), va, ua],
                                                      [qa, va, ua])
            return (None, None) + _graph_backward(model, None, xs, (g,), wanted)

    nxt_rule = build(level.nxt) if level.nxt is not None else None
    Rule.__name__ = Rule.__qualname__ = f"{level.name}_rule"
    Lean.__name__ = Lean.__qualname__ = f"{level.name}_lean_rule"
    One.__name__ = One.__qualname__ = f"{level.name}_one_rule"
    Rule.lean = Lean
    # torch's Function.apply does exactly this after binding the signature
    Rule.one_apply = super(torch.autograd.Function, One).apply
    return Rule


_MODIFIED = ("one of the variables needed for gradient computation has been modified by an "
             "inplace operation: an input of rbdiff.torch's {} of shape {} is at version {}; "
             "expected version {} instead")


def _graph_wanted(gs):
    """A backward must record a graph (create_graph, a torch.func transform, batched
    cotangents): Rule's torch-op contraction; else the NumPy one."""
    return (torch.is_grad_enabled() or _transforming()
            or any(g is not None and _wrapped(g) for g in gs))


def call(rule, level, model, extra, *xs):
    """rule(model, extra, *xs): its NumPy forward alone where no autograd is asked for
    (no transform, no forward AD, no input requiring grad under grad mode); else, where
    no torch.func transform nor forward AD is active, its Lean Function (LEAN; the
    tests turn it off to compare), applied without Function.apply's Python wrapper
    (every argument is positional, none has a default); else Function.apply."""
    if (_transforming() or getattr(fwAD, "_current_level", 0) >= 0
            or any(_wrapped(x) for x in xs)):
        return rule.apply(model, extra, *xs)
    if not (torch.is_grad_enabled() and any(x.requires_grad for x in xs)):
        return _forward(level, model, extra, xs)
    # torch's Function.apply does exactly this after binding the signature
    return super(torch.autograd.Function, rule.lean if LEAN else rule).apply(model, extra, *xs)


LEAN = True
ONE = True       # call_one's One Function (the tests turn it off to compare)
_F64 = torch.float64
_Tensor = torch.Tensor
_np_empty = np.empty
_contiguous = np.ascontiguousarray
_from_numpy = torch.from_numpy


def call_one(rule, level, model, q, v, u):
    """rule(model, None, q, v, u)[0] for rnea and aba by their One Function where it
    applies (plain CPU float64 tensors of one state, an input requiring grad under grad
    mode, no transform nor forward AD: the shape of a training step's call); else None
    (the caller checks the inputs and goes call()'s way, which names a refusal: the One
    forward's entry checks lengths and values and refuses with a bare ValueError)."""
    if (ONE and type(model) is _Model
            and type(q) is _Tensor and type(v) is _Tensor and type(u) is _Tensor
            and q.dtype is _F64 and v.dtype is _F64 and u.dtype is _F64
            and q.dim() == 1 and v.dim() == 1 and u.dim() == 1
            and q.is_cpu and v.is_cpu and u.is_cpu
            and (q.requires_grad or v.requires_grad or u.requires_grad)
            and torch.is_grad_enabled() and not _transforming()
            and fwAD._current_level < 0 and not (_wrapped(q) or _wrapped(v) or _wrapped(u))):
        try:
            return rule.one_apply(model, _plan(model, level.one), q, v, u)
        except ValueError:
            pass
    return None


def call_single(rule, level, model, extra, *xs):
    """call()'s outputs for one state of plain CPU float64 tensors of the lengths the
    level takes (nq for a q input, else nv) outside torch.func and forward AD, without
    check() (these tests are its, for this case): the NumPy forward on one state where no
    autograd is asked for, else the Lean Function. None for anything else (the caller
    checks the inputs and goes call()'s way)."""
    if type(model) is not _Model or _transforming() or fwAD._current_level >= 0:
        return None
    nq, nv, grad = model.nq, model.nv, torch.is_grad_enabled()
    arrays = []         # (None once autograd is asked for: the Lean Function's way)
    for x, isq in zip(xs, level.q_inputs):
        if not (type(x) is _Tensor and x.dtype is _F64 and x.dim() == 1 and x.is_cpu
                and x.shape[0] == (nq if isq else nv)) or _wrapped(x):
            return None
        if grad and x.requires_grad:
            arrays = None
        elif arrays is not None:
            arrays.append(retract(model, x.numpy(force=True)) if isq else x.numpy(force=True))
    if arrays is None:
        # torch's Function.apply does exactly this after binding the signature
        return super(torch.autograd.Function, rule.lean if LEAN else rule).apply(
            model, extra, *xs)
    return tuple(map(_from_numpy, level.fn(model, arrays, extra)))


class _Plan:
    """The One Function's per-(model, dynamics) constants: the model's packed arrays and
    float64 scratch (GIL-held fast entries: never two threads at once), the entry codes,
    the gradient buffer's layout. Not the model itself (_PLAN_CACHE's weak keys)."""
    __slots__ = ("mi", "mf", "ws", "qr", "D", "fn", "vjp", "nq", "nv", "ng", "nq_nv")

    def __init__(self, model, fn):
        from ..cpu import vjp
        from ..cpu.scratch import HELD
        from ..derivatives import _product_code
        from ..kernels.aza import AZA
        self.mi, self.mf, self.ws = model.mi, model.mf, HELD[model._scratch_key]
        self.qr = np.empty(model.nq)
        self.D = np.empty((4, model.nv, model.nv))
        self.fn = fn
        self.vjp = (vjp.ABA_AZA if fn == vjp.ABA and _product_code(model, "auto") == AZA
                    else fn)
        self.nq, self.nv = model.nq, model.nv
        self.ng, self.nq_nv = model.nq + 2 * model.nv, model.nq + model.nv


_PLAN_CACHE = weakref.WeakKeyDictionary()   # model -> {code: _Plan}
_PLAN_LAST = [None, None, None]             # the last (model, code, plan)


def _plan(model, code):
    if model is _PLAN_LAST[0] and code == _PLAN_LAST[1]:
        return _PLAN_LAST[2]
    plans = _PLAN_CACHE.get(model)
    if plans is None:
        plans = _PLAN_CACHE[model] = {}
    plan = plans.get(code)
    if plan is None:
        plan = plans[code] = _Plan(model, code)
    _PLAN_LAST[:] = model, code, plan
    return plan


def _bind_entries():
    """The cpu.vjp entries without Numba's type dispatch (kernels.jit.native): q and the
    cotangent compiled for any strides, v, u and qr C-contiguous (One.forward makes v and
    u so; qr is the plan's), the first call compiling. The entries pass qr, v and u on to
    the single entries (rnea_one, aba_derivatives_one, ...) by address: C-contiguous,
    those run the specialisation the NumPy API's calls compile, not one of their own."""
    from ..cpu import vjp
    from ..kernels.jit import native
    _FORWARD[0] = native(vjp.dynamics_retracted_one, 0, _FORWARD, inputs=(2,))
    _VJP[0] = native(vjp.dynamics_vjp_one, 0, _VJP, inputs=(2, 5))


_FORWARD, _VJP = [None], [None]
_bind_entries()


def _wrapped(t):
    """A functorch wrapper or a legacy batched tensor (autograd.grad's is_grads_batched)."""
    return _IS_WRAPPED(t) or _IS_LEGACY_BATCHED(t)


_IS_WRAPPED = torch._C._functorch.is_functorch_wrapped_tensor
_IS_LEGACY_BATCHED = torch._C._functorch.is_legacy_batchedtensor


def _transforming():
    return torch._C._are_functorch_transforms_active()


def _forward(level, model, extra, xs, keep=False):
    """The level's outputs at the tensors xs: q normalised, all leading axes one batch,
    float64, one NumPy API call; results in xs' dtype and leading shape (keep: and the
    NumPy arrays the call took, for a backward to reuse)."""
    batch = xs[0].shape[:-1]
    arrays = _arrays(level, model, xs, len(batch))
    nb = 1 if batch else 0
    dt = xs[0].dtype
    outs = level.fn(model, arrays, extra)
    outs = tuple(_out(o, batch + o.shape[nb:], dt) for o in outs)
    return (outs, arrays) if keep else outs


def _arrays(level, model, xs, n_batch):
    """The float64 NumPy arrays of xs that level.fn takes: leading axes flattened, q
    retracted."""
    return [retract(model, _to_numpy(x, n_batch)) if isq else _to_numpy(x, n_batch)
            for x, isq in zip(xs, level.q_inputs)]


def _forward_lean(level, model, extra, xs):
    """_forward's outputs and arrays, and ``raw``: the inputs' float64 arrays before the
    retraction (the backward's tangent map takes q itself). One float64 state skips the
    batch and dtype handling (check() gave every input one dtype and leading shape)."""
    x0 = xs[0]
    if x0.dim() == 1 and x0.dtype is torch.float64:
        raw = [x.numpy(force=True) for x in xs]     # CPU (checked): detach()'s view, cheaper
        arrays = [retract(model, a) if isq else a for a, isq in zip(raw, level.q_inputs)]
        return (tuple(torch.from_numpy(np.ascontiguousarray(o))
                      for o in level.fn(model, arrays, extra)), arrays, raw)
    batch = x0.shape[:-1]
    raw = [_to_numpy(x, len(batch)) for x in xs]
    arrays = [retract(model, a) if isq else a for a, isq in zip(raw, level.q_inputs)]
    nb, dt = 1 if batch else 0, x0.dtype
    return (tuple(_out(o, batch + o.shape[nb:], dt) for o in level.fn(model, arrays, extra)),
            arrays, raw)


# forward -> setup_context: the arrays a forward computed, for its backward (a NumPy
# backward then skips the conversions and the retraction). Per thread; taken only by the
# setup_context of the same inputs (under a torch.func transform they differ: not used)
_STASH = threading.local()


def _stashed(xs):
    last = getattr(_STASH, "last", None)
    _STASH.last = None
    if last is None or len(last[0]) != len(xs) or any(a is not b for a, b in zip(last[0], xs)):
        return None
    return last[1]


def _out(a, shape, dtype):
    t = torch.from_numpy(np.ascontiguousarray(a))
    if t.shape != shape:
        t = t.reshape(shape)
    return t if dtype == torch.float64 else t.to(dtype)


def _backward_numpy(level, model, extra, xs, gs, wanted, arrays=None, raw=None):
    """backward without a graph (plain .backward()): the same contraction in NumPy,
    with the next level's kernels called directly (arrays: the forward's, where it kept
    them; else converted again; raw: _forward_lean's, else q converted again)."""
    if level.nxt is None:
        raise RuntimeError(level.missing)
    nb = xs[0].dim() - 1
    if raw is not None and nb == 0 and xs[0].dtype is torch.float64:
        return _backward_one(level, model, extra, xs, gs, wanted, arrays, raw)
    if arrays is None:
        arrays = _arrays(level, model, xs, nb)
    J = level.nxt.fn(model, arrays, extra)
    flat = 1 if nb else 0
    grads = [None] * len(xs)
    for o, g in enumerate(gs):
        if g is None:
            continue
        g = _to_numpy(g, nb)
        if g.ndim != flat + 1:
            g = g.reshape(g.shape[:flat] + (-1,))
        for x, k in enumerate(level.jac[o]):
            if k is None or not wanted[x]:
                continue
            Jk = J[k]
            if flat:
                Jk = Jk.reshape((Jk.shape[0], -1, Jk.shape[-1]))
                w = (g[..., None, :] @ Jk)[..., 0, :]
            else:               # np.dot: a third of matmul's call cost on small arrays
                w = np.dot(g, Jk if Jk.ndim == 2 else Jk.reshape((-1, Jk.shape[-1])))
            grads[x] = w if grads[x] is None else grads[x] + w
    out = []
    for x, (t, isq) in enumerate(zip(xs, level.q_inputs)):
        if not wanted[x]:
            out.append(None)
            continue
        w = grads[x]
        if w is None:
            out.append(torch.zeros_like(t))
            continue
        if isq and _vjp_plan(model) is not None:      # (else the identity)
            w = _tangent_vjp(model, _to_numpy(t, nb) if raw is None else raw[x], w)
        out.append(_out(w, t.shape, t.dtype))
    return tuple(out)


def _backward_one(level, model, extra, xs, gs, wanted, arrays, raw):
    """_backward_numpy for one float64 state with the forward's arrays: the same
    arithmetic without the batch and dtype handling (its cost is a single state's)."""
    J = level.nxt.fn(model, arrays, extra)
    grads = [None] * len(xs)
    for row, g in zip(level.jac, gs):
        if g is None:
            continue
        g = g.numpy(force=True)         # a CPU tensor: detach()'s view, cheaper
        if g.ndim != 1:
            g = g.reshape(-1)
        for x, k in enumerate(row):
            if k is None or not wanted[x]:
                continue
            Jk = J[k]
            w = np.dot(g, Jk if Jk.ndim == 2 else Jk.reshape((-1, Jk.shape[-1])))
            grads[x] = w if grads[x] is None else grads[x] + w
    out = []
    for x, w in enumerate(grads):
        if w is None:
            out.append(torch.zeros_like(xs[x]) if wanted[x] else None)
            continue
        if level.q_inputs[x]:           # (w itself where the map is the identity)
            w = _tangent_vjp(model, raw[x], w)
        out.append(_from_numpy(w))
    return tuple(out)


def _tangent_vjp(model, q, w):
    """sum_c w[..., c] d e_c / d dq (..., nq): the transpose of tangent_of_ambient at q
    applied to w, in closed form per joint (rbdiff.model.tangent's formulas transposed);
    w itself where the map is the identity (revolute and prismatic joints only).
    _tangent_vjp_general evaluates the map itself; the tests compare the two."""
    plan = _vjp_plan(model)
    if plan is None:
        return w
    iq, iv, blocks, free = plan
    if free is _BASE and w.ndim == 1:   # one list, one array: no empty, no slice stores
        wl = w.tolist()
        return np.array(_free_flyer_vjp(q[3:7].tolist(), wl, 0) + wl[6:])
    out = np.empty(w.shape[:-1] + (model.nq,))
    out[..., iq] = w[..., iv]
    if w.ndim == 1 and free:
        wl = w.tolist()
        for _, k, j in blocks:      # one state: Python floats, one slice store a joint
            out[k:k + 7] = _free_flyer_vjp(q[k + 3:k + 7].tolist(), wl, j)
        return out
    for t, k, j in blocks:
        if t == L.REVOLUTE_UNBOUNDED:       # e = (c ds - s dc) / r^2
            c, s = q[..., k], q[..., k + 1]
            g = w[..., j] / (c * c + s * s)
            out[..., k], out[..., k + 1] = -s * g, c * g
        elif t == L.SPHERICAL:
            _quaternion_vjp(q, w, k, j, out)
        else:                               # free flyer: e_lin = R(n)^T dp, e_ang
            n = _quaternion_vjp(q, w, k + 3, j + 3, out)
            p = _rotate(n, _parts(w, j, 3))
            for i in range(3):
                out[..., k + i] = p[i]
    return out


def _free_flyer_vjp(x, w, j):
    """One free flyer's 7 entries of _tangent_vjp on Python floats (x: its quaternion, w:
    the whole cotangent, j: its first tangent index): _rotate(n, w[j:j+3]) and
    _quaternion_vjp's four values for w[j+3:j+6] inlined, their operations in their order."""
    x0, x1, x2, x3 = x
    p0, p1, p2, g0, g1, g2 = w[j:j + 6]
    r = (x0 * x0 + x1 * x1 + x2 * x2 + x3 * x3) ** 0.5
    n0, n1, n2, n3 = x0 / r, x1 / r, x2 / r, x3 / r
    s = 2 / r
    a0, a1, a2 = n1 * p2 - n2 * p1, n2 * p0 - n0 * p2, n0 * p1 - n1 * p0        # u x p
    return [p0 + 2 * n3 * a0 + 2 * (n1 * a2 - n2 * a1),
            p1 + 2 * n3 * a1 + 2 * (n2 * a0 - n0 * a2),
            p2 + 2 * n3 * a2 + 2 * (n0 * a1 - n1 * a0),
            s * (n3 * g0 + (n1 * g2 - n2 * g1)), s * (n3 * g1 + (n2 * g0 - n0 * g2)),
            s * (n3 * g2 + (n0 * g1 - n1 * g0)), -s * (n0 * g0 + n1 * g1 + n2 * g2)]


def _quaternion_vjp(q, w, k, j, out):
    """e = (2 / r) (n_w dx_u - dx_w u - u x dx_u) (n = x / r = (u, n_w), x = q[..., k:k+4])
    transposed on g = w[..., j:j+3]: out[..., k:k+3] = (2 / r) (n_w g + u x g),
    out[..., k+3] = -(2 / r) u . g. Works on components (floats for one state, arrays
    for a batch: no np.cross, whose overhead is a single state's whole cost). Returns n
    as its four components."""
    x, g = _parts(q, k, 4), _parts(w, j, 3)
    r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]) ** 0.5
    n = [c / r for c in x]
    s = 2 / r
    uxg = _cross(n, g)
    for i in range(3):
        out[..., k + i] = s * (n[3] * g[i] + uxg[i])
    out[..., k + 3] = -s * (n[0] * g[0] + n[1] * g[1] + n[2] * g[2])
    return n


def _parts(a, k, n):
    """a[..., k:k+n] as a list of n components (Python floats for a 1-D a)."""
    return a[k:k + n].tolist() if a.ndim == 1 else [a[..., k + i] for i in range(n)]


def _rotate(n, p):
    """R(n) p for a unit quaternion n = (u, w) (components): p + 2 w (u x p) + 2 u x (u x p)."""
    uxp = _cross(n, p)
    uxuxp = _cross(n, uxp)
    return [p[i] + 2 * n[3] * uxp[i] + 2 * uxuxp[i] for i in range(3)]


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


_PLANS = weakref.WeakKeyDictionary()     # model -> _vjp_plan's answer
_BASE = "base"      # _vjp_plan's ``free`` for a free flyer at the front and nothing else


def _vjp_plan(model):
    """None where tangent_of_ambient is the identity; else (iq, iv, blocks, free): the q
    and tangent indices of the revolute and prismatic joints (slices where they are
    runs), (type, q index, tangent index) of every other joint, in tangent_of_ambient's
    order, and whether those are all free flyers (_BASE: one, at the front, the other
    joints revolute or prismatic after it: a floating-base robot's usual layout)."""
    try:
        return _PLANS[model][0]
    except KeyError:
        pass
    iq, iv, blocks, j = [], [], [], 0
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            iq.append(k)
            iv.append(j)
            j += 1
        else:
            blocks.append((t, k, j))
            j += {L.REVOLUTE_UNBOUNDED: 1, L.SPHERICAL: 3}.get(t, 6)
    identity = not blocks and iq == list(range(model.nq)) and iv == iq
    free = all(t == L.FREE_FLYER for t, _, _ in blocks)
    if (blocks == [(L.FREE_FLYER, 0, 0)] and iq == list(range(7, model.nq))
            and iv == list(range(6, model.nv))):
        free = _BASE
    plan = None if identity else (_run(iq), _run(iv), blocks, free)
    _PLANS[model] = (plan,)
    return plan


def _run(ix):
    """An index list as a slice where it is a run of consecutive indices (a slice copy
    costs a third of fancy indexing's), else an index array."""
    if ix and ix == list(range(ix[0], ix[0] + len(ix))):
        return slice(ix[0], ix[0] + len(ix))
    return np.array(ix, np.intp)


def _tangent_vjp_general(model, q, w):
    """_tangent_vjp by evaluating tangent_of_ambient at the unit vectors (the reference
    the tests compare the closed form with)."""
    eye = _EYES.get(model.nq)
    if eye is None:
        eye = _EYES[model.nq] = np.eye(model.nq)
    e = tangent_of_ambient(model, q[..., None, :] if q.ndim > 1 else q, eye)
    Tt = np.stack(np.broadcast_arrays(*e) if q.ndim > 1 else e, -1)
    return (Tt @ w[..., :, None])[..., 0]


_EYES = {}

def _contract(J, d):
    """sum_n J[..., s, n] d[..., n] for a J with any number of output axes s."""
    nb = d.dim() - 1
    flat = J.reshape(J.shape[:nb] + (-1, J.shape[-1]))
    return (flat @ d.unsqueeze(-1)).squeeze(-1).reshape(J.shape[:-1])
