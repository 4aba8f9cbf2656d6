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
from numba.core.extending import (NativeValue, box, intrinsic, models, overload,
                                    register_jitable, register_model, unbox)

# byte offsets in a PyArrayObject (numpy/ndarraytypes.h, PyArrayObject_fields, after the
# PyObject header: refcount, type); OFF_ITEMS: a tuple's first item (after the
# PyObject_VAR_HEAD: refcount, type, size)
OFF_TYPE = 8
OFF_ITEMS = 24
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


class Shape(types.Opaque):
    """An output's shape, a tuple of ``nd`` Python ints the api layer keeps (a model's
    ``_sJ``, ...), as its borrowed pointer: the entry reads the ints when it makes the
    output (output_arg). Unboxed as a Numba UniTuple, a 3-tuple cost ~15 ns a call."""

    def __init__(self, nd):
        self.nd = nd
        super().__init__(name=f"rbdiff.Shape{nd}")


register_model(Shape)(models.OpaqueModel)
unbox(Shape)(_unbox_ref)        # a borrowed pointer, as REF's


_SHAPE = (3, 1234567)


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
                and ctypes.c_int64.from_address(at(OFF_STRIDES)).value == -8
                and ptr.from_address(id(_SHAPE) + OFF_ITEMS + 8).value == id(_SHAPE[1]))
    except Exception:       # noqa: BLE001 - any surprise means: check in Python
        return False


def _numpy_symbols():
    """Register, for compiled code, NumPy's PyArray_Empty and the two objects a fast
    argument is compared with (LLVM resolves them by name when an entry is linked, cached
    or not: their addresses change from process to process). False where the C API
    table cannot be read."""
    try:
        from llvmlite import binding
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        core = getattr(np, "_core", None) or np.core
        table = get(core.multiarray._ARRAY_API, None)
        # PyArray_Type is entry 2 of the table, PyArray_Empty entry 184 (__multiarray_api.h)
        if ctypes.c_void_p.from_address(table + 2 * 8).value != id(np.ndarray):
            return False
        binding.add_symbol("rbdiff_PyArray_Empty",
                           ctypes.c_void_p.from_address(table + 184 * 8).value)
        binding.add_symbol("rbdiff_ndarray_type", id(np.ndarray))
        binding.add_symbol("rbdiff_float64_descr", id(_F64))
        return np.empty(1).dtype is _F64
    except Exception:       # noqa: BLE001 - any surprise means: check in Python
        return False


_F64 = np.dtype(np.float64)
AVAILABLE = _layout_matches() and _numpy_symbols()


_I64, _I32, _VP = ir.IntType(64), ir.IntType(32), cgutils.voidptr_t


def _field(builder, base, off, ty):
    """The ``ty`` at byte ``off`` of the object at ``base``."""
    p = builder.gep(builder.bitcast(base, cgutils.int8_t.as_pointer()),
                    [ir.Constant(_I64, off)])
    return builder.load(builder.bitcast(p, ty.as_pointer()))


def _symbol(builder, name):
    """The address of the object registered as ``name`` (_numpy_symbols, or CPython's)."""
    mod = builder.module
    g = mod.globals.get(name) or cgutils.add_global_variable(mod, cgutils.int8_t, name)
    g.linkage = "external"
    return builder.bitcast(g, _VP)


def _capi(builder, name, ret, args):
    """A call of the C function ``name`` (CPython's exports, or _numpy_symbols')."""
    fn = cgutils.get_or_insert_function(builder.module,
                                        ir.FunctionType(ret, [a.type for a in args]), name)
    return builder.call(fn, args)


