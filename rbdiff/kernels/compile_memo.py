"""Two of Numba's compile-time lookups, remembered: a third less time to a first result.

1. Call typing. Numba types every call (``a * b``, ``x[i]``, ``math.sqrt(t)``) by trying
   each of the function's typing templates in turn (operator.mul has dozens, array and
   ufunc ones included), at every call site and again while lowering: compiling
   rbdiff.aba from an empty cache resolved ~6,000 such calls, a third of its cold start,
   nearly all of them the same few (float64 * float64, array[int64]). The answer depends
   only on the function, the typing context and the argument types, so
   ``BaseFunction.get_call_type`` (plain functions and operators) is wrapped in a
   dictionary keyed by those. Left to Numba: calls with keyword arguments or with an
   argument that is not a plain value type (a function, a dispatcher, a class: their
   typing can compile other code or depend on state), and failed resolutions.
2. Lowering probes. Lowering asks for an optional implementation first (``__array__``,
   ``static_getitem`` for ``x[0]``) and falls back when there is none; each miss reloads
   every lowering registry (``BaseContext.refresh``, ~0.4 ms), ~1,500 times for aba.
   A probe that missed after such a reload is remembered as missing for that signature,
   and later asks skip the reload.

Measured on iiwa14, fresh process, empty cache: see README, "Compilation and the
cache". The compiled code is the same (same signatures, same implementations).
``AVAILABLE`` is False, and nothing is patched, where Numba's internals differ.
"""

from numba.core import types

try:
    from numba.core.base import BaseContext
    from numba.core.types.functions import BaseFunction
    AVAILABLE = (callable(getattr(BaseFunction, "get_call_type", None))
                 and callable(getattr(BaseContext, "get_function", None)))
except ImportError:      # pragma: no cover (another Numba)
    AVAILABLE = False

# argument types whose typing is a function of the type alone
_VALUES = (types.Number, types.Boolean, types.Array, types.NoneType, types.BaseTuple,
           types.SliceType, types.EnumMember)
# lowering's optional implementations, asked before a fallback
_PROBES = frozenset({"__array__", "static_getitem", "static_setitem"})
_typed = {}
_missing = set()


def _remembered_typing(original):
    def get_call_type(self, context, args, kws):
        if kws or not all(isinstance(a, _VALUES) for a in args):
            return original(self, context, args, kws)
        key = (self, context, args)
        try:
            return _typed[key]
        except KeyError:
            pass
        except TypeError:        # an unhashable type: ask Numba
            return original(self, context, args, kws)
        sig = original(self, context, args, kws)
        if sig is not None:
            _typed[key] = sig
        return sig

    return get_call_type


def _remembered_probes(original):
    def get_function(self, fn, sig, _firstcall=True):
        if fn.__class__ is not str or fn not in _PROBES:
            return original(self, fn, sig, _firstcall)
        key = (self, fn, sig.args)
        if key in _missing:      # missing after a reload already: no reload again
            return original(self, fn, sig, False)
        try:
            return original(self, fn, sig, _firstcall)
        except NotImplementedError:
            if _firstcall:
                _missing.add(key)
            raise

    return get_function


def install():
    """Wrap both lookups once per process (idempotent)."""
    if AVAILABLE and not getattr(BaseContext, "_rbdiff_memo", False):
        BaseFunction.get_call_type = _remembered_typing(BaseFunction.get_call_type)
        BaseContext.get_function = _remembered_probes(BaseContext.get_function)
        BaseContext._rbdiff_memo = True
