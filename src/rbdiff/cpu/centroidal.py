"""Entry points of the centre of mass, centroidal momentum and energy functions
(kernels/centroidal.py, kernels/centroidal_derivatives.py); no math. As cpu/single.py
and cpu/batch.py: ``*_one`` checks one state and runs on the caller's workspace
(kernels.workspace.single_call_scratch), outputs allocated by the caller; ``*_batch``
runs the items in order on one workspace (checking them all first when ``check``) and
``*_parallel`` cuts the batch into ``nchunks`` chunks, one unchecked ``*_batch`` call
each, so results are bit-equal to the serial ones. A scalar result (an energy) is
written to a 0-d output (single; also returned) or to (B,) (batch)."""

import numpy as np
from numba import prange

from ..kernels.centroidal import (center_of_mass, centroidal_map, centroidal_momentum,
                                  com_jacobian, kinetic_energy, potential_energy)
from ..kernels.centroidal_derivatives import centroidal_dynamics_derivatives
from ..kernels.fastargs import made, made2, made3, missed, output_arg, state_args, vector_arg
from ..kernels.jit import entry, fast_entry, helper, pentry
from ..kernels.workspace import W_WIDTH, workspace_rows
from ..model.layout import MF_MASS
from .batch import chunk
from .twin import twin
from .checks import (batch_configurations_ok, batch_states_ok, configuration_checked,
                     fk_batch_ok, state_ok, velocity_state_ok, workspace_ok)

NO_COM = "the model has no centre of mass: its total mass is zero"


@helper
def mass_ok(mi, mf):
    """The model's total mass is positive (the centre of mass is H / M)."""
    m = 0.0
    for i in range(1, mi[0, 0] + 1):
        m += mf[i, MF_MASS].real
    if not m > 0.0:
        raise ValueError(NO_COM)


@helper
def motion_ok(mi, q, v, a, ws):
    """q valid and, unless None, v (and a) finite; the workspace large enough."""
    if v is None:
        configuration_checked(mi, q, ws)
    elif a is None:
        velocity_state_ok(mi, q, v)
        workspace_ok(mi, ws)
    else:
        state_ok(mi, q, v, a, None)
        workspace_ok(mi, ws)


# ---- single calls ----------------------------------------------------------------------
# q, v, a: arrays, or on the fast paths any objects (kernels.fastargs.state_args: False
# unless float64 1-D ndarrays, or None where the entry takes None); True when done


@fast_entry
def center_of_mass_one(mi, mf, q, v, a, ws, com, vcom, acom, result=None):
    """com (3,) and, unless None (then v, resp. a, is None too), vcom and acom (3,); given
    as shapes, made here (kernels.fastargs.output_arg): the result is then com, (com,
    vcom) or (com, vcom, acom), the pairs of the named tuple class ``result`` where
    given (a REF)."""
    ok, qq, vv, aa, _ = state_args(q, v, a, None, None)
    if not ok:
        return missed(com)
    motion_ok(mi, qq, vv, aa, ws)
    mass_ok(mi, mf)
    o_c, c = output_arg(com)
    o_v, vc = output_arg(vcom)
    o_a, ac = output_arg(acom)
    center_of_mass(mi, mf, qq, vv, aa, ws, c, vc, ac)
    if vcom is None:        # the arguments: Numba prunes these branches by type
        return made(o_c)
    if acom is None:
        return made2(o_c, o_v, result)
    return made3(o_c, o_v, o_a, result)


@fast_entry
def com_jacobian_one(mi, mf, q, ws, J):
    """J (3, nv), or its shape (made here: the result is then J)."""
    ok, q = vector_arg(q, None)
    if not ok:
        return missed(J)
    configuration_checked(mi, q, ws)
    mass_ok(mi, mf)
    obj, out = output_arg(J)
    com_jacobian(mi, mf, q, ws, out)
    return made(obj)


