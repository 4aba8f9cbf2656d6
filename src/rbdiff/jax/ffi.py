"""rbdiff's compiled batch entries as XLA FFI handlers (Numba ``cfunc``s).

One handler per kernel, compiled on first use and cached on disk; calls.py registers
them with ``jax.ffi.register_ffi_target`` for the CPU and holds the vmap rule.
Operands: the model's packed arrays as 32-bit words (mi, mf, frame_parents, frame_mf:
one handler serves every model, and JAX without x64 cannot truncate them), [frame,
chunks, plan, mode], for the contact and impulse kernels a contact set's packed tables
(likewise as words: one handler serves every set), then the per-item inputs with their
batch axes; XLA allocates the results.
The handler reads XLA_FFI_CallFrame itself (xla/ffi/api/c_api.h, API 0.x):

- registration: XLA calls it with the metadata extension; it answers the API version it
  was written against (API_MAJOR.API_MINOR below) and no traits;
- execution: it checks the call frame's and every buffer's struct_size (older layouts
  are refused), XLA's API major version, the stage, buffer types and dtypes (f64, or f32
  computed in f64), then runs rbdiff.cpu.batch's entry on the flattened batch: the
  parallel one (only under the omp or tbb threading layers, which may be entered from
  several threads at once: calls._chunks) or the serial one on XLA's thread, decided
  per call by rbdiff.cpu.policy's rule on the (model, kernel)'s plan (plans.py,
  _choose / _record below).

Handlers keep no state (XLA may call them concurrently): every call allocates its own
scratch. An input the entry refuses (NaN, a singular inertia) cannot raise through C:
the outputs are then filled with NaN.
"""

import numpy as np
from numba import carray, types
from numba.core import errors
from numba.extending import intrinsic, overload

from ..kernels.jit import cached_njit
from ..kinematics import REFERENCE_CODES
from ..second_order import INNER_ROUTES, OUTER_ROUTES
from ..cpu import policy
from ..cpu.twin import twin
from . import plans as P
from .entries import SLOT, run

API_MAJOR, API_MINOR = 0, 3            # xla/ffi/api/c_api.h this handler follows
_FRAME_SIZE = 168                      # sizeof(XLA_FFI_CallFrame) up to attrs
_BUFFER_SIZE = 48                      # sizeof(XLA_FFI_Buffer)
_METADATA_EXT = 1                      # XLA_FFI_Extension_Metadata
_EXECUTE = 3                           # XLA_FFI_ExecutionStage_EXECUTE
_ARG_BUFFER = 1                        # XLA_FFI_ArgType_BUFFER / XLA_FFI_RetType_BUFFER
_F32, _F64, _S32, _U32 = 11, 12, 4, 8    # XLA_FFI_DataType
_LOCAL = REFERENCE_CODES["local"]
_LWA = REFERENCE_CODES["local_world_aligned"]
_AUTO_IN, _AUTO_OUT = INNER_ROUTES["auto"], OUTER_ROUTES["auto"]
N_MODEL = 5             # mi, mf, frame_parents, frame_mf, [frame, chunks, plan, mode]
N_OPTS = 4


@intrinsic
def _vp(typingctx, addr):
    """An int64 address as a void*."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.voidptr))
    return types.voidptr(types.int64), codegen


@intrinsic
def _addr(typingctx, ptr):
    """A void* as an int64 address."""
    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.int64))
    return types.int64(types.voidptr), codegen


def unliteral_args(dispatcher):
    """``dispatcher`` typed by its arguments' non-literal types: _words(f, 3) and
    _words(f, 21) share one compile instead of one a constant (a tenth of a second
    each, a second of a cold first handler)."""
    plain = type(dispatcher).get_call_template

    def get_call_template(args, kws):
        return plain(dispatcher, tuple(types.unliteral(a) for a in args), kws)
    dispatcher.get_call_template = get_call_template
    return dispatcher


@unliteral_args
@cached_njit
def _words(addr, n):
    return carray(_vp(addr), n, np.int64)


@unliteral_args
@cached_njit
def _ints(addr, n):
    return carray(_vp(addr), n, np.int32)


@cached_njit
def _dims(buf):
    b = _words(buf, 6)
    return _words(b[5], b[4]) if b[4] > 0 else np.empty(0, np.int64)


@cached_njit
def _batch(buf, item_rank):
    """Items in a buffer whose last ``item_rank`` axes are one item's."""
    d = _dims(buf)
    n = 1
    for k in range(d.size - item_rank):
        n *= d[k]
    return n


@cached_njit
def _size(buf):
    d = _dims(buf)
    n = 1
    for k in range(d.size):
        n *= d[k]
    return n


@cached_njit
def _in(buf, B):
    """A float input buffer as a (B, n) float64 array (f32 converted)."""
    n = _size(buf) // max(B, 1)
    if _ints(buf, 6)[4] == _F64:
        return carray(_vp(_words(buf, 6)[3]), (B, n), np.float64)
    return carray(_vp(_words(buf, 6)[3]), (B, n), np.float32).astype(np.float64)


@cached_njit
def _out_f64(buf, B):
    n = _size(buf) // max(B, 1)
    if _ints(buf, 6)[4] == _F64:
        return carray(_vp(_words(buf, 6)[3]), (B, n), np.float64)
    return np.empty((B, n), np.float64)


