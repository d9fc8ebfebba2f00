"""The drivers: one table of who can drive a robot, read by every consumer of a driver name.

A driver is named once here with what the consumers need to know of it; each consumer reads this table
instead of a list of its own:

- the node graph (``driver:=NAME`` of both launchers; robotsim.bringup) starts ``node``: for a driver of the
  base, the generic driver node (robotsim_learning.ros.driver_node) running its ``implementation``;
- the episode loop (``robotsim dataset generate --driver NAME``; robotsim_learning.ros.episode) runs
  the same ``implementation`` class in-process;
- the evaluator (``robotsim policy eval --driver/--baselines``) takes the ``evaluated`` ones;
- the LeRobot export gives a dataset the task text of its driver (``goal`` or not).

ROS-free: names and facts only, no import of the packages that implement the drivers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriverInfo:
    """What every consumer of a driver name needs to know of one driver."""

    name: str
    """The name every consumer accepts (``driver:=NAME``, ``--driver NAME``, a dataset's settings)."""
    summary: str
    """One line for help texts and the documentation."""
    goal: bool
    """It drives to a goal (``goal:=x,y`` or ``goal_pose``); its datasets' task is reaching the goal."""
    sim_only: str = ''
    """Why it needs the simulator (it reads ground truth or the simulator's world), or '' if it runs on the robot."""
    node: tuple[str, str] | None = None
    """(package, executable) of the node a bringup starts for it; None: not a bringup driver."""
    required: bool = False
    """A bringup ends when its node ends, with its exit status (a failed policy must not leave the robot undriven)."""
    episodes: bool = True
    """It drives dataset episodes (``robotsim dataset generate --driver NAME``)."""
    evaluated: bool = False
    """``robotsim policy eval`` runs it through the ROS graph (as the driver or a baseline)."""
    argument: str = ''
    """What ``NAME:ARGUMENT`` (episodes) or its launch argument names, e.g. the policy file; '' for none."""
    legs: bool = False
    """It drives a legged robot's joint servos (the others drive a wheeled base or an arm); the demo driver of a
    legged robot."""
    implementation: str = ''
    """``module:Class`` of its one ROS-free driver class (robotsim_learning.driving.Driver), which both the
    episode loop and the generic driver node run; '' for a driver with a node of its own (the arm's pick)."""


DRIVERS: dict[str, DriverInfo] = {info.name: info for info in (
    DriverInfo('wander', 'reactive lidar wanderer (the demo driver)', goal=False,
               node=('robotsim_learning', 'wander'), evaluated=True,
               implementation='robotsim_learning.driving:WanderDriver'),
    DriverInfo('expert', 'plans on the known world to the goal, around obstacles', goal=True,
               sim_only="reads the simulator's ground truth", node=('robotsim_learning', 'expert'), evaluated=True,
               implementation='robotsim_learning.driving:ExpertDriver'),
    DriverInfo('policy', 'a trained ONNX policy on the contract topics (sim or real)', goal=True,
               node=('robotsim_learning', 'policy'), required=True, evaluated=True, argument='policy',
               implementation='robotsim_learning.driving:PolicyDriver'),
    DriverInfo('straight', 'baseline: straight at the goal on odometry, obstacles ignored', goal=True,
               node=('robotsim_learning', 'straight'), evaluated=True,
               implementation='robotsim_learning.driving:StraightDriver'),
    DriverInfo('dagger', 'DAgger: the policy drives, the expert labels every decision', goal=True,
               sim_only="the expert labelling it reads the simulator's ground truth", argument='policy',
               implementation='robotsim_learning.driving:DaggerDriver'),
    DriverInfo('pick', "the arm picks the world's cube and places it in the world's bin", goal=False,
               sim_only='places the cube through the simulator and plans on its world',
               node=('robotsim_sim', 'pick_place'), required=True, episodes=False),
    DriverInfo('stand', 'a legged robot rises from its crouch and holds its stance (the legged demo driver)',
               goal=False, node=('robotsim_sim', 'stand_up'), episodes=False, legs=True),
)}
"""Every driver, by name."""


def bringup_drivers() -> tuple[str, ...]:
    """The values of ``driver:=`` ('' = nobody drives: publish /cmd_vel yourself)."""
    return ('',) + tuple(name for name, info in DRIVERS.items() if info.node is not None)


def goal_drivers() -> tuple[str, ...]:
    """The bringup drivers that take ``goal:=``."""
    return tuple(name for name, info in DRIVERS.items() if info.goal and info.node is not None)


def evaluated_drivers() -> tuple[str, ...]:
    """The names ``robotsim policy eval --driver/--baselines`` accepts."""
    return tuple(name for name, info in DRIVERS.items() if info.evaluated)


def episode_drivers() -> tuple[str, ...]:
    """The names ``robotsim dataset generate --driver`` accepts (before an optional ``:ARGUMENT``)."""
    return tuple(name for name, info in DRIVERS.items() if info.episodes)