@fast_entry
def centroidal_map_one(mi, mf, q, ws, Ag):
    """Ag (6, nv), or its shape (as com_jacobian_one's)."""
    ok, q = vector_arg(q, None)
    if not ok:
        return missed(Ag)
    configuration_checked(mi, q, ws)
    mass_ok(mi, mf)
    obj, out = output_arg(Ag)
    centroidal_map(mi, mf, q, ws, out)
    return made(obj)


@fast_entry
def centroidal_momentum_one(mi, mf, q, v, a, ws, hg, dhg, result=None):
    """hg (6,) and, unless None (then a is None too), dhg (6,); given as shapes, made here:
    the result is then hg or (hg, dhg), of the class ``result`` (as center_of_mass_one's)."""
    ok, qq, vv, aa, _ = state_args(q, v, a, None, None)
    if not ok:
        return missed(hg)
    motion_ok(mi, qq, vv, aa, ws)
    mass_ok(mi, mf)
    o_h, h = output_arg(hg)
    o_d, hd = output_arg(dhg)
    centroidal_momentum(mi, mf, qq, vv, aa, ws, h, hd)
    if dhg is None:         # pruned by type, as center_of_mass_one's
        return made(o_h)
    return made2(o_h, o_d, result)


@fast_entry
def centroidal_derivatives_one(mi, mf, q, v, a, ws, dh_dq, dhdot_dq, dhdot_dv, dhdot_da):
    ok, q, v, a, _ = state_args(q, v, a, None, dh_dq)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    workspace_ok(mi, ws)
    mass_ok(mi, mf)
    centroidal_dynamics_derivatives(mi, mf, q, v, a, ws, dh_dq, dhdot_dq, dhdot_dv,
                                    dhdot_da)
    return True


@fast_entry
def kinetic_energy_one(mi, mf, q, v, ws, e):
    """The energy, returned, and written to e (0-d) unless e is None (the fast path
    takes the return value: no output array to allocate); NaN, computing nothing, where
    q, v are REF objects that are not float64 vectors (a checked energy is finite)."""
    ok, q, v, _, _ = state_args(q, v, None, None, ws)
    if not ok:
        return np.nan
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    x = kinetic_energy(mi, mf, q, v, ws)
    if e is not None:
        e[()] = x
    return x


@fast_entry
def potential_energy_one(mi, mf, q, ws, e):
    """As kinetic_energy_one."""
    ok, q = vector_arg(q, ws)
    if not ok:
        return np.nan
    configuration_checked(mi, q, ws)
    x = potential_energy(mi, mf, q, ws)
    if e is not None:
        e[()] = x
    return x


# ---- batches ---------------------------------------------------------------------------


@entry
def center_of_mass_batch(mi, mf, q, v, a, com, vcom, acom, check):
    """com (B, 3) and, unless None (then v, resp. a, is None too), vcom and acom."""
    if check:
        fk_batch_ok(mi, q, v, a)
        mass_ok(mi, mf)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        if v is None:
            center_of_mass(mi, mf, q[b], None, None, ws, com[b], None, None)
        elif a is None:
            center_of_mass(mi, mf, q[b], v[b], None, ws, com[b], vcom[b], None)
        else:
            center_of_mass(mi, mf, q[b], v[b], a[b], ws, com[b], vcom[b], acom[b])


@pentry
def center_of_mass_parallel(mi, mf, q, v, a, com, vcom, acom, nchunks):
    fk_batch_ok(mi, q, v, a)
    mass_ok(mi, mf)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        if v is None:       # None cannot be sliced: the branches are pruned by type
            twin(center_of_mass_batch, (mi, mf, q[lo:hi], None, None, com[lo:hi], None, None,
                                        False))
        elif a is None:
            twin(center_of_mass_batch, (mi, mf, q[lo:hi], v[lo:hi], None, com[lo:hi],
                                        vcom[lo:hi], None, False))
        else:
            twin(center_of_mass_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], com[lo:hi],
                                        vcom[lo:hi], acom[lo:hi], False))