def _array_codegen(nd, contiguous):
    """The codegen of float64_vector (nd 1, any strides) and float64_contiguous (C
    layout): (ok, array) from a REF, an exact ndarray of NumPy's float64 descriptor the
    test (``like``: an array of that type and descriptor, or None: NumPy's own)."""
    arr_t = types.Array(types.float64, nd, "C" if contiguous else "A")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import populate_array   # compile time only (~80 ms import)
        obj = args[0]
        i64, i32, vp = _I64, _I32, _VP

        def field(base, off, ty):
            return _field(builder, base, off, ty)

        if isinstance(sig.args[1], types.NoneType):
            want_type = _symbol(builder, "rbdiff_ndarray_type")
            want_descr = _symbol(builder, "rbdiff_float64_descr")
        else:
            like_obj = context.make_array(sig.args[1])(context, builder, args[1]).parent
            want_type = field(like_obj, OFF_TYPE, vp)
            want_descr = field(like_obj, OFF_DESCR, vp)
        arr = context.make_array(arr_t)(context, builder)
        itemsize = ir.Constant(i64, 8)
        zeros = [ir.Constant(i64, 0)] * nd
        populate_array(arr, data=cgutils.get_null_value(arr.data.type), shape=zeros,
                       strides=zeros, itemsize=itemsize, meminfo=None)
        ok = cgutils.alloca_once_value(builder, cgutils.false_bit)
        same_type = builder.icmp_unsigned("==", field(obj, OFF_TYPE, vp), want_type)
        with builder.if_then(same_type, likely=True):         # an exact ndarray
            dims_ok = builder.icmp_signed("==", field(obj, OFF_ND, i32), ir.Constant(i32, nd))
            same_descr = builder.icmp_unsigned("==", field(obj, OFF_DESCR, vp), want_descr)
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
    if not (isinstance(ref, _Ref) and isinstance(like, (types.Array, types.NoneType))):
        return None
    arr_t, codegen = _array_codegen(1, False)
    return types.Tuple((types.boolean, arr_t))(ref, like), codegen


