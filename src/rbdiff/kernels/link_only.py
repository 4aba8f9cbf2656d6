"""Numba compiler pipeline for kernels and helpers: LLVM IR for linking, no machine code.

Numba finalises every compiled function on its own: it links in the LLVM modules of all
the functions it calls, runs the module optimisation pipeline (O3, with inlining) over
the result and generates machine code. A kernel, though, is only ever linked into its
callers, and each caller does all of that again over its whole call tree: code four
calls deep was optimised four times and turned into machine code five times, none of
which but the entry point's was ever run. With :class:`LinkOnlyCompiler` a kernel's
library keeps its function-level optimised IR; the entry point links the whole tree and
optimises and generates it once (a third less cold-start time for the derivatives).

Built on Numba's documented custom-pipeline hook (``pipeline_class``) and on its code
library's finalisation steps, which are internal: :data:`AVAILABLE` is False where they
are missing, and kernels then compile the ordinary way.
"""

try:
    from numba.core.codegen import JITCodeLibrary
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.compiler_machinery import FunctionPass, register_pass
    from numba.core.typed_passes import (NativeLowering, NopythonRewrites,
                                         NopythonTypeInference)
    from numba.core.untyped_passes import InlineClosureLikes

    from . import element_lowering
    AVAILABLE = all(hasattr(JITCodeLibrary, m) for m in (
        "_optimize_final_module", "_finalize_final_module", "_finalize_dynamic_globals",
        "_verify_declare_only_symbols", "get_pointer_to_function"))
except ImportError:      # pragma: no cover (another Numba)
    AVAILABLE = False


if AVAILABLE:
    class _EnvlessCodegen:
        """The library's codegen, less ``set_env``: Numba stores the function's
        environment into the machine code it has just generated, and there is none."""

        def __init__(self, codegen):
            self._codegen = codegen

        def set_env(self, env_name, env):
            pass

        def __getattr__(self, name):
            return getattr(self._codegen, name)

    class LinkOnlyLibrary(JITCodeLibrary):
        """A code library finalised without module optimisation or machine code: callers
        link its IR (and that of the libraries it links) and optimise it with theirs."""

        def _optimize_final_module(self):
            pass

        def _finalize_final_module(self):
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            self._finalized = True

        def get_pointer_to_function(self, name):
            self._ensure_finalized()
            return 0             # no machine code: compiled callers only (jit.py)

        @property
        def codegen(self):
            return _EnvlessCodegen(self._codegen)

    @register_pass(mutates_CFG=False, analysis_only=False)
    class UseLinkOnlyLibrary(FunctionPass):
        """Lower into a :class:`LinkOnlyLibrary` (placed before lowering)."""
        _name = "rbdiff_use_link_only_library"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            if state.library is None:
                state.library = LinkOnlyLibrary(state.targetctx.codegen(),
                                                state.func_id.func_qualname)
            return True

    # Passes with nothing to do in a kernel: kernels define no closures, and cannot
    # allocate (no NRT), so have no array expressions to fuse; each pass still walks
    # the IR and reruns Numba's use-def analysis (5 % of a cold start).
    _NOT_FOR_KERNELS = (InlineClosureLikes, NopythonRewrites)

    class LinkOnlyCompiler(CompilerBase):
        """Numba's nopython pipeline, lowering into a :class:`LinkOnlyLibrary`, array
        elements by element_lowering.py where it applies, less _NOT_FOR_KERNELS."""

        def define_pipelines(self):
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
            pm.add_pass_after(UseLinkOnlyLibrary, NopythonTypeInference)
            lower = element_lowering.ElementLowering if element_lowering.AVAILABLE \
                else NativeLowering
            pm.passes[:] = [(lower if p is NativeLowering else p, d) for p, d in pm.passes
                            if p not in _NOT_FOR_KERNELS]
            pm.finalize()
            return [pm]
else:                    # pragma: no cover
    LinkOnlyCompiler = None
