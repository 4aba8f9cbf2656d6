"""Numba lowering for kernels and helpers: array elements and row views built in a few
LLVM instructions, straight from the array's value.

Numba lowers ``x[i]``, ``ws[i, k]`` and ``ws[i, a:b]`` through its general indexing
(steps, newaxis, ellipsis, fancy indices): it spills the array struct to the stack, asks
the registry for ``static_getitem`` / ``static_setitem`` and ``__array__`` (misses that
reload the registries), clamps slices with branches, and builds the result from the
spilled copy. Indexing is most of what a kernel does, so that was a third of lowering,
the largest part of a cold start. :class:`ElementLower` takes the common cases of an
``Array`` of C or any layout, with bounds checking off:

- a scalar: one integer per dimension (read or write);
- a view: leading integers, then at most one step-less slice (``a:b``), taken as a
  value (assigning to a slice, ``x[a:b] = y``, stays with Numba);

and builds the same pointer, shape and strides (negative indices wrap, slices clamp,
as in Numba and Python) from the struct's fields by ``extract_value``; anything else
goes to Numba. After LLVM the code runs at the same speed (README, "Compilation and
the cache"). Views are taken only without NRT (kernels): Numba would count a reference.

Built on Numba's lowering class hook (``BaseNativeLowering.lowering_class``) and on the
internal ``Lower`` methods it overrides: :data:`AVAILABLE` is False where they differ.
"""

try:
    import numba.core.lowering as _nl
    from llvmlite import ir as llir
    from numba.core import cgutils, ir, types
    from numba.core.compiler_machinery import register_pass
    from numba.core.typed_passes import NativeLowering
    from numba.np.arrayobj import load_item, store_item
    AVAILABLE = all(hasattr(_nl.Lower, m) for m in (
        "lower_getitem", "lower_setitem", "lower_expr", "lower_inst", "loadvar",
        "typeof", "notify_loc"))
except ImportError:      # pragma: no cover (another Numba)
    AVAILABLE = False

SCALAR, VIEW = "scalar", "view"


def _kind(context, aryty, kinds, resty):
    """SCALAR or VIEW when ``aryty[index]`` (index types ``kinds``, result ``resty``) is
    lowered here, else None."""
    if type(aryty) is not types.Array or aryty.layout not in "CA" \
            or context.enable_boundscheck or not kinds:
        return None
    ints = kinds[:-1] if kinds[-1] == types.slice2_type else kinds
    if not all(isinstance(t, types.Integer) for t in ints):
        return None
    if len(kinds) == aryty.ndim and len(ints) == aryty.ndim and resty == aryty.dtype:
        return SCALAR
    if len(kinds) <= aryty.ndim and not context.enable_nrt and type(resty) is types.Array \
            and resty.dtype == aryty.dtype and resty.ndim == aryty.ndim - len(ints):
        return VIEW
    return None


def _index_types(idxty):
    return tuple(idxty.types) if isinstance(idxty, types.BaseTuple) else (idxty,)


def _constant_index(index):
    """A static_getitem / static_setitem's Python index as (index types, values) when it
    is integers and at most a trailing step-less slice, else None."""
    idx = index if isinstance(index, tuple) else (index,)
    kinds = []
    for k, x in enumerate(idx):
        if type(x) is int:
            kinds.append(types.intp)
        elif type(x) is slice and x.step is None and k == len(idx) - 1 \
                and all(e is None or type(e) is int for e in (x.start, x.stop)):
            kinds.append(types.slice2_type)
        else:
            return None
    return tuple(kinds), idx