@entry
def com_jacobian_batch(mi, mf, q, J, check):
    if check:
        batch_configurations_ok(mi, q)
        mass_ok(mi, mf)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        com_jacobian(mi, mf, q[b], ws, J[b])


@pentry
def com_jacobian_parallel(mi, mf, q, J, nchunks):
    batch_configurations_ok(mi, q)
    mass_ok(mi, mf)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(com_jacobian_batch, (mi, mf, q[lo:hi], J[lo:hi], False))


@entry
def centroidal_map_batch(mi, mf, q, Ag, check):
    if check:
        batch_configurations_ok(mi, q)
        mass_ok(mi, mf)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        centroidal_map(mi, mf, q[b], ws, Ag[b])


@pentry
def centroidal_map_parallel(mi, mf, q, Ag, nchunks):
    batch_configurations_ok(mi, q)
    mass_ok(mi, mf)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(centroidal_map_batch, (mi, mf, q[lo:hi], Ag[lo:hi], False))


@entry
def centroidal_momentum_batch(mi, mf, q, v, a, hg, dhg, check):
    """hg (B, 6) and, unless None (then a is None too), dhg (B, 6)."""
    if check:
        fk_batch_ok(mi, q, v, a)
        mass_ok(mi, mf)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        if a is None:
            centroidal_momentum(mi, mf, q[b], v[b], None, ws, hg[b], None)
        else:
            centroidal_momentum(mi, mf, q[b], v[b], a[b], ws, hg[b], dhg[b])


@pentry
def centroidal_momentum_parallel(mi, mf, q, v, a, hg, dhg, nchunks):
    fk_batch_ok(mi, q, v, a)
    mass_ok(mi, mf)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        if a is None:
            twin(centroidal_momentum_batch, (mi, mf, q[lo:hi], v[lo:hi], None, hg[lo:hi], None,
                                             False))
        else:
            twin(centroidal_momentum_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], hg[lo:hi],
                                             dhg[lo:hi], False))


@entry
def centroidal_derivatives_batch(mi, mf, q, v, a, dh_dq, dhdot_dq, dhdot_dv, dhdot_da,
                                 check):
    if check:
        batch_states_ok(mi, q, v, a, None)
        mass_ok(mi, mf)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        centroidal_dynamics_derivatives(mi, mf, q[b], v[b], a[b], ws, dh_dq[b],
                                        dhdot_dq[b], dhdot_dv[b], dhdot_da[b])


@pentry
def centroidal_derivatives_parallel(mi, mf, q, v, a, dh_dq, dhdot_dq, dhdot_dv, dhdot_da,
                                    nchunks):
    batch_states_ok(mi, q, v, a, None)
    mass_ok(mi, mf)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(centroidal_derivatives_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], dh_dq[lo:hi],
                                            dhdot_dq[lo:hi], dhdot_dv[lo:hi], dhdot_da[lo:hi],
                                            False))


@entry
def kinetic_energy_batch(mi, mf, q, v, e, check):
    """e (B,)."""
    if check:
        batch_states_ok(mi, q, v, v, None)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        e[b] = kinetic_energy(mi, mf, q[b], v[b], ws)


@pentry
def kinetic_energy_parallel(mi, mf, q, v, e, nchunks):
    batch_states_ok(mi, q, v, v, None)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(kinetic_energy_batch, (mi, mf, q[lo:hi], v[lo:hi], e[lo:hi], False))


@entry
def potential_energy_batch(mi, mf, q, e, check):
    """e (B,)."""
    if check:
        batch_configurations_ok(mi, q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        e[b] = potential_energy(mi, mf, q[b], ws)


@pentry
def potential_energy_parallel(mi, mf, q, e, nchunks):
    batch_configurations_ok(mi, q)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(potential_energy_batch, (mi, mf, q[lo:hi], e[lo:hi], False))
