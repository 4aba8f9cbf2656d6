"""rbdiff.kernels.compile_memo: the remembered call typing answers as Numba does, keys
only plain value types, and is installed once."""

import math
import operator

import numba
import numpy as np
import pytest
from numba.core import types
from numba.core.registry import cpu_target
from numba.core.types.functions import BaseFunction

from rbdiff.kernels import compile_memo

pytestmark = pytest.mark.skipif(not compile_memo.AVAILABLE, reason="another Numba")

A = types.Array(types.float64, 1, "C")
CASES = [(operator.mul, (types.float64, types.float64)),
         (operator.add, (types.int64, types.float64)),
         (operator.getitem, (A, types.intp)),
         (operator.getitem, (types.Array(types.float64, 2, "A"),
                             types.UniTuple(types.intp, 2))),
         (math.sqrt, (types.float64,)),
         (np.empty, (types.UniTuple(types.intp, 2),))]


def _original():
    return BaseFunction.get_call_type.__closure__[0].cell_contents


@pytest.mark.parametrize("fn, args", CASES)
def test_same_answer_as_numba(fn, args):
    compile_memo.install()
    ctx = cpu_target.typing_context
    ctx.refresh()
    fnty = ctx.resolve_value_type(fn)
    remembered = fnty.get_call_type(ctx, args, {})
    assert remembered is not None
    assert remembered == _original()(fnty, ctx, args, {})
    assert fnty.get_call_type(ctx, args, {}) is remembered        # the second ask: memo
    assert (fnty, ctx, args) in compile_memo._typed


def test_only_plain_value_types_are_keyed():
    assert compile_memo._plain(types.UniTuple(types.float64, 3))
    assert compile_memo._plain(types.Tuple((A, types.none, types.intp)))
    assert not compile_memo._plain(types.Tuple((types.float64, types.unicode_type)))
    assert not compile_memo._plain(numba.typeof(numba.njit(lambda x: x)))   # a dispatcher


def test_installed_once():
    compile_memo.install()
    wrapper = BaseFunction.get_call_type
    compile_memo.install()
    assert BaseFunction.get_call_type is wrapper
    assert _original().__name__ == "get_call_type" and _original() is not wrapper
