"""Model-predictive control on rbdiff.trajopt: a contact schedule that rolls in time
(gaits.py), a receding-horizon controller whose tick shifts the horizon and its warm
start and runs a fixed iteration budget (controller.py), the closed loop against a
MuJoCo plant (loop.py), and the stance equilibrium with its linearisation for balance
controllers (stance.py).

Importing rbdiff.mpc imports neither mujoco nor the plant; running a loop does.
"""