@cached_njit
def _store(buf, x):
    """Copy a float64 result into an f32 output buffer (an f64 one was written in place)."""
    if _ints(buf, 6)[4] == _F32:
        # an element loop over flat views: y[...] = x compiles NumPy's broadcast-shape
        # check and its formatted error (3 s of a cold first handler)
        n = x.size
        y = carray(_vp(_words(buf, 6)[3]), n, np.float32)
        src = carray(_vp(x.ctypes.data), n, np.float64)
        for i in range(n):
            y[i] = src[i]


@cached_njit
def _fill_nan(buf):
    if _ints(buf, 6)[4] == _F64:
        carray(_vp(_words(buf, 6)[3]), _size(buf), np.float64)[:] = np.nan
    elif _ints(buf, 6)[4] == _F32:
        carray(_vp(_words(buf, 6)[3]), _size(buf), np.float32)[:] = np.nan


@cached_njit
def _execute_frame(frame):
    """The call frame's first 21 words when XLA asks this handler to execute, in a
    layout it follows; else an empty array: the metadata query (answered here: the API
    version the handler was written against, no traits), an older call frame, another
    API major version or another stage."""
    f = _words(frame, 3)
    if f[1] != 0:                                   # extension chain: metadata query?
        ext = _words(f[1], 4)
        if _ints(f[1], 4)[2] == _METADATA_EXT:
            md = _ints(ext[3], 9)                   # XLA_FFI_Metadata
            md[6], md[7], md[8] = API_MAJOR, API_MINOR, 0
            return np.empty(0, np.int64)
    if f[0] < _FRAME_SIZE:
        return np.empty(0, np.int64)                # an older call frame: refuse
    f = _words(frame, 21)
    api = _ints(f[2], 10)
    if api[8] != API_MAJOR or _ints(frame, 10)[8] != _EXECUTE:
        return np.empty(0, np.int64)
    return f


