"""One way into the compiled entries: a public function is declared once, as a
:class:`Function` (its entries, inputs, options, outputs, scratch and result type), and
its general path follows from the declaration: dtype promotion, shape and batch checks,
output allocation, the single entry or the batch pair (cpu.policy picks serial or
parallel), the precise error when an entry refuses its input, and the route to a CUDA
device. ``rbdiff.dask`` and ``python -m rbdiff compile`` read the same declarations
(:data:`DECLARED`), so a new function needs no code of its own there.

What a declaration does not replace is a function's fast path: the few lines in front
that hand float64 NumPy arrays straight to a natively bound entry (api.py explains why
they are written flat). A fast path that misses falls through to the declared call.

Entry conventions (cpu/single.py, cpu/batch.py):

- single: ``one(*model_args, *inputs[, fext], *options, *scratch, *outputs)``, or with
  ``options_last``: ``one(*model_args, *inputs[, fext], *outputs, *options)``;
- batch pair: ``serial(*model_args, *inputs[, fext], *outputs, *options, check)`` and
  ``parallel(..., *outputs, *options, nchunks)``.

A single float32 or complex128 call runs as one item on the serial batch entry, so that
those dtypes compile one entry per function (the single entries serve float64).

``model_args`` is "configuration" (mi), "dynamics" (mi, mf) or "frames" (mi, mf,
frame_parents, frame_mf); mf and frame_mf follow the computed dtype (float32 models for
float32 inputs).
"""

import numpy as np
from numba import typeof

from .cpu import outputs, policy
from .cpu.scratch import single_call_scratch
from .cpu import twin
from .model.lookup import frame_index, joint_index
from .results import REFERENCE_CODES, reference_name
from .validation import F64 as _F64
from .validation import (explain, gpu_call, no_forces, on_device, prepare,
                         prepare_broadcast)

__all__ = ["Function", "DECLARED", "frame_index", "joint_index", "reference_code",
           "reference_option"]

DECLARED = {}          # public name -> its Function (rbdiff.dask, rbdiff compile)

_MODEL_ARGS = ("configuration", "dynamics", "frames")
_SCRATCH = ("none", "workspace", "workspace+forces")
_SIZES = ("nq", "nv", "njoints", "nframes")


def reference_code(reference):
    """The kernel code of a reference frame name (results.reference_name's spellings)."""
    return REFERENCE_CODES[reference_name(reference)]


def reference_option(model, reference):
    """reference_code as a ``params`` resolver (model, value) -> int."""
    return reference_code(reference)


def _size(model, token, sizes=None):
    """A shape token's value on ``model`` ("nframes": len(model.frames)), or in the call's
    ``sizes`` for a token the function declares call-supplied ("nc")."""
    if type(token) is int:
        return token
    if sizes is not None and token in sizes:
        return sizes[token]
    return len(model.frames) if token == "nframes" else getattr(model, token)


