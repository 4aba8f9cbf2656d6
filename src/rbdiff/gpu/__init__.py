"""rbdiff on a CUDA GPU (numba-cuda), from the same kernels as the CPU.

``rbdiff.gpu.rnea``, ``crba``, ``aba``, ``minverse``, ``rnea_derivatives``,
``aba_derivatives``, ``rnea_second_order_derivatives``, ``aba_second_order_derivatives``
and ``kinematics_derivatives`` take states on a CUDA device (anything with
``__cuda_array_interface__``: Numba device arrays, CuPy, PyTorch CUDA tensors; host
NumPy arrays are copied over) and return Numba device arrays; ``out=`` fills the
caller's device buffers instead. The public functions ``rbdiff.rnea`` etc. route a
device argument here. How the kernels are built: :mod:`rbdiff.gpu.compile`; how they
are launched (partitions, fine-grained variant, workspaces): :mod:`rbdiff.gpu.launch`;
arguments: :mod:`rbdiff.gpu.dispatch`. Install with ``pip install rbdiff[gpu]``;
without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` runs everything in Numba's CUDA simulator.
"""

from .dispatch import aba
from .dispatch import aba_derivatives
from .dispatch import aba_second_order_derivatives
from .dispatch import crba
from .dispatch import gravity
from .dispatch import is_device_array
from .dispatch import kinematics_derivatives
from .dispatch import minverse
from .dispatch import nonlinear_effects
from .dispatch import rnea
from .dispatch import rnea_derivatives
from .dispatch import rnea_second_order_derivatives
from .launch import LAYOUTS
from .launch import PARTITIONS
from .launch import release
from .launch import set_max_registers
from .launch import set_workspace_budget

__all__ = ["rnea", "aba", "crba", "minverse", "nonlinear_effects", "gravity",
           "rnea_derivatives", "aba_derivatives", "rnea_second_order_derivatives",
           "aba_second_order_derivatives", "kinematics_derivatives", "is_device_array",
           "release", "set_max_registers", "set_workspace_budget", "LAYOUTS", "PARTITIONS"]
