"""rbdiff: rigid-body dynamics and its analytical derivatives, compiled with Numba.

Conventions are Pinocchio's (see README): joint order and configuration layout as
``buildModelFromUrdf``, free-flyer q = [x, y, z, qx, qy, qz, qw] with a body-frame
twist, spatial vectors [linear, angular], fext in each joint's local frame.
"""

from . import metrics
from . import mujoco
from . import sim
from .api import aba
from .api import crba
from .api import gravity
from .api import minverse
from .api import nonlinear_effects
from .api import rnea
from .centroidal import center_of_mass
from .centroidal import centroidal_dynamics_derivatives
from .centroidal import centroidal_momentum
from .centroidal import centroidal_momentum_matrix
from .centroidal import com_jacobian
from .centroidal import kinetic_energy
from .centroidal import potential_energy
from .centroidal import total_mass
from .configuration import difference
from .contacts import Contact
from .contacts import DependentContacts
from .contacts import contact_dynamics
from .contacts import contact_dynamics_derivatives
from .contacts import impulse_dynamics
from .contacts import impulse_dynamics_derivatives
from .contraction import aba_second_order_contraction
from .contraction import contact_dynamics_contraction
from .contraction import impulse_dynamics_contraction
from .contraction import rnea_second_order_contraction
from .configuration import difference_jacobians
from .configuration import integrate
from .configuration import integrate_jacobians
from .configuration import integrate_transport
from .configuration import neutral
from .derivatives import aba_derivatives
from .derivatives import rnea_derivatives
from .frame_motion import frame_acceleration
from .frame_motion import frame_acceleration_derivatives
from .frame_motion import frame_jacobian_time_variation
from .frame_motion import frame_velocity
from .frame_motion import frame_velocity_derivatives
from .kinematics import forward_kinematics
from .kinematics import frame_jacobian
from .kinematics import frame_placement
from .kinematics import frame_placements
from .kinematics import kinematics_derivatives
from .model import models
from .model.configuration import random_configuration
from .model.mjcf import from_mujoco
from .model.mjcf import load_mjcf
from .model.model import Frame
from .model.model import FrameType
from .model.model import Model
from .model.model import ModelBuilder
from .model.robots import load_robot
from .model.robots import robot_names
from .model.robots import robot_path
from .model.urdf import load_urdf
from .second_order import aba_second_order_derivatives
from .second_order import rnea_second_order_derivatives

# the public names, listed once: `from rbdiff import *` imports these and the reference
# (docs/reference/rbdiff.md) documents these (rbdiff.gpu, imported on first use, has its own)
__all__ = [
    "Contact", "DependentContacts", "Frame", "FrameType", "Model", "ModelBuilder", "aba",
    "aba_derivatives", "aba_second_order_contraction", "aba_second_order_derivatives",
    "center_of_mass", "centroidal_dynamics_derivatives", "centroidal_momentum",
    "centroidal_momentum_matrix", "com_jacobian", "contact_dynamics",
    "contact_dynamics_contraction", "contact_dynamics_derivatives", "crba", "difference",
    "difference_jacobians", "forward_kinematics", "frame_acceleration",
    "frame_acceleration_derivatives", "frame_jacobian", "frame_jacobian_time_variation",
    "frame_placement", "frame_placements", "frame_velocity", "frame_velocity_derivatives",
    "from_mujoco", "gravity", "impulse_dynamics", "impulse_dynamics_contraction",
    "impulse_dynamics_derivatives", "integrate", "integrate_jacobians",
    "integrate_transport", "kinematics_derivatives", "kinetic_energy", "load_mjcf",
    "load_robot", "load_urdf", "minverse", "neutral", "nonlinear_effects",
    "potential_energy", "random_configuration", "rnea", "rnea_derivatives",
    "rnea_second_order_contraction", "rnea_second_order_derivatives", "robot_names",
    "robot_path", "total_mass", "metrics", "models", "mujoco", "sim",
]

__version__ = "0.2.0"


def __getattr__(name):
    """``rbdiff.gpu`` on first use: the GPU backend imports numba.cuda (~50 ms), which a
    CPU user need not pay for at ``import rbdiff``."""
    if name == "gpu":
        import importlib
        return importlib.import_module(".gpu", __name__)
    raise AttributeError(f"module 'rbdiff' has no attribute {name!r}")