class Function:
    """A public function's compiled entries and what they take and give.

    name        the public name (error messages, rbdiff.dask, rbdiff compile)
    one         the single entry; ``batch``: its (serial, parallel) pair
    inputs      ((name, "nq" | "nv" | a ``sizes`` token[, "optional"]), ...) in call order
                (a costate on the contact rows: ("lam_f", "nc")); the first is the
                configuration checked for unit quaternions (``configurations`` names others
                too); an optional input may be None, and the entries then get None
    outputs     each output's shape, with size tokens "nq", "nv", "njoints", "nframes";
                ``block``: all outputs share one shape and one allocation (a view each);
                ``needs``: per output, the optional input it is computed from (None: always),
                so an output is None, and the entries get None, when that input is
    fext        the entries take external forces (njoints, 6) after the inputs
    scratch     what a single call is given before its outputs: nothing, a workspace,
                or a workspace and M^-1's force scratch (cpu.scratch)
    result      a NamedTuple type for several outputs (else a tuple; one output: the array),
                or {number of outputs computed: type} where optional inputs decide it
    gpu         the rbdiff.gpu function of the same call, or None (a device array is then
                refused with a message naming the function)
    params      ((keyword, resolver), ...): the public keywords that become the entries'
                integer options (resolver(model, value) -> int), for the generic wrappers
    broadcast   a single input is broadcast along another's batch axis (integrate(q, V))
    errors      {an entry's ValueError message: make(model) -> the exception to raise}, for
                refusals the input checks cannot explain (a massless model)
    variant     another route of a function declared already (method="chain_rule"): kept
                as "name[variant]", so the generic wrappers see one declaration per name
    sizes       output size tokens each call supplies (``sizes={"nc": 12}`` in the call:
                a contact set's constraint rows); the generic wrappers (rbdiff.dask,
                rbdiff compile) skip a function that has any
    """

    __slots__ = ("name", "one", "batch", "inputs", "outputs", "model_args", "fext",
                 "scratch", "result", "gpu", "configurations", "options_last", "block",
                 "params", "public", "needs", "errors", "broadcast", "sizes", "_plans")

    def __init__(self, name, one, batch, inputs, outputs, model_args="dynamics", fext=False,
                 scratch="workspace", result=None, gpu=None, configurations=None,
                 options_last=False, block=False, params=(), variant=None, needs=None,
                 errors=None, broadcast=False, sizes=()):
        if model_args not in _MODEL_ARGS:
            raise ValueError(f"model_args: expected one of {_MODEL_ARGS}, got {model_args!r}")
        if scratch not in _SCRATCH:
            raise ValueError(f"scratch: expected one of {_SCRATCH}, got {scratch!r}")
        for spec in inputs:
            if spec[1] not in ("nq", "nv", *sizes) or spec[2:] not in ((), ("optional",)):
                raise ValueError(f"{name}: an input is (name, 'nq' | 'nv'[, 'optional']), "
                                 f"got {spec!r}")
        for shape in outputs:
            for t in shape:
                if not (type(t) is int or t in _SIZES or t in sizes):
                    raise ValueError(f"{name}: output size {t!r} is not an int or one of "
                                     f"{_SIZES}")
        if block and len(set(map(tuple, outputs))) != 1:
            raise ValueError(f"{name}: block outputs must share one shape")
        self.name, self.one, self.batch = name, one, tuple(batch)
        self.inputs, self.outputs = tuple(inputs), tuple(tuple(s) for s in outputs)
        self.model_args, self.fext, self.scratch = model_args, fext, scratch
        self.result, self.gpu = result, gpu
        self.configurations = configurations or (inputs[0][0],)
        self.options_last, self.block, self.params = options_last, block, tuple(params)
        self.public = None
        self.needs = tuple(needs) if needs is not None else (None,) * len(outputs)
        self.errors = dict(errors or {})
        self.broadcast = broadcast
        self.sizes = tuple(sizes)
        self._plans = {}        # fast_batch's shapes per (model, batch, sizes, None inputs)
        DECLARED[name if variant is None else f"{name}[{variant}]"] = self

    def shapes(self, model, sizes=None):
        """The output shapes on ``model`` (without a batch axis); ``sizes``: the values of
        the call-supplied tokens."""
        return [tuple(_size(model, t, sizes) for t in s) for s in self.outputs]

    def _model_args(self, model, mf, dtype):
        if self.model_args == "configuration":
            return (model.mi,)
        if self.model_args == "dynamics":
            return (model.mi, mf)
        fmf = model.frame_mf32 if dtype == np.float32 else model.frame_mf
        return (model.mi, mf, model.frame_parents, fmf)

    def _allocate(self, model, lead, dtype, given, sizes=None):
        shapes = self.shapes(model, sizes)
        if self.block:
            whole = (outputs.empty(((len(shapes),) + lead + shapes[0],), dtype)[0] if lead
                     else np.empty((len(shapes),) + lead + shapes[0], dtype))
            return tuple(whole[k] for k in range(len(shapes)))
        wanted = [need is None or need in given for need in self.needs]
        if not lead:
            return tuple(np.empty(s, dtype) if w else None for s, w in zip(shapes, wanted))
        # a batch: large outputs from a kept block, without page faults (cpu/outputs.py)
        new = iter(outputs.empty([lead + s for s, w in zip(shapes, wanted) if w], dtype))
        return tuple(next(new) if w else None for w in wanted)

    def result_type(self, n):
        """The result type of ``n`` computed outputs (``result`` may map counts to types:
        center_of_mass(q, v) and (q, v, a) return different records), or None."""
        return self.result.get(n) if isinstance(self.result, dict) else self.result

    def _wrap(self, outs):
        if any(o is None for o in outs):    # outputs of optional inputs not given
            outs = tuple(o for o in outs if o is not None)
        result = self.result_type(len(outs))
        if result is not None:          # a NamedTuple without its Python __new__
            if issubclass(result, tuple):
                return tuple.__new__(result, outs)
            return result(*outs)
        return outs[0] if len(outs) == 1 else outs

    def __call__(self, model, *xs, fext=None, options=(), batch_options=None, out=None,
                 sizes=None):
        """The general path: validate ``xs`` (the declared inputs, in order) and ``fext``,
        run the single entry or the batch pair with the integer ``options`` (the batch
        pair gets ``batch_options`` where they differ), and return new outputs, or the
        caller's ``out`` (a tuple of arrays of the output shapes and dtype). ``sizes``:
        the values of the declared call-supplied size tokens."""
        if set(self.sizes) - set(sizes or ()):
            raise TypeError(f"{self.name}: the call must give sizes for {self.sizes}")
        if on_device(*xs, fext):
            if self.gpu is None:
                raise TypeError(f"{self.name} runs on the CPU only: pass NumPy arrays "
                                "(copy device arrays to the host first)")
            return gpu_call(self.gpu, model, *xs, *((fext,) if self.fext else ()),
                            **({} if out is None else {"out": out}))
        named = [(spec[0], x, _size(model, spec[1], sizes)) for spec, x in zip(self.inputs, xs)
                 if x is not None or len(spec) == 2]    # a required None: prepare names it
        arrays, f, nb, mf = (prepare_broadcast(model, named) if self.broadcast
                             else prepare(model, fext, named, wants_fext=self.fext))
        given = {n: x for (n, _, _), x in zip(named, arrays)}
        inputs = [given.get(spec[0]) for spec in self.inputs]
        dt = arrays[0].dtype
        lead = () if nb is None else (nb,)
        outs = (self._allocate(model, lead, dt, given, sizes) if out is None
                else caller_outputs(out, [lead + s for s in self.shapes(model, sizes)], dt,
                                    getattr(self.result_type(len(self.outputs)), "_fields",
                                            None)))
        args = (*self._model_args(model, mf, dt), *inputs) + ((f,) if self.fext else ())
        try:
            if nb is None and dt != _F64:
                # float32 / complex128 (tests, the complex step): one item on the serial
                # batch entry, so each such dtype compiles one entry per function, not two
                one = tuple(None if x is None else x[None] for x in inputs) + (
                    ((np.zeros((1, 0, 6), dt) if f is None else f[None]),)
                    if self.fext else ())
                self.batch[0](*args[:len(args) - len(one)], *one,
                              *(o if o is None else o[None] for o in outs),
                              *(options if batch_options is None else batch_options), True)
            elif nb is None:
                if self.options_last:
                    full = (*args, *outs, *options)
                elif self.scratch == "none":
                    full = (*args, *options, *outs)
                else:
                    full = (*args, *options, *single_call_scratch(
                        model.njoints, model.nv, dt, self.scratch != "workspace"), *outs)
                single_f64(self.one, full)
            else:
                policy.run(model, *policy.fast_or(self.batch, dt), nb, args + outs,
                           options if batch_options is None else batch_options)
        except ValueError as e:
            make = self.errors.get(str(e))
            if make is not None:
                raise make(model) from None
            raise explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], f,
                          self.configurations, error=e) from None
        return self._wrap(outs)

    def fast_batch(self, model, *xs, options=(), sizes=None):
        """The batch pair for float64 C-contiguous batches (B, n) of one batch size and
        the declared lengths (an optional input None), no fext, checked by a few
        attribute reads instead of the general path (the entries still check the values,
        as on that path): rbdiff's own loops, such as trajopt's dozens of calls an
        iteration, ~5 us less a call. New outputs. Other input, or an entry's refusal
        (ValueError, explained as the general path explains it), takes the general path."""
        x0 = xs[0]
        if type(x0) is not np.ndarray or x0.ndim != 2:
            return self(model, *xs, options=options, sizes=sizes)
        nb = x0.shape[0]
        # the model's content digest: its sizes (no reference to the model kept)
        key = (model._digest, nb, None if sizes is None else tuple(sizes.items()),
               tuple([x is None for x in xs]))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(model, nb, xs, sizes, key)
        lengths, shapes, wanted, pool, result = plan
        if lengths is None:             # a required input None: the general path names it
            return self(model, *xs, options=options, sizes=sizes)
        for x, n in zip(xs, lengths):
            if n < 0:
                continue
            if type(x) is not np.ndarray or x.dtype is not _F64 or x.shape != (nb, n) \
                    or not x.flags.c_contiguous:
                return self(model, *xs, options=options, sizes=sizes)
        if shapes is None:
            outs = self._allocate(model, (nb,), _F64, {spec[0]: x for spec, x in
                                                       zip(self.inputs, xs)
                                                       if x is not None}, sizes)
        else:
            new = outputs.empty(shapes) if pool else [np.empty(s) for s in shapes]
            if wanted is None:
                outs = tuple(new)
            else:
                new = iter(new)
                outs = tuple([next(new) if w else None for w in wanted])
        args = (*self._model_args(model, model.mf, _F64), *xs) + (
            (no_forces(nb),) if self.fext else ())
        try:
            policy.run(model, *policy.fast_or(self.batch, _F64), nb, args + outs, options)
        except ValueError:
            return self(model, *xs, options=options, sizes=sizes)
        if wanted is not None or shapes is None:
            return self._wrap(outs)
        if result is None:              # _wrap's, its result type looked up once
            return outs[0] if len(outs) == 1 else outs
        return tuple.__new__(result, outs) if issubclass(result, tuple) else result(*outs)

    def _plan(self, model, nb, xs, sizes, key):
        """fast_batch's (the inputs' lengths (-1: an optional input None; None: a
        required one None), the wanted outputs' shapes (None: a block, _allocate's),
        which outputs are wanted (None: all), whether outputs.empty pools them, the
        result type of all outputs) for one model, batch size, sizes and pattern of
        None inputs: worked out once, not on every call (~3 us of a 5.5 us call)."""
        lengths = []
        for spec, x in zip(self.inputs, xs):
            if x is None:
                if len(spec) != 3:
                    lengths = None
                    break
                lengths.append(-1)
            else:
                lengths.append(_size(model, spec[1], sizes))
        given = {spec[0] for spec, x in zip(self.inputs, xs) if x is not None}
        wanted = [need is None or need in given for need in self.needs]
        shapes = None if self.block else [(nb,) + s for s, w in
                                          zip(self.shapes(model, sizes), wanted) if w]
        pool = shapes is not None and outputs.pooled(shapes)
        if len(self._plans) >= 256:     # many models or batch sizes: start again
            self._plans.clear()
        plan = self._plans[key] = (None if lengths is None else tuple(lengths),
                                   shapes, None if all(wanted) else tuple(wanted), pool,
                                   self.result_type(len(self.outputs)))
        return plan

    def resolve(self, model, kwargs):
        """The integer options of the public keywords ``kwargs`` (checked: KeyError,
        ValueError naming the problem), in ``params`` order."""
        return tuple(resolver(model, kwargs[k]) for k, resolver in self.params)


