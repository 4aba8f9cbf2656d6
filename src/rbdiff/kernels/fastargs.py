"""Fast-path arguments checked in compiled code instead of Python.

A fast path in the api layer must make sure that an array argument is a float64 vector
before a compiled entry bound by ``jit.native`` unboxes it: the entry trusts its
signature (an array of another ndim overruns the unboxed struct; int64 or complex64 data
would be read as float64). Asked in Python (``q.dtype is F64 and q.ndim == 1``), that
costs ~20 ns an attribute, ~85 ns for two arrays: as much as integrating a 9-joint arm.

Here such an argument is instead typed ``REF`` (any Python object, unboxed as its
borrowed pointer: the caller's argument tuple keeps it alive during the call) and the
entry converts it with :func:`float64_vector`, which reads the object's type, dimension
count and dtype descriptor from NumPy's ``PyArrayObject`` struct (fixed offsets, checked
against ctypes reads when this module is imported) and compares type and descriptor with
those of ``like``, an array the api layer just made with ``np.empty`` (an exact ndarray
of NumPy's float64 descriptor): the same test as ``type(q) is np.ndarray and q.dtype is
F64 and q.ndim == 1``. It returns (ok, vector) and never reads past the type unless the
object is an exact ndarray.

``AVAILABLE`` is False when the running CPython / NumPy lay their objects out otherwise
(a debug or free-threaded CPython, a future NumPy); the api layer then checks in Python.
"""

import ctypes

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import (NativeValue, intrinsic, models, overload,
                                    register_jitable, register_model, unbox)

# byte offsets in a PyArrayObject (numpy/ndarraytypes.h, PyArrayObject_fields, after the
# PyObject header: refcount, type)
OFF_TYPE = 8
OFF_DATA = 16
OFF_ND = 24
OFF_DIMS = 32
OFF_STRIDES = 40
OFF_DESCR = 56

class _Ref(types.Opaque):
    """Any Python object, as its borrowed pointer."""

    def __init__(self):
        super().__init__(name="rbdiff.PyRef")


REF = _Ref()
register_model(_Ref)(models.OpaqueModel)


@unbox(_Ref)
def _unbox_ref(typ, obj, c):
    return NativeValue(c.builder.bitcast(obj, cgutils.voidptr_t))


def _layout_matches():
    """The offsets above describe this process's ndarrays (read back with ctypes)."""
    try:
        a = np.arange(3.0)[::-1]
        ptr = ctypes.c_void_p

        def at(off, t=ptr):
            return t.from_address(id(a) + off).value
        return (at(OFF_TYPE) == id(np.ndarray) and at(OFF_DATA) == a.ctypes.data
                and at(OFF_ND, ctypes.c_int) == 1 and at(OFF_DESCR) == id(a.dtype)
                and ctypes.c_int64.from_address(at(OFF_DIMS)).value == 3
                and ctypes.c_int64.from_address(at(OFF_STRIDES)).value == -8)
    except Exception:       # noqa: BLE001 - any surprise means: check in Python
        return False


AVAILABLE = _layout_matches()


