"""Robot and world descriptions: YAML spec -> :class:`RobotModel` -> URDF (:mod:`.urdf`), MuJoCo model
(:mod:`.mjcf`) and kinematics (:mod:`.kinematics`); URDF import (:mod:`.urdf_import`).

Everything a description is made of lives in this package, which imports nothing of robotsim_core
beyond its leaf modules (errors, geometry, config_schema, sensor_kinds): no import cycle, checked by
``tests/test_layering.py``."""

from .load import load_robot
from .model import RobotModel

__all__ = ['RobotModel', 'load_robot']
