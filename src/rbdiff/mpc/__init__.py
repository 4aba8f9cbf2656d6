"""Model-predictive control on rbdiff.trajopt: a contact schedule that rolls in time
(gaits.py), a receding-horizon controller whose tick shifts the horizon and its warm
start and runs a fixed iteration budget (controller.py), the closed loop against a
MuJoCo plant (loop.py), and the stance equilibrium with its linearisation for balance
controllers (balance.py).

Importing rbdiff.mpc imports neither mujoco nor the plant; running a loop does.
"""

from .controller import DEFAULT_WEIGHTS, MPC, Tick
from .gaits import GAITS, Gait, gait
from .loop import Run, parse_pushes, piecewise, run
from .plots import plot_run
from .robots import default_feet
from .balance import (BalanceController, Linearisation, Stance, dare, linearise, lqr,
                     stance)

__all__ = ["MPC", "Tick", "DEFAULT_WEIGHTS", "Gait", "gait", "GAITS", "run", "Run",
           "piecewise", "parse_pushes", "plot_run", "default_feet", "stance", "Stance",
           "linearise", "Linearisation", "lqr", "dare", "BalanceController"]