@cached_njit
def _frame(frame, n_in, out_rank):
    """Read a call frame: (ok, rets, mi, mf, frame_parents, frame_mf, frame, chunks, q, v,
    u, o0..o3). ok is False for the metadata query (answered here) and for a refused call
    (its outputs NaN-filled here); then the arrays are empty."""
    e, e2, ei, rets0 = np.empty((0, 0)), np.empty((0, 0), np.int64), np.empty(0, np.int64), \
        np.empty(0, np.int64)
    nothing = (False, rets0, e2, e, ei, e, 0, np.zeros(N_OPTS, np.int32), e, e, e, e, e, e, e)
    f = _execute_frame(frame)
    if f.size == 0:
        return nothing
    nargs, nrets = f[7], f[12]
    atypes, args = _ints(f[8], nargs), _words(f[9], nargs)
    rtypes, rets = _ints(f[13], nrets), _words(f[14], nrets)
    ok = nargs == N_MODEL + n_in and nrets >= 1 and nrets <= 4
    for k in range(nrets):
        ok = ok and rtypes[k] == _ARG_BUFFER and _words(rets[k], 1)[0] >= _BUFFER_SIZE
    for k in range(nargs):
        ok = ok and atypes[k] == _ARG_BUFFER and _words(args[k], 1)[0] >= _BUFFER_SIZE
    if ok:                        # the model's 64-bit arrays come as 32-bit words (below)
        for k in (0, 2, 4):
            ok = ok and _ints(args[k], 6)[4] == _S32
        for k in range(N_MODEL, nargs):
            dt = _ints(args[k], 6)[4]
            ok = ok and (dt == _F64 or dt == _F32)
        ok = ok and _ints(args[1], 6)[4] == _U32 and _ints(args[3], 6)[4] == _U32
    if not ok:
        _fail(rets)
        return nothing
    B = _batch(rets[0], out_rank)
    d0, d1 = _dims(args[0]), _dims(args[1])
    mi = carray(_vp(_words(args[0], 6)[3]), (d0[0], d0[1] // 2), np.int64)
    mf = carray(_vp(_words(args[1], 6)[3]), (d1[0], d1[1] // 2), np.float64)
    d2, d3 = _dims(args[2]), _dims(args[3])
    fp = carray(_vp(_words(args[2], 6)[3]), (d2[0] // 2,), np.int64)
    fm = carray(_vp(_words(args[3], 6)[3]), (d3[0], d3[1] // 2), np.float64)
    opts = carray(_vp(_words(args[4], 6)[3]), (N_OPTS,), np.int32)  # frame, chunks, ...
    fr = np.int64(opts[0])
    q = _in(args[N_MODEL], B)
    v = _in(args[N_MODEL + 1], B) if n_in > 1 else e
    u = _in(args[N_MODEL + 2], B) if n_in > 2 else e
    o0 = _out_f64(rets[0], B)
    o1 = _out_f64(rets[1], B) if nrets > 1 else e
    o2 = _out_f64(rets[2], B) if nrets > 2 else e
    o3 = _out_f64(rets[3], B) if nrets > 3 else e
    return (True, rets, mi, mf, fp, fm, fr, opts, q, v, u, o0, o1, o2, o3)


@cached_njit
def _fail(rets):
    for k in range(rets.size):
        _fill_nan(rets[k])


@cached_njit
def _finish(rets, o0, o1, o2, o3):
    """Copy float64 results into f32 outputs (f64 ones were written in place)."""
    _store(rets[0], o0)
    if rets.size > 1:
        _store(rets[1], o1)
    if rets.size > 2:
        _store(rets[2], o2)
    if rets.size > 3:
        _store(rets[3], o3)


# ---- the kernels: (model arrays, frame, nch, q, v, u (B, n), outputs (B, item size)) ---
# nch > 0: the parallel entry on nch chunks (_choose decides; calls.py links it), else
# (or where it is not linked: a computation run without calls.py's tracing) serial.
# Each calls rbdiff.cpu.batch's entries by address (entries.run: the serial entry's slot
# names the pair) and returns True when they ran, False when one refused its input.

_RNEA = SLOT["rnea_batch"]
_ABA = SLOT["aba_batch"]
_CRBA = SLOT["crba_batch"]
_MINV = SLOT["minverse_batch"]
_NLE = SLOT["nonlinear_effects_batch"]
_GRAV = SLOT["gravity_batch"]
_RNEA_D = SLOT["rnea_derivatives_batch"]
_ABA_D = SLOT["aba_derivatives_batch"]
_RNEA_SO = SLOT["rnea_second_order_batch"]
_ABA_SO = SLOT["aba_second_order_batch"]
_FP = SLOT["frame_placement_batch"]
_FJ = SLOT["frame_jacobian_batch"]


@cached_njit
def _nv(mi):
    return mi[0, 2]


@cached_njit
def _fx(q):
    return np.empty((q.shape[0], 0, 6))


@cached_njit
def _m2(o, B, nv):
    """A flat output (B, nv^2) as (B, nv, nv)."""
    return o.reshape((B, nv, nv))


@cached_njit
def _m3(o, B, nv):
    return o.reshape((B, nv, nv, nv))


@cached_njit
def _rnea(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_RNEA, nch, (mi, mf, q, v, u, _fx(q), o0))


@cached_njit
def _aba(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_ABA, nch, (mi, mf, q, v, u, _fx(q), o0))


@cached_njit
def _crba(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    M = _m2(o0, q.shape[0], _nv(mi))
    return run(_CRBA, nch, (mi, mf, q, M))


@cached_njit
def _minverse(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    M = _m2(o0, q.shape[0], _nv(mi))
    return run(_MINV, nch, (mi, mf, q, M))


@cached_njit
def _nonlinear_effects(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_NLE, nch, (mi, mf, q, v, o0))


@cached_njit
def _gravity(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_GRAV, nch, (mi, mf, q, o0))


@cached_njit
def _rnea_d(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    B, nv = q.shape[0], _nv(mi)
    if not _rnea(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
        return False
    d1, d2, d3 = _m2(o1, B, nv), _m2(o2, B, nv), _m2(o3, B, nv)
    return run(_RNEA_D, nch, (mi, mf, q, v, u, _fx(q), d1, d2, d3))


@cached_njit
def _aba_d(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    B, nv = q.shape[0], _nv(mi)
    if not _aba(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
        return False
    d1, d2, d3 = _m2(o1, B, nv), _m2(o2, B, nv), _m2(o3, B, nv)
    return run(_ABA_D, nch, (mi, mf, q, v, u, _fx(q), d1, d2, d3))


@cached_njit
def _rnea_so(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    B, nv = q.shape[0], _nv(mi)
    t0, t1, t2, t3 = _m3(o0, B, nv), _m3(o1, B, nv), _m3(o2, B, nv), _m3(o3, B, nv)
    return run(_RNEA_SO, nch, (mi, mf, q, v, u, _fx(q), t0, t1, t2, t3))


@cached_njit
def _aba_so(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    B, nv = q.shape[0], _nv(mi)
    t0, t1, t2, t3 = _m3(o0, B, nv), _m3(o1, B, nv), _m3(o2, B, nv), _m3(o3, B, nv)
    return run(_ABA_SO, nch, (mi, mf, q, v, u, _fx(q), t0, t1, t2, t3, _AUTO_IN,
                              _AUTO_OUT))


@cached_njit
def _crba_d(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    B, nv = q.shape[0], _nv(mi)
    if not _crba(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
        return False
    z = np.zeros((B, nv))
    t = np.empty((3, B, nv, nv, nv))
    t0, t1, t2 = t[0], t[1], t[2]
    return run(_RNEA_SO, nch, (mi, mf, q, z, z, _fx(q), t0, t1, t2, _m3(o1, B, nv)))


@cached_njit
def _frame_placement(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    T = o0.reshape((q.shape[0], 4, 4))
    return run(_FP, nch, (mi, mf, fp, fm, q, T, fr))


@cached_njit
def _frame_placement_d(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    if not _frame_placement(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
        return False
    J = o1.reshape((q.shape[0], 6, _nv(mi)))
    return run(_FJ, nch, (mi, mf, fp, fm, q, J, fr, _LOCAL))


# ---- contact kinematics (issue 24). ``fr`` packs the frame options: frame index in its
# low 24 bits, the reference code in bits 24-27, classical in bit 28 (pack_frame_options;
# frame_placement's fr is the bare frame index, the same word with the others zero).
# The *_partials kernels give a value and its true first partials, q in the tangent
# space (rbdiff.motion_partials, whose NumPy formulas these follow).
_FV, _FA = SLOT["frame_velocity_batch"], SLOT["frame_acceleration_batch"]
_FV_D = SLOT["frame_velocity_derivatives_batch"]
_FA_D = SLOT["frame_acceleration_derivatives_batch"]
_COM, _COM_J = SLOT["center_of_mass_batch"], SLOT["com_jacobian_batch"]
_HG, _CD = SLOT["centroidal_momentum_batch"], SLOT["centroidal_derivatives_batch"]
_KE, _PE = SLOT["kinetic_energy_batch"], SLOT["potential_energy_batch"]
_FRAME_BITS, _REF_SHIFT, _CLASSICAL_SHIFT = 0xFFFFFF, 24, 28


def pack_frame_options(frame, reference=0, classical=0):
    """The kernels' ``fr`` word of (frame index, reference code, classical)."""
    return int(frame) | (int(reference) << _REF_SHIFT) | (int(classical) << _CLASSICAL_SHIFT)


@cached_njit
def _unpack(fr):
    return fr & _FRAME_BITS, (fr >> _REF_SHIFT) & 0xF, (fr >> _CLASSICAL_SHIFT) & 1


@cached_njit
def _t6(o, B, nv):
    """A flat output (B, 6 nv) as (B, 6, nv)."""
    return o.reshape((B, 6, nv))


@cached_njit
def _add_w_cross(w, D, J, nv):
    """D[b, :3, k] += w[b, 3:] x J[b, :3, k] for every item and column (flat (B, 6 nv)
    D and J): a "local_world_aligned" spatial derivative made the true one (the origin
    moving: J's linear rows are dp/dq there)."""
    for b in range(w.shape[0]):
        wx, wy, wz = w[b, 3], w[b, 4], w[b, 5]
        for k in range(nv):
            jx, jy, jz = J[b, k], J[b, nv + k], J[b, 2 * nv + k]
            D[b, k] += wy * jz - wz * jy
            D[b, nv + k] += wz * jx - wx * jz
            D[b, 2 * nv + k] += wx * jy - wy * jx


@cached_njit
def _frame_velocity(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    f, ref, _c = _unpack(fr)
    return run(_FV, nch, (mi, mf, fp, fm, q, v, o0, f, ref))


@cached_njit
def _frame_velocity_p(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """(value, dv_dq, dv_dv), true in every reference."""
    f, ref, _c = _unpack(fr)
    B, nv = q.shape[0], _nv(mi)
    if not run(_FV, nch, (mi, mf, fp, fm, q, v, o0, f, ref)):
        return False
    if not run(_FV_D, nch, (mi, mf, fp, fm, q, v, _t6(o1, B, nv), _t6(o2, B, nv), f, ref)):
        return False
    if ref == _LWA:
        _add_w_cross(o0, o1, o2, nv)
    return True


@cached_njit
def _frame_acceleration(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    f, ref, c = _unpack(fr)
    return run(_FA, nch, (mi, mf, fp, fm, q, v, u, o0, f, ref, c))


@cached_njit
def _frame_acceleration_p(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """(value, da_dq, da_dv, da_da), true in every reference."""
    f, ref, c = _unpack(fr)
    B, nv = q.shape[0], _nv(mi)
    if not run(_FA, nch, (mi, mf, fp, fm, q, v, u, o0, f, ref, c)):
        return False
    dv_dq = np.empty((B, 6, nv))
    if not run(_FA_D, nch, (mi, mf, fp, fm, q, v, u, dv_dq, _t6(o1, B, nv), _t6(o2, B, nv),
                            _t6(o3, B, nv), f, ref, c)):
        return False
    if ref == _LWA and c == 0:
        _add_w_cross(o0, o1, o3, nv)
    return True


@cached_njit
def _center_of_mass(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_COM, nch, (mi, mf, q, None, None, o0, None, None))


@cached_njit
def _center_of_mass_p(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """(com, com_jacobian)."""
    if not run(_COM, nch, (mi, mf, q, None, None, o0, None, None)):
        return False
    return run(_COM_J, nch, (mi, mf, q, o1.reshape((q.shape[0], 3, _nv(mi)))))


@cached_njit
def _centroidal_momentum(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_HG, nch, (mi, mf, q, v, None, o0, None))


@cached_njit
def _centroidal_momentum_p(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """(h, dh_dq, Ag): centroidal_dynamics_derivatives at a = 0 (dhdot_da = Ag)."""
    B, nv = q.shape[0], _nv(mi)
    if not run(_HG, nch, (mi, mf, q, v, None, o0, None)):
        return False
    t = np.empty((2, B, 6, nv))
    return run(_CD, nch, (mi, mf, q, v, np.zeros((B, nv)), _t6(o1, B, nv), t[0], t[1],
                          _t6(o2, B, nv)))


@cached_njit
def _kinetic_energy(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_KE, nch, (mi, mf, q, v, o0.reshape(q.shape[0])))


@cached_njit
def _kinetic_energy_p(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """(T, dT_dq, dT_dv = M v): dT_dq = 0.5 v^T (dtau_dq(q, 0, v) - dtau_dq(q, 0, 0)),
    the q-derivative of M(q) w at w = v (rbdiff.motion_partials)."""
    B, nv = q.shape[0], _nv(mi)
    if not run(_KE, nch, (mi, mf, q, v, o0.reshape(B))):
        return False
    z = np.zeros((B, nv))
    d = np.empty((6, B, nv, nv))
    if not run(_RNEA_D, nch, (mi, mf, q, z, v, _fx(q), d[0], d[1], d[2])):
        return False
    if not run(_RNEA_D, nch, (mi, mf, q, z, z, _fx(q), d[3], d[4], d[5])):
        return False
    for b in range(B):
        for j in range(nv):
            g, mv = 0.0, 0.0
            for i in range(nv):
                g += v[b, i] * (d[0, b, i, j] - d[3, b, i, j])
                mv += d[2, b, j, i] * v[b, i]
            o1[b, j], o2[b, j] = 0.5 * g, mv
    return True


@cached_njit
def _potential_energy(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    return run(_PE, nch, (mi, mf, q, o0.reshape(q.shape[0])))



# ---- contact and impulse dynamics: a contact set's packed tables are operands after the
# options (cint as int32 words, cflt with a last row [damping, restitution, 0...] as
# uint32 words: JAX without x64 would truncate them; calls.contact_operands), so one
# handler serves every set; nc (the constraint rows) is the forces output's item size.
# Outputs: the value, then (the *_d kernels) the NumPy API's partials; up to eight, read
# and copied by _cframe / _cfinish.
_CDYN = SLOT["contact_dynamics_batch"]
_CDYN_D = SLOT["contact_dynamics_derivatives_batch"]
_IDYN = SLOT["impulse_dynamics_batch"]
_IDYN_D = SLOT["impulse_dynamics_derivatives_batch"]
N_TABLES = 2            # cint, cflt + [damping, restitution]
N_CONTACT_OUT = 8


@cached_njit
def _ret(rets, k, B, e):
    """Output k as a (B, n) float64 array, or ``e`` (empty) where the call has fewer."""
    return _out_f64(rets[k], B) if k < rets.size else e


@cached_njit
def _cnothing():
    """_cframe's answer when nothing is to run (built only then: its arrays are
    allocations, a microsecond of a small call's)."""
    e, e2 = np.empty((0, 0)), np.empty((0, 0), np.int64)
    ei = np.empty(0, np.int64)
    return (False, ei, e2, e, ei, e, np.zeros(N_OPTS, np.int32), e2, e, np.empty(0), e, e,
            e, (e, e, e, e, e, e, e, e))


@cached_njit
def _cframe(frame, n_in):
    """Read a contact handler's call frame: (ok, rets, mi, mf, frame_parents, frame_mf,
    opts, cint, cflt, [damping, restitution], q, v, u, outputs (8, unused ones empty)).
    ok is False for the metadata query and for a refused call (outputs NaN-filled)."""
    f = _execute_frame(frame)
    if f.size == 0:
        return _cnothing()
    nargs, nrets = f[7], f[12]
    atypes, args = _ints(f[8], nargs), _words(f[9], nargs)
    rtypes, rets = _ints(f[13], nrets), _words(f[14], nrets)
    first = N_MODEL + N_TABLES
    ok = nargs == first + n_in and nrets >= 2 and nrets <= N_CONTACT_OUT
    for k in range(nrets):
        ok = ok and rtypes[k] == _ARG_BUFFER and _words(rets[k], 1)[0] >= _BUFFER_SIZE
    for k in range(nargs):
        ok = ok and atypes[k] == _ARG_BUFFER and _words(args[k], 1)[0] >= _BUFFER_SIZE
    if ok:
        for k in (0, 2, 4, N_MODEL):
            ok = ok and _ints(args[k], 6)[4] == _S32
        for k in (1, 3, N_MODEL + 1):
            ok = ok and _ints(args[k], 6)[4] == _U32
        for k in range(first, nargs):
            dt = _ints(args[k], 6)[4]
            ok = ok and (dt == _F64 or dt == _F32)
        ok = ok and _dims(args[N_MODEL]).size == 2 and _dims(args[N_MODEL + 1]).size == 2
        ok = ok and _dims(args[N_MODEL + 1])[0] >= 1 and _dims(args[N_MODEL + 1])[1] >= 4
    if not ok:
        _fail(rets)
        return _cnothing()
    B = _batch(rets[0], 1)
    d0, d1 = _dims(args[0]), _dims(args[1])
    mi = carray(_vp(_words(args[0], 6)[3]), (d0[0], d0[1] // 2), np.int64)
    mf = carray(_vp(_words(args[1], 6)[3]), (d1[0], d1[1] // 2), np.float64)
    d2, d3 = _dims(args[2]), _dims(args[3])
    fp = carray(_vp(_words(args[2], 6)[3]), (d2[0] // 2,), np.int64)
    fm = carray(_vp(_words(args[3], 6)[3]), (d3[0], d3[1] // 2), np.float64)
    opts = carray(_vp(_words(args[4], 6)[3]), (N_OPTS,), np.int32)
    d5, d6 = _dims(args[N_MODEL]), _dims(args[N_MODEL + 1])
    ci = carray(_vp(_words(args[N_MODEL], 6)[3]), (d5[0], d5[1] // 2), np.int64)
    p6, w6 = _words(args[N_MODEL + 1], 6)[3], d6[1] // 2
    cf = carray(_vp(p6), (d6[0] - 1, w6), np.float64)
    sc = carray(_vp(p6 + 8 * w6 * (d6[0] - 1)), (2,), np.float64)   # its last row
    q = _in(args[first], B)
    v = _in(args[first + 1], B)
    e = np.empty((0, 0))      # every unused slot: one allocation
    u = _in(args[first + 2], B) if n_in > 2 else e
    o = (_ret(rets, 0, B, e), _ret(rets, 1, B, e), _ret(rets, 2, B, e), _ret(rets, 3, B, e),
         _ret(rets, 4, B, e), _ret(rets, 5, B, e), _ret(rets, 6, B, e), _ret(rets, 7, B, e))
    return (True, rets, mi, mf, fp, fm, opts, ci, cf, sc, q, v, u, o)


@cached_njit
def _cfinish(rets, o):
    """Copy float64 results into f32 outputs (f64 ones were written in place)."""
    for k in range(rets.size):
        _store(rets[k], o[k])


@cached_njit
def _rows(o, B, n, nv):
    """A flat output (B, n nv) as (B, n, nv)."""
    return o.reshape((B, n, nv))


@cached_njit
def _contact_dynamics(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    """(qdd, forces)."""
    return run(_CDYN, nch, (mi, mf, fp, fm, q, v, u, _fx(q), o[0], o[1], ci, cf, sc[0]))


@cached_njit
def _contact_dynamics_d(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    """(qdd, forces, dqdd_dq, dqdd_dv, dqdd_dtau, dforces_dq, dforces_dv, dforces_dtau)."""
    if not _contact_dynamics(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
        return False
    B, nv, nc = q.shape[0], _nv(mi), o[1].shape[1]
    return run(_CDYN_D, nch, (mi, mf, fp, fm, q, v, u, _fx(q), _m2(o[2], B, nv),
                              _m2(o[3], B, nv), _m2(o[4], B, nv), _rows(o[5], B, nc, nv),
                              _rows(o[6], B, nc, nv), _rows(o[7], B, nc, nv), ci, cf,
                              sc[0]))


@cached_njit
def _impulse_dynamics(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    """(v_after, impulses)."""
    return run(_IDYN, nch, (mi, mf, fp, fm, q, v, o[0], o[1], ci, cf, sc[1], sc[0]))


@cached_njit
def _impulse_dynamics_d(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    """(v_after, impulses, dvafter_dq, dvafter_dv, dimpulses_dq, dimpulses_dv)."""
    if not _impulse_dynamics(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
        return False
    B, nv, nc = q.shape[0], _nv(mi), o[1].shape[1]
    return run(_IDYN_D, nch, (mi, mf, fp, fm, q, v, _m2(o[2], B, nv), _m2(o[3], B, nv),
                              _rows(o[4], B, nc, nv), _rows(o[5], B, nc, nv), ci, cf,
                              sc[1], sc[0]))

# ---- the serial / parallel decision (plans.py: rbdiff.cpu.policy's rule at run time) ---
_MIN_S, _UNTIMED_S, _LOSS = policy.PARALLEL_MIN_S, policy.UNTIMED_S, policy.LOSS
_BACKOFF_MIN, _BACKOFF_MAX = policy.BACKOFF_MIN_S, policy.BACKOFF_MAX_S


@cached_njit
def _plan(k):
    return carray(_vp(P.table_address()), (P.NPLANS, P.WIDTH), np.float64)[k]


@cached_njit
def _choose(opts, B):
    """(chunks, t0) for a batch of B items: 0 chunks runs the serial entry; t0 < 0: the
    run is not timed. opts: [frame, the most chunks (0: no parallel entry linked), plan
    row, mode]."""
    most, k, mode = np.int64(opts[1]), np.int64(opts[2]), opts[3]
    if mode == P.SERIAL or B == 0 or k < 0 or k >= P.NPLANS:
        return np.int64(0), -1.0
    if mode == P.PARALLEL:
        return min(most, B), -1.0
    p = _plan(k)
    if B < p[P.UNTIMED]:                  # far too small for threads: not even timed
        return np.int64(0), -1.0
    t0 = P.now()
    if (most >= 2 and p[P.RUNS] >= 2 and p[P.ITEM] * B >= _MIN_S
            and t0 >= p[P.UNTIL]):
        return min(most, B), t0
    return np.int64(0), t0


@cached_njit
def _record(opts, B, nch, t0):
    """Fold a timed run into its plan (rbdiff.cpu.policy.run's bookkeeping)."""
    if t0 < 0:
        return
    p = _plan(np.int64(opts[2]))
    t1 = P.now()
    took = t1 - t0
    if nch == 0:
        item = max(took / B, 1e-12)
        p[P.RUNS] += 1
        if p[P.ITEM] == 0 or item < p[P.ITEM]:
            p[P.ITEM] = item
        else:
            p[P.ITEM] += 0.125 * (item - p[P.ITEM])
        if p[P.RUNS] >= 2:
            p[P.UNTIMED] = _UNTIMED_S / p[P.ITEM]
        return
    if took > _LOSS * p[P.ITEM] * B:
        if p[P.LOST] != 0:              # the second loss in a row: back off
            p[P.UNTIL] = t1 + p[P.BACKOFF]
            p[P.BACKOFF] = min(2 * p[P.BACKOFF], _BACKOFF_MAX)
        p[P.LOST] = 1.0 - p[P.LOST]
    else:
        p[P.LOST] = 0.0
        p[P.BACKOFF] = _BACKOFF_MIN
        if took * nch < p[P.ITEM] * B:    # nch x parallel time bounds the serial
            p[P.ITEM] = max(took * nch / B, 1e-12)
            p[P.UNTIMED] = _UNTIMED_S / p[P.ITEM]


@cached_njit
def _serve(frame, k, n_in, out_rank):
    """A handler's work: read the call frame (n_in per-item inputs, outputs of rank
    out_rank per item), run kernel k (below), copy f32 results out; a refused input (NaN,
    a singular model) or any other failure NaN-fills the outputs (nothing raises
    through C)."""
    # by address: one compiled call-frame reader for every handler (cpu/twin.py), not a
    # copy typed and optimised in each (3 s of a cold handler)
    ok, rets, mi, mf, fp, fm, fr, opts, q, v, u, o0, o1, o2, o3 = twin(
        _frame, (frame, n_in, out_rank))
    if not ok:
        return
    B = q.shape[0]
    nch, t0 = _choose(opts, B)
    try:
        if _kernel(k, mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
            _record(opts, B, nch, t0)
            _finish(rets, o0, o1, o2, o3)
        else:
            _fail(rets)
    except Exception:
        _fail(rets)


def _kernel(k, mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    """Kernel number k (a compile-time constant: the handlers' numbering below) on the
    call's arrays; True when it ran. Compiled code only (an overload), so that a handler
    compiles its own kernel and not the twelve others, as an if-chain on k did (3 s of a
    cold first handler: Numba typed every branch)."""
    raise NotImplementedError("rbdiff.jax.ffi._kernel runs compiled only")


@overload(_kernel, prefer_literal=True)
def _kernel_of(k, mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
    if not isinstance(k, types.IntegerLiteral):
        raise errors.TypingError("_kernel: the kernel number must be a constant")
    fn = _BY_NUMBER[k.literal_value]

    def impl(k, mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3):
        return fn(mi, mf, fp, fm, fr, nch, q, v, u, o0, o1, o2, o3)
    return impl



@cached_njit
def _cserve(frame, k, n_in):
    """_serve for the contact kernels (_cframe's operands and outputs; kernel k of
    _BY_NUMBER_C)."""
    ok, rets, mi, mf, fp, fm, opts, ci, cf, sc, q, v, u, o = twin(_cframe, (frame, n_in))
    if not ok:
        return
    B = q.shape[0]
    nch, t0 = _choose(opts, B)
    try:
        if _ckernel(k, mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
            _record(opts, B, nch, t0)
            _cfinish(rets, o)
        else:
            _fail(rets)
    except Exception:
        _fail(rets)


def _ckernel(k, mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    """Contact kernel number k (a compile-time constant), as _kernel."""
    raise NotImplementedError("rbdiff.jax.ffi._ckernel runs compiled only")


@overload(_ckernel, prefer_literal=True)
def _ckernel_of(k, mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
    if not isinstance(k, types.IntegerLiteral):
        raise errors.TypingError("_ckernel: the kernel number must be a constant")
    fn = _BY_NUMBER_C[k.literal_value]

    def impl(k, mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o):
        return fn(mi, mf, fp, fm, ci, cf, sc, nch, q, v, u, o)
    return impl


_BY_NUMBER_C = (_contact_dynamics, _contact_dynamics_d, _impulse_dynamics,
                _impulse_dynamics_d)

_BY_NUMBER = (_rnea, _aba, _crba, _minverse, _nonlinear_effects, _gravity, _rnea_d, _aba_d,
              _rnea_so, _aba_so, _crba_d, _frame_placement, _frame_placement_d,
              _frame_velocity, _frame_velocity_p, _frame_acceleration, _frame_acceleration_p,
              _center_of_mass, _center_of_mass_p, _centroidal_momentum,
              _centroidal_momentum_p, _kinetic_energy, _kinetic_energy_p, _potential_energy)


# the handlers, one a kernel: C functions XLA calls (module-level, so Numba caches them);
# _serve(frame, kernel number, inputs per item, output rank per item)


def _h_rnea(frame):
    _serve(_addr(frame), 0, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_aba(frame):
    _serve(_addr(frame), 1, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_crba(frame):
    _serve(_addr(frame), 2, 1, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_minverse(frame):
    _serve(_addr(frame), 3, 1, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_nonlinear_effects(frame):
    _serve(_addr(frame), 4, 2, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_gravity(frame):
    _serve(_addr(frame), 5, 1, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_rnea_d(frame):
    _serve(_addr(frame), 6, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_aba_d(frame):
    _serve(_addr(frame), 7, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_rnea_so(frame):
    _serve(_addr(frame), 8, 3, 3)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_aba_so(frame):
    _serve(_addr(frame), 9, 3, 3)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_crba_d(frame):
    _serve(_addr(frame), 10, 1, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_placement(frame):
    _serve(_addr(frame), 11, 1, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_placement_d(frame):
    _serve(_addr(frame), 12, 1, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_velocity(frame):
    _serve(_addr(frame), 13, 2, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_velocity_p(frame):
    _serve(_addr(frame), 14, 2, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_acceleration(frame):
    _serve(_addr(frame), 15, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_frame_acceleration_p(frame):
    _serve(_addr(frame), 16, 3, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_center_of_mass(frame):
    _serve(_addr(frame), 17, 1, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_center_of_mass_p(frame):
    _serve(_addr(frame), 18, 1, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_centroidal_momentum(frame):
    _serve(_addr(frame), 19, 2, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_centroidal_momentum_p(frame):
    _serve(_addr(frame), 20, 2, 1)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_kinetic_energy(frame):
    _serve(_addr(frame), 21, 2, 0)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_kinetic_energy_p(frame):
    _serve(_addr(frame), 22, 2, 0)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_potential_energy(frame):
    _serve(_addr(frame), 23, 1, 0)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_contact_dynamics(frame):
    _cserve(_addr(frame), 0, 3)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_contact_dynamics_d(frame):
    _cserve(_addr(frame), 1, 3)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_impulse_dynamics(frame):
    _cserve(_addr(frame), 2, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


def _h_impulse_dynamics_d(frame):
    _cserve(_addr(frame), 3, 2)
    return _vp(0)    # NULL: success (a refusal was NaN-filled)


_KERNELS = {
    "rnea": _h_rnea,
    "aba": _h_aba,
    "crba": _h_crba,
    "minverse": _h_minverse,
    "nonlinear_effects": _h_nonlinear_effects,
    "gravity": _h_gravity,
    "rnea_derivatives": _h_rnea_d,
    "aba_derivatives": _h_aba_d,
    "rnea_second_order_derivatives": _h_rnea_so,
    "aba_second_order_derivatives": _h_aba_so,
    "crba_derivatives": _h_crba_d,
    "frame_placement": _h_frame_placement,
    "frame_placement_derivatives": _h_frame_placement_d,
    "frame_velocity": _h_frame_velocity,
    "frame_velocity_partials": _h_frame_velocity_p,
    "frame_acceleration": _h_frame_acceleration,
    "frame_acceleration_partials": _h_frame_acceleration_p,
    "center_of_mass": _h_center_of_mass,
    "center_of_mass_partials": _h_center_of_mass_p,
    "centroidal_momentum": _h_centroidal_momentum,
    "centroidal_momentum_partials": _h_centroidal_momentum_p,
    "kinetic_energy": _h_kinetic_energy,
    "kinetic_energy_partials": _h_kinetic_energy_p,
    "potential_energy": _h_potential_energy,
    "contact_dynamics": _h_contact_dynamics,
    "contact_dynamics_derivatives": _h_contact_dynamics_d,
    "impulse_dynamics": _h_impulse_dynamics,
    "impulse_dynamics_derivatives": _h_impulse_dynamics_d,
}
CONTACT_KERNELS = ("contact_dynamics", "contact_dynamics_derivatives", "impulse_dynamics",
                   "impulse_dynamics_derivatives")     # their operands: _cframe

# the rbdiff.cpu.batch entries each handler calls, serial and parallel (entries.link)
_PAIRS = {"rnea": ("rnea",), "aba": ("aba",), "crba": ("crba",),
          "minverse": ("minverse",), "nonlinear_effects": ("nonlinear_effects",),
          "gravity": ("gravity",), "rnea_derivatives": ("rnea", "rnea_derivatives"),
          "aba_derivatives": ("aba", "aba_derivatives"),
          "rnea_second_order_derivatives": ("rnea_second_order",),
          "aba_second_order_derivatives": ("aba_second_order",),
          "crba_derivatives": ("crba", "rnea_second_order"),
          "frame_placement": ("frame_placement",),
          "frame_placement_derivatives": ("frame_placement", "frame_jacobian"),
          "frame_velocity": ("frame_velocity",),
          "frame_velocity_partials": ("frame_velocity", "frame_velocity_derivatives"),
          "frame_acceleration": ("frame_acceleration",),
          "frame_acceleration_partials": ("frame_acceleration",
                                          "frame_acceleration_derivatives"),
          "center_of_mass": ("center_of_mass",),
          "center_of_mass_partials": ("center_of_mass", "com_jacobian"),
          "centroidal_momentum": ("centroidal_momentum",),
          "centroidal_momentum_partials": ("centroidal_momentum", "centroidal_derivatives"),
          "kinetic_energy": ("kinetic_energy",),
          "kinetic_energy_partials": ("kinetic_energy", "rnea_derivatives"),
          "potential_energy": ("potential_energy",),
          "contact_dynamics": ("contact_dynamics",),
          "contact_dynamics_derivatives": ("contact_dynamics", "contact_dynamics_derivatives"),
          "impulse_dynamics": ("impulse_dynamics",),
          "impulse_dynamics_derivatives": ("impulse_dynamics", "impulse_dynamics_derivatives")}
SERIAL = {k: tuple(f"{p}_batch" for p in pairs) for k, pairs in _PAIRS.items()}
PARALLEL = {k: tuple(f"{p}_parallel" for p in pairs) for k, pairs in _PAIRS.items()}
