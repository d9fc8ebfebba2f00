"""One robot's MuJoCo ids and addresses in a compiled scene, looked up once (dm_control's named access).

The MJCF builder (:mod:`robotsim_core.description.mjcf`) owns the names of the elements it writes and the scene
prefixes a robot's names with its namespace; :class:`RobotBinding` is the one place that turns
(description entity, prefix) into MuJoCo ids. The simulation, the arm planner and the pick-and-place
scene index through it instead of rebuilding names.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco

from robotsim_core.description.model import RobotModel
from robotsim_core.description.mjcf import free_joint_name, joint_motor_name, position_servo_name, wheel_motor_name


@dataclass(frozen=True)
class RobotBinding:
    prefix: str
    """The robot's name prefix in the scene ('' for a single robot, 'robot1/' in a fleet)."""
    root_body: int
    """Body id of the root link (base_footprint; a fixed-base robot's mount)."""
    root_joint: int | None
    """The root's free joint (None: a fixed-base robot, welded to the world)."""
    root_qpos: int
    """qpos address of the free joint (position xyz, then quaternion wxyz); -1 without one."""
    root_dof: int
    """qvel address of the free joint (linear, then angular velocity); -1 without one."""
    joints: dict[str, int]
    """Moving URDF joint name -> MuJoCo joint id."""
    qpos: dict[str, int]
    """Moving URDF joint name -> its qpos address."""
    dofs: dict[str, int]
    """Moving URDF joint name -> its qvel (dof) address."""
    wheel_motors: dict[str, int]
    """Driven wheel joint -> its motor actuator id."""
    position_servos: dict[str, int]
    """Steering, arm or driven gripper joint -> its position actuator id."""
    bodies: dict[str, int]
    """URDF link name -> MuJoCo body id (links merged away by MuJoCo's compiler are absent)."""
    joint_motors: dict[str, int]
    """Legged robot's servoed joint -> its torque motor actuator id."""

    @classmethod
    def bind(cls, model: mujoco.MjModel, robot: RobotModel, prefix: str = '') -> RobotBinding:
        def joint_id(name: str) -> int:
            return int(model.joint(prefix + name).id)

        def actuators(names, naming) -> dict[str, int]:
            return {name: int(model.actuator(prefix + naming(name)).id) for name in names}

        tree = robot.tree
        root_joint = None if robot.fixed_base else joint_id(free_joint_name(tree.root()))
        joints = {j.name: joint_id(j.name) for j in tree.moving_joints()}
        servoed = [w.steer_joint for w in robot.drive.wheels if w.steer_joint] if robot.drive else []
        servoed += [j for arm in robot.arms for j in arm.joints + arm.gripper_joints[:1]]  # other fingers mimic it
        servoed += list(robot.held_joints)
        return cls(
            prefix=prefix,
            root_body=int(model.body(prefix + robot.body_name(tree.root())).id),
            root_joint=root_joint,
            root_qpos=-1 if root_joint is None else int(model.jnt_qposadr[root_joint]),
            root_dof=-1 if root_joint is None else int(model.jnt_dofadr[root_joint]),
            joints=joints,
            qpos={name: int(model.jnt_qposadr[j]) for name, j in joints.items()},
            dofs={name: int(model.jnt_dofadr[j]) for name, j in joints.items()},
            wheel_motors=actuators([w.joint for w in robot.drive.driven_wheels] if robot.drive else [],
                                   wheel_motor_name),
            position_servos=actuators(servoed, position_servo_name),
            bodies={link: body for link in tree.links if (body := mujoco.mj_name2id(
                model, mujoco.mjtObj.mjOBJ_BODY, prefix + robot.body_name(link))) >= 0},
            joint_motors=actuators(robot.legs.joints if robot.legs else [], joint_motor_name))


def entity_free_joint(model: mujoco.MjModel, entity: str) -> int:
    """Joint id of a world entity's free joint (a box or cylinder with mass); KeyError if it has none."""
    return int(model.joint(free_joint_name(entity)).id)
