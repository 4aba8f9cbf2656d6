"""Numba lowering for kernels and helpers: an array element read or written in a few
LLVM instructions, straight from the array's value.

Numba lowers ``x[i]`` and ``ws[i, k]`` through its general indexing (slices, newaxis,
ellipsis, fancy indices): it spills the array struct to the stack, asks the registry for
``static_getitem`` and ``__array__`` (misses that reload the registries), and builds the
pointer from the spilled copy. Array elements are most of what a kernel does, so that
was a third of lowering, the largest part of a cold start. :class:`ElementLower` takes
the scalar case (an ``Array`` of C or any layout, one integer per dimension, bounds
checking off) and builds the same pointer (negative indices wrap, as in Numba) from the
struct's fields by ``extract_value``; anything else goes to Numba. LLVM optimises both
to the same code (see README, "Compilation and the cache").

Built on Numba's lowering class hook (``BaseNativeLowering.lowering_class``) and on the
internal ``Lower`` methods it overrides: :data:`AVAILABLE` is False where they differ.
"""

try:
    import numba.core.lowering as _nl
    from llvmlite import ir as llir
    from numba.core import cgutils, types
    from numba.core.typed_passes import NativeLowering
    from numba.np.arrayobj import load_item, store_item
    from numba.core.compiler_machinery import register_pass
    AVAILABLE = all(hasattr(_nl.Lower, m) for m in (
        "lower_getitem", "lower_setitem", "lower_expr", "loadvar", "typeof"))
except ImportError:      # pragma: no cover (another Numba)
    AVAILABLE = False


def _scalar_access(context, aryty, idxty):
    """The index types (one integer per dimension) when ``aryty[idx]`` is a scalar
    access this module lowers, else None."""
    if type(aryty) is not types.Array or aryty.layout not in "CA" \
            or context.enable_boundscheck:
        return None
    kinds = idxty.types if isinstance(idxty, types.BaseTuple) else (idxty,)
    if len(kinds) != aryty.ndim or not all(isinstance(t, types.Integer) for t in kinds):
        return None
    return kinds


if AVAILABLE:
    class ElementLower(_nl.Lower):
        """Numba's Lower, with scalar array element access built in place."""

        def _element_pointer(self, aryty, ary, kinds, index, const=None):
            """Pointer to ary[index]: ``index`` an LLVM integer (one dimension) or
            tuple of them, or ``const`` a Python int (static_getitem)."""
            b, ctx = self.builder, self.context
            dm = ctx.data_model_manager[aryty]
            data = b.extract_value(ary, dm.get_field_position("data"))
            shape_at = dm.get_field_position("shape")
            intp = ctx.get_value_type(types.intp)
            inds = []
            for k, kind in enumerate(kinds):
                if const is not None:         # a literal index: wrap it here
                    if const >= 0:
                        inds.append(llir.Constant(intp, const))
                        continue
                    idx = llir.Constant(intp, const)
                else:
                    idx = index if aryty.ndim == 1 and not isinstance(
                        index.type, (llir.ArrayType, llir.LiteralStructType)) \
                        else b.extract_value(index, k)
                    if not kind.signed:       # as numba's fix_integer_index
                        inds.append(ctx.cast(b, idx, kind, types.uintp))
                        continue
                    idx = ctx.cast(b, idx, kind, types.intp)
                size = b.extract_value(ary, [shape_at, k])
                inds.append(b.select(b.icmp_signed("<", idx, idx.type(0)),
                                     b.add(idx, size), idx))
            if aryty.layout == "C":
                loc = inds[0]
                for k in range(1, aryty.ndim):
                    loc = b.add(b.mul(loc, b.extract_value(ary, [shape_at, k])), inds[k])
                return b.gep(data, [loc])
            strides_at = dm.get_field_position("strides")
            offset = b.mul(b.extract_value(ary, [strides_at, 0]), inds[0])
            for k in range(1, aryty.ndim):
                offset = b.add(offset, b.mul(b.extract_value(ary, [strides_at, k]),
                                             inds[k]))
            return cgutils.pointer_add(b, data, offset)

        def lower_getitem(self, resty, expr, value, index, signature):
            aryty, idxty = signature.args
            kinds = _scalar_access(self.context, aryty, idxty)
            if kinds is None or signature.return_type != aryty.dtype \
                    or self.typeof(value.name) != aryty:
                return super().lower_getitem(resty, expr, value, index, signature)
            idx = self.context.cast(self.builder, self.loadvar(index.name),
                                    self.typeof(index.name), idxty)
            ptr = self._element_pointer(aryty, self.loadvar(value.name), kinds, idx)
            res = load_item(self.context, self.builder, aryty, ptr)
            return self.context.cast(self.builder, res, aryty.dtype, resty)

        def lower_expr(self, resty, expr):
            if expr.op == "static_getitem" and isinstance(expr.index, int) \
                    and not isinstance(expr.index, bool):
                aryty = self.typeof(expr.value.name)
                kinds = _scalar_access(self.context, aryty, types.intp)
                if kinds is not None:
                    ptr = self._element_pointer(aryty, self.loadvar(expr.value.name),
                                                kinds, None, const=expr.index)
                    res = load_item(self.context, self.builder, aryty, ptr)
                    return self.context.cast(self.builder, res, aryty.dtype, resty)
            return super().lower_expr(resty, expr)

        def lower_setitem(self, target_var, index_var, value_var, signature):
            aryty, idxty, valty = signature.args
            kinds = _scalar_access(self.context, aryty, idxty)
            if kinds is None or isinstance(valty, types.Buffer) \
                    or self.typeof(target_var.name) != aryty:
                return super().lower_setitem(target_var, index_var, value_var, signature)
            b, ctx = self.builder, self.context
            idx = ctx.cast(b, self.loadvar(index_var.name),
                           self.typeof(index_var.name), idxty)
            val = ctx.cast(b, self.loadvar(value_var.name),
                           self.typeof(value_var.name), valty)
            ptr = self._element_pointer(aryty, self.loadvar(target_var.name), kinds, idx)
            store_item(ctx, b, aryty, ctx.cast(b, val, valty, aryty.dtype), ptr)

    @register_pass(mutates_CFG=True, analysis_only=False)
    class ElementLowering(NativeLowering):
        """Numba's native lowering pass with :class:`ElementLower`."""
        _name = "rbdiff_element_lowering"

        @property
        def lowering_class(self):
            return ElementLower