_SINGLE = {}    # (entry, which arguments are None) -> what single_f64 calls


def single_f64(entry, args):
    """entry(*args) for a float64 single call of the general path, on the entry's
    specialisation a fast path compiled (its inputs typed for any strides, cached by
    ``rbdiff compile``) where these arguments pass to it: a call that left the fast path
    (out=, lists, a refused input) then loads instead of compiling a C-contiguous twin.
    The compiled function is called without Numba's per-call type dispatch (~4 us on
    aba_derivatives with fext). Keyed by which arguments are None: validation fixes
    every other argument's type (float64 C-contiguous arrays of the declared ndim, int64
    tables, int options)."""
    key = (entry, tuple([a is None for a in args]))
    fn = _SINGLE.get(key)
    if fn is None:
        fn = _SINGLE[key] = _single_entry(entry, args)
    return fn(*args)


def _single_entry(entry, args):
    """What single_f64 calls: the compiled entry, given its trailing optional parameters
    (the fast paths' result class) as None, which a compiled entry point cannot omit."""
    code, defaults = entry.py_func.__code__, entry.py_func.__defaults__ or ()
    rest = defaults[len(defaults) - (code.co_argcount - len(args)):] \
        if code.co_argcount > len(args) else ()
    sig = twin.variant(entry, tuple(typeof(a) for a in args + rest))
    entry.compile(sig)
    fn = entry.overloads[sig].entry_point
    return fn if not rest else (lambda *a: fn(*a, *rest))