def _array_codegen(nd, contiguous):
    """The codegen of float64_vector (nd 1, any strides) and float64_contiguous (C
    layout): (ok, array) from a REF, ``like``'s type and descriptor the test."""
    arr_t = types.Array(types.float64, nd, "C" if contiguous else "A")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import populate_array   # compile time only (~80 ms import)
        obj, like_val = args[0], args[1]
        like_obj = context.make_array(sig.args[1])(context, builder, like_val).parent
        i64, i32 = ir.IntType(64), ir.IntType(32)
        vp = cgutils.voidptr_t

        def field(base, off, ty):
            p = builder.gep(builder.bitcast(base, cgutils.int8_t.as_pointer()),
                            [ir.Constant(i64, off)])
            return builder.load(builder.bitcast(p, ty.as_pointer()))

        arr = context.make_array(arr_t)(context, builder)
        itemsize = ir.Constant(i64, 8)
        zeros = [ir.Constant(i64, 0)] * nd
        populate_array(arr, data=cgutils.get_null_value(arr.data.type), shape=zeros,
                       strides=zeros, itemsize=itemsize, meminfo=None)
        ok = cgutils.alloca_once_value(builder, cgutils.false_bit)
        same_type = builder.icmp_unsigned("==", field(obj, OFF_TYPE, vp),
                                          field(like_obj, OFF_TYPE, vp))
        with builder.if_then(same_type, likely=True):         # an exact ndarray
            dims_ok = builder.icmp_signed("==", field(obj, OFF_ND, i32), ir.Constant(i32, nd))
            same_descr = builder.icmp_unsigned("==", field(obj, OFF_DESCR, vp),
                                               field(like_obj, OFF_DESCR, vp))
            with builder.if_then(builder.and_(dims_ok, same_descr), likely=True):
                dims = field(obj, OFF_DIMS, i64.as_pointer())
                strides = field(obj, OFF_STRIDES, i64.as_pointer())
                shape = [builder.load(builder.gep(dims, [ir.Constant(i64, k)]))
                         for k in range(nd)]
                given = [builder.load(builder.gep(strides, [ir.Constant(i64, k)]))
                         for k in range(nd)]
                taken = cgutils.true_bit
                if contiguous:
                    # C order: stride[k] = 8 * prod(shape[k+1:]) (NumPy also calls an
                    # array with a length-1 or empty axis contiguous: the general path
                    # takes those)
                    want, c_strides = itemsize, [None] * nd
                    for k in reversed(range(nd)):
                        c_strides[k] = want
                        taken = builder.and_(taken,
                                             builder.icmp_signed("==", given[k], want))
                        want = builder.mul(want, shape[k])
                    given = c_strides
                with builder.if_then(taken, likely=True):
                    data = field(obj, OFF_DATA, vp)
                    populate_array(arr, data=builder.bitcast(data, arr.data.type),
                                   shape=shape, strides=given, itemsize=itemsize,
                                   meminfo=None, parent=obj)
                    builder.store(cgutils.true_bit, ok)
        return context.make_tuple(builder, sig.return_type,
                                  [builder.load(ok), arr._getvalue()])
    return arr_t, codegen


@intrinsic
def float64_vector(typingctx, ref, like):
    """(ok, vector): ``ref`` (REF) as a 1-D float64 array of any strides when it is an
    ndarray of the type and dtype descriptor of ``like`` (an array) with one dimension;
    else (False, an empty vector)."""
    if not (isinstance(ref, _Ref) and isinstance(like, types.Array)):
        return None
    arr_t, codegen = _array_codegen(1, False)
    return types.Tuple((types.boolean, arr_t))(ref, like), codegen


@intrinsic(prefer_literal=True)
def float64_contiguous(typingctx, ref, like, ndim):
    """(ok, array): ``ref`` (REF) as a C-contiguous float64 array of ``ndim`` (a literal)
    dimensions when it is an ndarray of ``like``'s type and dtype descriptor with that
    many dimensions and C-contiguous strides; else (False, an empty array). C layout, not
    'A': the kernels' inner loops over a strided fext cost iiwa14's rnea ~0.2 us."""
    if not (isinstance(ref, _Ref) and isinstance(like, types.Array)
            and isinstance(ndim, types.IntegerLiteral)):
        return None
    arr_t, codegen = _array_codegen(ndim.literal_value, True)
    return types.Tuple((types.boolean, arr_t))(ref, like, ndim), codegen


def vector_arg(x, like):
    """(ok, x) in compiled code: a REF checked by :func:`float64_vector`; an array (the
    declared path's, or a fast path's where REF is not AVAILABLE) or None as it is. One
    entry then serves both routes."""
    raise NotImplementedError("compiled code only")


def contiguous_arg(x, like, ndim):
    """(ok, x) in compiled code: a REF checked by :func:`float64_contiguous`; an array or
    None as it is."""
    raise NotImplementedError("compiled code only")


# inlined into the caller's IR: a separately compiled function returning an array would
# hand it back under its own reference counting (an entry without NRT calling one with
# it, or the reverse, frees an array twice or never)
@overload(vector_arg, inline="always")
def _vector_arg(x, like):
    if isinstance(x, _Ref):
        return lambda x, like: float64_vector(x, like)
    return lambda x, like: (True, x)


@overload(contiguous_arg, prefer_literal=True, inline="always")
def _contiguous_arg(x, like, ndim):
    if isinstance(x, _Ref):
        return lambda x, like, ndim: float64_contiguous(x, like, ndim)
    return lambda x, like, ndim: (True, x)


@register_jitable(inline="always")      # not a jit.helper: it returns arrays (see above)
def state_args(q, v, u, fext, like):
    """(ok, q, v, u, fext): a state's arguments through kernels.fastargs (``like``: a
    float64 array the caller made)."""
    ok_q, q = vector_arg(q, like)
    ok_v, v = vector_arg(v, like)
    ok_u, u = vector_arg(u, like)
    ok_f, fext = contiguous_arg(fext, like, 2)
    return ok_q and ok_v and ok_u and ok_f, q, v, u, fext
