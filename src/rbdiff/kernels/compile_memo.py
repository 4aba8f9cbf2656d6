"""Numba's call typing, remembered: a third less time to a first result.

Numba types every call (``a * b``, ``x[i]``, ``math.sqrt(t)``) by trying each of the
function's typing templates in turn (operator.mul has dozens, array and ufunc ones
included), at every call site and again while lowering: compiling rbdiff.aba from an
empty cache resolved ~6,000 such calls, a third of its cold start, nearly all of them the
same few (float64 * float64, array[int64]). The answer depends only on the function, the
typing context and the argument types, so ``BaseFunction.get_call_type`` (plain
functions and operators) is wrapped in a dictionary keyed by those. Left to Numba: calls
with keyword arguments or with an argument that is not a plain value type (a function, a
dispatcher, a class: their typing can compile other code or depend on state), and failed
resolutions. Measured on iiwa14, fresh process, empty cache: see README, "Compilation
and the cache"; the compiled code is the same (same signatures, same implementations).
(Remembering lowering's missed probes, ``static_getitem`` and ``__array__``, which reload
the registries on every miss, was tried too: no measurable gain.)
``AVAILABLE`` is False, and nothing is patched, where Numba's internals differ.
"""

from numba.core import types

try:
    from numba.core.types.functions import BaseFunction
    AVAILABLE = callable(getattr(BaseFunction, "get_call_type", None))
except ImportError:      # pragma: no cover (another Numba)
    AVAILABLE = False

# argument types whose typing is a function of the type alone (tuples: of these)
_VALUES = (types.Number, types.Boolean, types.Array, types.NoneType, types.SliceType,
           types.EnumMember)
_typed = {}


def _plain(t):
    if isinstance(t, types.BaseTuple):
        return all(_plain(x) for x in t.types)
    return isinstance(t, _VALUES)


def _remembered_typing(original):
    def get_call_type(self, context, args, kws):
        if kws or not all(_plain(a) for a in args):
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


def install():
    """Wrap Numba's call typing once per process (idempotent)."""
    if AVAILABLE and not getattr(BaseFunction, "_rbdiff_memo", False):
        BaseFunction.get_call_type = _remembered_typing(BaseFunction.get_call_type)
        BaseFunction._rbdiff_memo = True
