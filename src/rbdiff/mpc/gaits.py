"""A contact schedule that rolls in time: periodic gaits for quadrupeds and bipeds.

A gait is a period T, a duty factor d (the fraction of the period a foot supports) and,
per foot, the phase at which its swing starts. Foot i swings while
``(t - start) / T - offset_i`` (mod 1) is below ``1 - d`` and supports otherwise; before
``start`` every foot supports (the robot starts standing). So at ``start`` the feet with
offset 0 lift off.

Quadruped feet are ordered (lf, rf, lh, rh), biped feet (right, left). The presets
(period s, duty, offsets):

======  =================  ==================  ========================================
gait    quadruped           biped               swing order
======  =================  ==================  ========================================
stand   every foot supports
walk    0.8, 0.75           0.8, 0.6            rh, rf, lh, lf (Crocoddyl's); right, left
trot    0.36, 0.6           --                  lf + rh, then rf + lh
pace    0.3, 0.6            --                  lf + lh, then rf + rh
bound   0.36, 0.6           --                  lf + rf, then lh + rh
======  =================  ==================  ========================================

The two-beat gaits' duty 0.6 (not 0.5) leaves a short four-foot support at every
change of pair, where a rigid-contact plan switches its supports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# offsets of the swing starts, as fractions of the period, per foot (lf, rf, lh, rh)
_QUADRUPED = {
    "stand": (1.0, 1.0, (0.0, 0.0, 0.0, 0.0)),
    "walk": (0.8, 0.75, (0.75, 0.25, 0.5, 0.0)),
    "trot": (0.36, 0.6, (0.0, 0.5, 0.5, 0.0)),
    "pace": (0.3, 0.6, (0.0, 0.5, 0.0, 0.5)),
    "bound": (0.36, 0.6, (0.0, 0.0, 0.5, 0.5)),
}
_BIPED = {
    "stand": (1.0, 1.0, (0.0, 0.0)),
    "walk": (0.8, 0.6, (0.0, 0.5)),
}
GAITS = tuple(_QUADRUPED)
_EPS = 1e-9          # a knot time within this of a phase boundary is on its later side


@dataclass(frozen=True)
class Gait:
    """A periodic contact schedule: ``period`` (s), ``duty`` (0 < duty <= 1),
    ``offsets`` (nfeet,): each foot's swing start as a fraction of the period,
    ``start`` (s): every foot supports before it; ``name``."""

    name: str
    period: float
    duty: float
    offsets: tuple
    start: float = 0.0

    def __post_init__(self):
        if not (math.isfinite(self.period) and self.period > 0):
            raise ValueError(f"gait {self.name!r}: period must be > 0 s, got "
                             f"{self.period}")
        if not (0 < self.duty <= 1):
            raise ValueError(f"gait {self.name!r}: duty must be in (0, 1], got "
                             f"{self.duty}")
        if not self.offsets or not all(math.isfinite(o) for o in self.offsets):
            raise ValueError(f"gait {self.name!r}: offsets must be finite fractions")
        if not math.isfinite(self.start):
            raise ValueError(f"gait {self.name!r}: start must be finite")
        # every instant needs a supporting foot: the plan has no flight phase
        grid = np.linspace(0.0, self.period, 721)[:-1]
        if not self.support(grid + self.start).any(axis=1).all():
            raise ValueError(f"gait {self.name!r}: some phase has no supporting foot "
                             f"(duty {self.duty}, offsets {self.offsets}); rbdiff.mpc "
                             "plans no flight phase")

    @property
    def nfeet(self):
        return len(self.offsets)

    @property
    def swing_time(self):
        """Seconds a foot swings (0 for stand)."""
        return (1.0 - self.duty) * self.period

    def support(self, t):
        """Whether each foot supports at times t: (..., nfeet) bool for t (...)."""
        t = np.asarray(t, dtype=float)
        if self.duty >= 1.0:
            return np.ones(t.shape + (self.nfeet,), bool)
        s = (t[..., None] - self.start) / self.period - np.asarray(self.offsets)
        phase = s - np.floor(s + _EPS)
        return (phase >= 1.0 - self.duty - _EPS) | (t[..., None] < self.start - _EPS)

    def table(self, t, dt, n):
        """The supports (n, nfeet) of the n knots t + k dt, k = 0..n-1 (knot k's contact
        set holds from its start time to the next knot's)."""
        return self.support(t + dt * np.arange(n))

    def swings(self, i, t0, t1):
        """Foot i's swings (lift-off, touch-down) overlapping [t0, t1], in time order
        (a swing under way at t0 included)."""
        if self.duty >= 1.0:
            return []
        T = self.period
        k0 = math.floor((t0 - self.start) / T - self.offsets[i]) - 1
        out = []
        for k in range(k0, k0 + int((t1 - t0) / T) + 3):
            lo = self.start + (k + self.offsets[i]) * T
            td = lo + self.swing_time
            if lo >= self.start - _EPS and td > t0 + _EPS and lo < t1 - _EPS:
                out.append((lo, td))
        return out


def gait(name, feet, period=None, duty=None, start=0.0):
    """The preset ``name`` (stand, walk, trot, pace, bound) for ``feet`` (4: lf, rf, lh,
    rh; 2: right, left), its period (s) and duty optionally changed. Raises ValueError
    for an unknown gait, one a biped cannot take, or a schedule with no support."""
    n = len(feet)
    table = {4: _QUADRUPED, 2: _BIPED}.get(n)
    if table is None:
        raise ValueError(f"gaits: expected 4 feet (lf, rf, lh, rh) or 2 (right, left), "
                         f"got {n}")
    if name not in _QUADRUPED:
        raise ValueError(f"unknown gait {name!r}: expected one of {', '.join(GAITS)}")
    if name not in table:
        raise ValueError(f"gait {name!r} needs four feet; a biped takes "
                         f"{', '.join(table)}")
    T, d, offsets = table[name]
    return Gait(name, float(T if period is None else period),
                float(d if duty is None else duty), offsets, float(start))
