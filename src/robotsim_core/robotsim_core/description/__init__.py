"""Robot descriptions: YAML spec -> :class:`RobotModel` -> URDF and MuJoCo model."""

__all__ = ['RobotModel', 'load_robot']


def __getattr__(name: str):
    # Lazy, so that importing a submodule (e.g. from robotsim_core.urdf, which load.py itself
    # imports) never runs load.py first: no circular import whichever module is imported first.
    if name == 'RobotModel':
        from .model import RobotModel
        return RobotModel
    if name == 'load_robot':
        from .load import load_robot
        return load_robot
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