if AVAILABLE:
    class ElementLower(_nl.Lower):
        """Numba's Lower, with array elements and row views built in place."""

        def _wrap(self, idx, size):
            """Python's negative index: idx + size where idx < 0."""
            b = self.builder
            return b.select(b.icmp_signed("<", idx, idx.type(0)), b.add(idx, size), idx)

        def _clamp(self, bound, size):
            """A slice bound for step 1, as Python (and Numba's fix_slice): wrapped,
            then clamped to [0, size]."""
            b = self.builder
            bound = self._wrap(bound, size)
            zero = bound.type(0)
            bound = b.select(b.icmp_signed("<", bound, zero), zero, bound)
            return b.select(b.icmp_signed(">=", bound, size), size, bound)

        def _indices(self, aryty, ary, kinds, values):
            """(per dimension: intp index or (start, length) for the slice, shapes)
            from ``values``: Python ints / slices, or LLVM values of types ``kinds``."""
            b, ctx = self.builder, self.context
            intp = ctx.get_value_type(types.intp)
            shape_at = ctx.data_model_manager[aryty].get_field_position("shape")
            shapes = [b.extract_value(ary, [shape_at, k]) for k in range(aryty.ndim)]
            out = []
            for k, (kind, x) in enumerate(zip(kinds, values)):
                if kind == types.slice2_type:
                    if type(x) is slice:
                        start = llir.Constant(intp, 0 if x.start is None else x.start)
                        stop = shapes[k] if x.stop is None else llir.Constant(intp, x.stop)
                    else:
                        sdm = ctx.data_model_manager[kind]
                        start = b.extract_value(x, sdm.get_field_position("start"))
                        stop = b.extract_value(x, sdm.get_field_position("stop"))
                    start = self._clamp(start, shapes[k])
                    stop = self._clamp(stop, shapes[k])
                    n = b.sub(stop, start)
                    out.append((start, b.select(b.icmp_signed("<", n, n.type(0)),
                                                n.type(0), n)))
                elif type(x) is int:
                    c = llir.Constant(intp, x)
                    out.append(c if x >= 0 else b.add(c, shapes[k]))
                elif not kind.signed:        # as numba's fix_integer_index
                    out.append(ctx.cast(b, x, kind, types.uintp))
                else:
                    out.append(self._wrap(ctx.cast(b, x, kind, types.intp), shapes[k]))
            return out, shapes

        def _pointer(self, aryty, ary, inds, shapes):
            """Pointer to the first element ``inds`` (intp each; a slice's start in
            place of its (start, length)) selects; trailing dimensions at 0."""
            b, ctx = self.builder, self.context
            dm = ctx.data_model_manager[aryty]
            data = b.extract_value(ary, dm.get_field_position("data"))
            if aryty.layout == "C":              # as numba: elements, by the shape
                loc = inds[0]
                for k in range(1, aryty.ndim):
                    loc = b.mul(loc, shapes[k])
                    if k < len(inds):
                        loc = b.add(loc, inds[k])
                return b.gep(data, [loc])
            strides_at = dm.get_field_position("strides")
            offset = None
            for k, i in enumerate(inds):
                term = b.mul(b.extract_value(ary, [strides_at, k]), i)
                offset = term if offset is None else b.add(offset, term)
            return cgutils.pointer_add(b, data, offset)

        def _get(self, aryty, ary, kinds, values, resty):
            """ary[values] (scalar of aryty.dtype, or a view of type resty)."""
            b, ctx = self.builder, self.context
            inds, shapes = self._indices(aryty, ary, kinds, values)
            starts = [x[0] if isinstance(x, tuple) else x for x in inds]
            ptr = self._pointer(aryty, ary, starts, shapes)
            if resty == aryty.dtype:
                return load_item(ctx, b, aryty, ptr)
            src, dst = ctx.data_model_manager[aryty], ctx.data_model_manager[resty]
            strides_at = src.get_field_position("strides")
            shape = ([inds[-1][1]] if isinstance(inds[-1], tuple) else []) \
                + shapes[len(inds):]
            first = aryty.ndim - len(shape)
            strides = [b.extract_value(ary, [strides_at, k])
                       for k in range(first, aryty.ndim)]
            nitems = llir.Constant(shapes[0].type, 1)
            for s in shape:
                nitems = b.mul(nitems, s)
            view = llir.Constant(ctx.get_value_type(resty), llir.Undefined)
            fields = dict(meminfo=b.extract_value(ary, src.get_field_position("meminfo")),
                          parent=b.extract_value(ary, src.get_field_position("parent")),
                          itemsize=b.extract_value(ary, src.get_field_position("itemsize")),
                          nitems=nitems, data=ptr,
                          shape=cgutils.pack_array(b, shape),
                          strides=cgutils.pack_array(b, strides))
            for name, value in fields.items():
                view = b.insert_value(view, value, dst.get_field_position(name))
            return view

        def _values(self, idxty, index):
            """The LLVM value of an index of type idxty, one per dimension."""
            if isinstance(idxty, types.BaseTuple):
                return [self.builder.extract_value(index, k) for k in range(len(idxty))]
            return [index]

        def lower_getitem(self, resty, expr, value, index, signature):
            aryty, idxty = signature.args
            kinds = _index_types(idxty)
            if _kind(self.context, aryty, kinds, signature.return_type) is None \
                    or self.typeof(value.name) != aryty:
                return super().lower_getitem(resty, expr, value, index, signature)
            idx = self.context.cast(self.builder, self.loadvar(index.name),
                                    self.typeof(index.name), idxty)
            res = self._get(aryty, self.loadvar(value.name), kinds,
                            self._values(idxty, idx), signature.return_type)
            return self.context.cast(self.builder, res, signature.return_type, resty)

        def lower_expr(self, resty, expr):
            if expr.op == "static_getitem":
                const = _constant_index(expr.index)
                aryty = self.typeof(expr.value.name)
                if const is not None and _kind(self.context, aryty, const[0], resty):
                    return self._get(aryty, self.loadvar(expr.value.name), const[0],
                                     const[1], resty)
            return super().lower_expr(resty, expr)

        def _set(self, aryty, ary, kinds, values, value, valty):
            b, ctx = self.builder, self.context
            inds, shapes = self._indices(aryty, ary, kinds, values)
            ptr = self._pointer(aryty, ary, inds, shapes)
            store_item(ctx, b, aryty, ctx.cast(b, value, valty, aryty.dtype), ptr)

        def lower_inst(self, inst):
            if isinstance(inst, ir.StaticSetItem):
                const = _constant_index(inst.index)
                aryty = self.typeof(inst.target.name)
                valty = self.typeof(inst.value.name)
                if const is not None and not isinstance(valty, types.Buffer) \
                        and _kind(self.context, aryty, const[0], aryty.dtype) == SCALAR:
                    self.debuginfo.mark_location(self.builder, self.loc.line)
                    self.notify_loc(self.loc)
                    self._set(aryty, self.loadvar(inst.target.name), const[0], const[1],
                              self.loadvar(inst.value.name), valty)
                    return
            super().lower_inst(inst)

        def lower_setitem(self, target_var, index_var, value_var, signature):
            aryty, idxty, valty = signature.args
            kinds = _index_types(idxty)
            if isinstance(valty, types.Buffer) or self.typeof(target_var.name) != aryty \
                    or _kind(self.context, aryty, kinds, aryty.dtype) != SCALAR:
                return super().lower_setitem(target_var, index_var, value_var, signature)
            b, ctx = self.builder, self.context
            idx = ctx.cast(b, self.loadvar(index_var.name),
                           self.typeof(index_var.name), idxty)
            val = ctx.cast(b, self.loadvar(value_var.name),
                           self.typeof(value_var.name), valty)
            self._set(aryty, self.loadvar(target_var.name), kinds,
                      self._values(idxty, idx), val, valty)

    @register_pass(mutates_CFG=True, analysis_only=False)
    class ElementLowering(NativeLowering):
        """Numba's native lowering pass with :class:`ElementLower`."""
        _name = "rbdiff_element_lowering"

        @property
        def lowering_class(self):
            return ElementLower