def caller_outputs(out, shapes, dt, names=None):
    """The caller's ``out=`` arrays, checked: writeable C-contiguous NumPy arrays of the
    output shapes and the computed dtype, one per output, none overlapping another."""
    names = names or [f"output {k}" for k in range(len(shapes))]
    if not (isinstance(out, (tuple, list)) and len(out) == len(shapes)):
        count = ("one", "two", "three", "four", "five")[len(shapes) - 1] \
            if len(shapes) <= 5 else str(len(shapes))
        raise TypeError(f"out: expected a tuple of {count} arrays "
                        f"({', '.join(names)}), got {type(out).__name__}")
    for name, o, shape in zip(names, out, shapes):
        if type(o) is not np.ndarray:
            raise TypeError(f"out: {name} must be a NumPy array, got {type(o).__name__}")
        if o.shape != shape or o.dtype != dt:
            raise ValueError(f"out: {name} must have shape {shape} and dtype {dt}, got "
                             f"{o.shape} and {o.dtype}")
        if not (o.flags.c_contiguous and o.flags.writeable):
            raise ValueError(f"out: {name} must be C-contiguous and writeable")
    for k in range(len(out)):
        for m in range(k):
            if np.may_share_memory(out[k], out[m]):
                raise ValueError(f"out: {names[k]} overlaps {names[m]}")
    return tuple(out)