@intrinsic(prefer_literal=True)
def float64_contiguous(typingctx, ref, like, ndim):
    """(ok, array): ``ref`` (REF) as a C-contiguous float64 array of ``ndim`` (a literal)
    dimensions when it is an ndarray of ``like``'s type and dtype descriptor with that
    many dimensions and C-contiguous strides; else (False, an empty array). C layout, not
    'A': the kernels' inner loops over a strided fext cost iiwa14's rnea ~0.2 us."""
    if not (isinstance(ref, _Ref) and isinstance(like, (types.Array, types.NoneType))
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
    float64 array the caller made, or None)."""
    ok_q, q = vector_arg(q, like)
    ok_v, v = vector_arg(v, like)
    ok_u, u = vector_arg(u, like)
    ok_f, fext = contiguous_arg(fext, like, 2)
    return ok_q and ok_v and ok_u and ok_f, q, v, u, fext


# ---- outputs made in compiled code -------------------------------------------------------
# A fast path that makes its output with np.empty pays ~70 ns in Python, and ~40 ns more
# as the entry then runs beside a fresh allocation: on a frame Jacobian (a 164 ns kernel)
# that was a third of the call. An entry that holds the GIL (jit.fast_entry) makes it
# with NumPy's C API instead (~15 ns) and hands the array back as its result. The api
# layer asks for this by passing the output's shape (a tuple) where the array would go;
# the declared path still passes arrays, so one entry serves both routes.

@box(_Ref)
def _box_ref(typ, val, c):
    """A REF result is an owned reference (new_float64, none_ref, tuple_ref)."""
    return c.builder.bitcast(val, c.pyapi.pyobj)


@intrinsic
def new_float64(typingctx, shape):
    """(obj, array): a new C-contiguous float64 ndarray of ``shape`` (a tuple of ints,
    or a Shape) made by NumPy (obj, REF: its owned reference; array: a view of its
    data). Raises MemoryError when NumPy cannot make it. GIL held."""
    if not _is_shape(shape):
        return None
    nd = shape.nd if isinstance(shape, Shape) else shape.count
    arr_t = types.Array(types.float64, nd, "C")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import populate_array
        if isinstance(sig.args[0], Shape):      # the tuple's ints, read through the C API
            dims = [_capi(builder, "PyLong_AsSsize_t", _I64,
                          [_field(builder, args[0], OFF_ITEMS + 8 * k, _VP)])
                    for k in range(nd)]
        else:
            dims = [builder.sext(d, _I64) if d.type.width < 64 else d
                    for d in cgutils.unpack_tuple(builder, args[0], nd)]
        buf = cgutils.alloca_once(builder, _I64, size=max(nd, 1))
        for k, d in enumerate(dims):
            builder.store(d, builder.gep(buf, [ir.Constant(_I64, k)]))
        descr = _symbol(builder, "rbdiff_float64_descr")
        _capi(builder, "Py_IncRef", ir.VoidType(), [descr])    # PyArray_Empty steals it
        obj = _capi(builder, "rbdiff_PyArray_Empty", _VP,
                    [ir.Constant(_I32, nd), buf, descr, ir.Constant(_I32, 0)])
        with cgutils.if_unlikely(builder, cgutils.is_null(builder, obj)):
            context.call_conv.return_user_exc(builder, MemoryError,
                                              ("rbdiff: NumPy could not allocate an output",))
        strides, step = [None] * nd, ir.Constant(_I64, 8)
        for k in reversed(range(nd)):
            strides[k] = step
            step = builder.mul(step, dims[k])
        arr = context.make_array(arr_t)(context, builder)
        data = _field(builder, obj, OFF_DATA, _VP)
        populate_array(arr, data=builder.bitcast(data, arr.data.type), shape=dims,
                       strides=strides, itemsize=ir.Constant(_I64, 8), meminfo=None,
                       parent=obj)
        return context.make_tuple(builder, sig.return_type, [obj, arr._getvalue()])
    return types.Tuple((REF, arr_t))(shape), codegen


@intrinsic
def none_ref(typingctx):
    """A new reference to None, as a REF."""
    def codegen(context, builder, sig, args):
        none = _symbol(builder, "_Py_NoneStruct")
        _capi(builder, "Py_IncRef", ir.VoidType(), [none])
        return none
    return REF(), codegen


@intrinsic
def tuple_ref(typingctx, objs, cls):
    """A new tuple of ``objs`` (a tuple of owned REFs, None-typed where None); the tuple
    owns them (PyTuple_SetItem steals). ``cls``: None, or a tuple subclass (REF: a
    results named tuple the api layer passes), made as its own __new__ would, without
    running Python. A tuple may start a garbage collection, whose finalizers may call
    rbdiff on the same held scratch: entries make it after their kernel (made2, made3).
    Arrays are not collected objects: new_float64 starts none."""
    if not (isinstance(objs, types.BaseTuple)
            and all(isinstance(x, (_Ref, types.NoneType)) for x in objs.types)
            and isinstance(cls, (_Ref, types.NoneType, types.Omitted))):
        return None
    n = len(objs.types)

    def codegen(context, builder, sig, args):
        size = ir.Constant(_I64, n)
        if not isinstance(sig.args[1], _Ref):
            t = _capi(builder, "PyTuple_New", _VP, [size])
        else:   # a named tuple's tp_alloc, as tuple.__new__ of a subclass calls it
            t = _capi(builder, "PyType_GenericAlloc", _VP, [args[1], size])
        with cgutils.if_unlikely(builder, cgutils.is_null(builder, t)):
            context.call_conv.return_user_exc(builder, MemoryError,
                                              ("rbdiff: could not make a tuple",))
        for k, ty in enumerate(sig.args[0].types):
            if isinstance(ty, types.NoneType):
                val = _symbol(builder, "_Py_NoneStruct")
                _capi(builder, "Py_IncRef", ir.VoidType(), [val])
            else:
                val = builder.extract_value(args[0], k)
            _capi(builder, "PyTuple_SetItem", _I32, [t, ir.Constant(_I64, k), val])
        return t
    return REF(objs, cls), codegen


def output_arg(out):
    """(obj, array) in compiled code: ``out`` a shape tuple: a new float64 array
    (new_float64); an array (the declared path's output): (None, out); None: (None, None)."""
    raise NotImplementedError("compiled code only")


def missed(out):
    """An entry's result when it does not take its input (the api layer's general path
    then runs): None (a REF) where ``out`` is a shape tuple, else False."""
    raise NotImplementedError("compiled code only")


def made(obj):
    """An entry's result when done: ``obj`` (output_arg's object) where it made the
    output, else True."""
    raise NotImplementedError("compiled code only")


def made2(a, b, result):
    """made for two outputs: the tuple (a, b) of output_arg's objects (None where not
    wanted) where the entry made them, else True. ``result``: None (a plain tuple), or
    a REF to the named tuple class to make (the api layer's result type)."""
    raise NotImplementedError("compiled code only")


def made3(a, b, c, result):
    """made2 for three outputs."""
    raise NotImplementedError("compiled code only")


def _is_shape(t):
    return isinstance(t, Shape) or (isinstance(t, types.UniTuple)
                                    and isinstance(t.dtype, types.Integer))


@overload(output_arg, inline="always")
def _output_arg(out):
    if _is_shape(out):
        return lambda out: new_float64(out)
    return lambda out: (None, out)


@overload(missed, inline="always")
def _missed(out):
    if _is_shape(out):
        return lambda out: none_ref()
    return lambda out: False


@overload(made, inline="always")
def _made(obj):
    if isinstance(obj, _Ref):
        return lambda obj: obj
    return lambda obj: True


@overload(made2, inline="always")
def _made2(a, b, result):
    if isinstance(a, _Ref):
        return lambda a, b, result: tuple_ref((a, b), result)
    return lambda a, b, result: True


@overload(made3, inline="always")
def _made3(a, b, c, result):
    if isinstance(a, _Ref):
        return lambda a, b, c, result: tuple_ref((a, b, c), result)
    return lambda a, b, c, result: True


@intrinsic
def _decref(typingctx, obj):
    def codegen(context, builder, sig, args):
        _capi(builder, "Py_DecRef", ir.VoidType(), [args[0]])
        return context.get_dummy_value()
    return types.none(obj), codegen


def release(obj):
    """Drop output_arg's object (an entry that made its output but then does not take
    the call: the general path runs instead); nothing where it is None."""
    raise NotImplementedError("compiled code only")


@overload(release, inline="always")
def _release(obj):
    if isinstance(obj, _Ref):
        return lambda obj: _decref(obj)
    return lambda obj: None


# ---- a model's record, read by compiled fronts ----------------------------------------------
# A fast path in Python passes an entry the model's arrays, its held scratch and an output
# shape: five to eight attribute loads and subscripts and as many arguments (~110 ns of a
# ~450 ns frame Jacobian). A front (cpu/fronts.py) takes the model itself and reads them
# from its record (cpu/record.py: a tuple in a Model slot), through the intrinsics below.
# The symbols rbdiff_model_type (the Model class) and rbdiff_model_record_offset (the
# slot's byte offset, as an address) are registered by cpu/record.py.

@intrinsic
def model_record(typingctx, obj):
    """(ok, record): the record tuple (a REF) in ``obj``'s record slot when ``obj`` (a
    REF) is exactly an rbdiff Model (not a subclass) that has one; else (False, NULL)."""
    if not isinstance(obj, _Ref):
        return None

    def codegen(context, builder, sig, args):
        obj = args[0]
        is_model = builder.icmp_unsigned("==", _field(builder, obj, OFF_TYPE, _VP),
                                         _symbol(builder, "rbdiff_model_type"))
        rec = cgutils.alloca_once_value(builder, cgutils.get_null_value(_VP))
        with builder.if_then(is_model, likely=True):
            off = builder.ptrtoint(_symbol(builder, "rbdiff_model_record_offset"), _I64)
            at = builder.gep(builder.bitcast(obj, cgutils.int8_t.as_pointer()), [off])
            builder.store(builder.load(builder.bitcast(at, _VP.as_pointer())), rec)
        rec = builder.load(rec)
        ok = builder.not_(cgutils.is_null(builder, rec))
        return context.make_tuple(builder, sig.return_type, [ok, rec])
    return types.Tuple((types.boolean, REF))(obj), codegen


def _record_item(rec, k):
    """True when ``rec`` is a REF and ``k`` an int literal (a record item's index)."""
    return isinstance(rec, _Ref) and isinstance(k, types.IntegerLiteral)


def _item_codegen(k):
    """The codegen reading record item ``k`` (a borrowed pointer)."""
    at = OFF_ITEMS + 8 * k.literal_value

    def codegen(context, builder, sig, args):
        return _field(builder, args[0], at, _VP)
    return codegen


@intrinsic(prefer_literal=True)
def record_object(typingctx, rec, k):
    """Item ``k`` (a literal) of a record, a borrowed REF."""
    if not _record_item(rec, k):
        return None
    return REF(rec, k), _item_codegen(k)


@intrinsic(prefer_literal=True)
def record_shape(typingctx, rec, k, nd):
    """Item ``k`` of a record, an output's shape tuple of ``nd`` ints (both literals)."""
    if not (_record_item(rec, k) and isinstance(nd, types.IntegerLiteral)):
        return None
    return Shape(nd.literal_value)(rec, k, nd), _item_codegen(k)


_KINDS = {"f": types.float64, "i": types.int64}


def _trusted_array(context, builder, arr_t, obj):
    """The array struct of ndarray ``obj``, which its maker checked to be ``arr_t``."""
    from numba.np.arrayobj import populate_array
    nd = arr_t.ndim
    dims = _field(builder, obj, OFF_DIMS, _I64.as_pointer())
    strides = _field(builder, obj, OFF_STRIDES, _I64.as_pointer())
    arr = context.make_array(arr_t)(context, builder)
    populate_array(arr, data=builder.bitcast(_field(builder, obj, OFF_DATA, _VP),
                                             arr.data.type),
                   shape=[builder.load(builder.gep(dims, [ir.Constant(_I64, j)]))
                          for j in range(nd)],
                   strides=[builder.load(builder.gep(strides, [ir.Constant(_I64, j)]))
                            for j in range(nd)],
                   itemsize=ir.Constant(_I64, 8), meminfo=None, parent=obj)
    return arr._getvalue()


def _kind(code):
    """The array type a kind literal names: dtype "f" or "i", ndim, "r" read-only or "w"
    (e.g. "i2r": the type Numba gives a model's read-only int64 table)."""
    return types.Array(_KINDS[code[0]], int(code[1]), "C", readonly=code[2] == "r")


@intrinsic(prefer_literal=True)
def record_array(typingctx, rec, k, kind):
    """Item ``k`` of a record, a C-contiguous ndarray the record's maker checked, as the
    array type ``kind`` (a literal, see _kind) names. Trusted: no check."""
    if not (_record_item(rec, k) and isinstance(kind, types.StringLiteral)):
        return None
    arr_t = _kind(kind.literal_value)
    item = _item_codegen(k)

    def codegen(context, builder, sig, args):
        return _trusted_array(context, builder, arr_t, item(context, builder, sig, args))
    return arr_t(rec, k, kind), codegen


@intrinsic(prefer_literal=True)
def record_int(typingctx, rec, k):
    """Item ``k`` of a record, a Python int, as int64."""
    if not _record_item(rec, k):
        return None
    item = _item_codegen(k)

    def codegen(context, builder, sig, args):
        return _capi(builder, "PyLong_AsSsize_t", _I64, [item(context, builder, sig, args)])
    return types.int64(rec, k), codegen


@intrinsic(prefer_literal=True)
def held_array(typingctx, name, key, kind):
    """Item ``key`` of the list registered as the symbol ``name`` (a literal: one of
    cpu/scratch.py's HELD lists of workspaces, append-only, checked as they are made), as
    the array type ``kind`` names. Trusted: ``key`` is a model's scratch key."""
    if not (isinstance(name, types.StringLiteral) and isinstance(key, types.Integer)
            and isinstance(kind, types.StringLiteral)):
        return None
    arr_t = _kind(kind.literal_value)
    symbol = name.literal_value

    def codegen(context, builder, sig, args):
        obj = _capi(builder, "PyList_GetItem", _VP, [_symbol(builder, symbol), args[1]])
        return _trusted_array(context, builder, arr_t, obj)
    return arr_t(name, key, kind), codegen


@intrinsic
def dict_index(typingctx, d, key):
    """(ok, index): the int ``d[key]`` (d a REF to a dict of ints: a model's frame ids,
    the reference codes); (False, -1) where ``key`` is missing or unhashable (the error
    is cleared: the general path then raises it by name)."""
    if not (isinstance(d, _Ref) and isinstance(key, _Ref)):
        return None

    def codegen(context, builder, sig, args):
        val = _capi(builder, "PyDict_GetItemWithError", _VP, [args[0], args[1]])
        out = cgutils.alloca_once_value(builder, ir.Constant(_I64, -1))
        found = builder.not_(cgutils.is_null(builder, val))
        with builder.if_else(found, likely=True) as (then, otherwise):
            with then:
                builder.store(_capi(builder, "PyLong_AsSsize_t", _I64, [val]), out)
            with otherwise:
                _capi(builder, "PyErr_Clear", ir.VoidType(), [])
        return context.make_tuple(builder, sig.return_type, [found, builder.load(out)])
    return types.Tuple((types.boolean, types.int64))(d, key), codegen


# ---- the GIL, let go around a kernel ---------------------------------------------------
# An entry that makes its outputs holds the GIL (jit.fast_entry); one whose kernel runs
# for microseconds on the calling thread's own scratch (the contacts' held entries) lets
# it go around the kernel, as Numba's nogil wrapper does around a whole call, so threads
# still run in parallel. Between the two only code that cannot raise may run: a Numba
# raise returns at once, without taking the GIL back.

@intrinsic
def gil_release(typingctx):
    """PyEval_SaveThread(): the thread state (a REF) to hand to gil_take."""
    def codegen(context, builder, sig, args):
        return _capi(builder, "PyEval_SaveThread", _VP, [])
    return REF(), codegen


@intrinsic
def gil_take(typingctx, state):
    """PyEval_RestoreThread(state)."""
    if not isinstance(state, _Ref):
        return None

    def codegen(context, builder, sig, args):
        _capi(builder, "PyEval_RestoreThread", ir.VoidType(), [args[0]])
        return context.get_dummy_value()
    return types.none(state), codegen
