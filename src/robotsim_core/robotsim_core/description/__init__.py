"""Robot descriptions: YAML spec -> :class:`RobotModel` -> URDF and MuJoCo model."""

from .model import RobotModel
from .load import load_robot

__all__ = ['RobotModel', 'load_robot']
