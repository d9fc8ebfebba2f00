"""Pick and place with the rover's arm in the simulator core (robotsim_sim.pick_place, ROS-free): a
real grasp (the cube rises only because the fingers squeeze it: no weld, no teleport) and the cube
ends in the bin; failures end with a code and a reason (an unreachable cube, a grasp that closes on
nothing); seeded placements; arm motions from tool targets with failure codes (robotsim_sim.arm_motion);
a grasped body carried by the planning scene."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from robotsim_core.config_schema import parse_spec
from robotsim_core.description import load_robot
from robotsim_sim.arm_motion import DEFAULT_PITCHES, ArmMotionPlanner
from robotsim_sim.pick_place import (PickAndPlace, PickPlaceOptions, PickSetupError, PickWorld, PlacementRegion,
                                     SimulationExecutor, run_in_simulation, sample_placements)
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation
from robotsim_core.description.world_spec import WorldSpec
from rostest_helpers import WORKSPACE

PICK_WORLD = WORKSPACE / 'config' / 'worlds' / 'pick.yaml'


@pytest.fixture(scope='module')
def world():
    return load_world(str(PICK_WORLD))


@pytest.fixture(scope='module')
def robots():
    return [RobotPlacement(load_robot('rover'))]


@pytest.fixture(scope='module')
def task(world):
    return PickWorld.from_world(world, PickPlaceOptions())


@pytest.fixture(scope='module')
def planner(world, robots):
    return ArmMotionPlanner(world, robots)


class CubeRecorder:
    """After every physics step: the cube's position, its contacts (by the other geom's body) and the fingers."""

    def __init__(self):
        self.sim = None
        self.positions, self.touching, self.fingers = [], [], []

    def __call__(self):
        sim = self.sim
        model, data = sim.model, sim.data
        cube = model.body('cube').id
        self.positions.append(data.xpos[cube].copy())
        bodies = set()
        for contact in data.contact[:data.ncon]:
            a, b = model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]
            if cube in (a, b) and contact.dist < 1e-4:
                other = b if a == cube else a
                bodies.add(model.body(other).name if other else model.geom(contact.geom2 if a == cube else contact.geom1).name)
        self.touching.append(bodies)
        self.fingers.append(float(data.qpos[model.joint('arm_left_finger_joint').qposadr[0]]))


def run_recorded(world, robots, placement, seed):
    """run_in_simulation with a CubeRecorder watching every step."""
    recorder = CubeRecorder()
    original = Simulation.step

    def step(self):
        recorder.sim = self
        return original(self)
    Simulation.step = step
    try:
        result, sim = run_in_simulation(world, robots, placement, seed=seed, on_step=recorder)
    finally:
        Simulation.step = original
    return result, sim, recorder


# ---------------------------------------------------------------------------- the whole task
@pytest.mark.parametrize('index', [0, 3])
def test_the_cube_is_lifted_by_the_fingers_alone_and_ends_in_the_bin(world, robots, task, planner, index):
    placement = sample_placements(planner, task, index + 1, seed=0)[index]
    result, sim, recorder = run_recorded(world, robots, placement, seed=index)
    assert result.success, (result.code, result.reason, result.log)
    assert result.code == '' and result.stage == 'done'

    positions = np.array(recorder.positions)
    start = positions[0]
    assert math.dist(start[:2], placement[:2]) < 0.005 and abs(start[2] - task.cube.size[2] / 2) < 0.002
    # Lifted: the cube rose well off the floor ...
    highest = int(np.argmax(positions[:, 2]))
    assert positions[highest, 2] > start[2] + 0.04
    # ... touching both fingers and nothing else (no floor, no weld: MuJoCo has no equality on the cube).
    assert recorder.touching[highest] == {'arm_left_finger_link', 'arm_right_finger_link'}, recorder.touching[highest]
    assert recorder.fingers[highest] > 0.3 * task.cube_size
    cube_body = sim.model.body('cube').id
    for constraint in range(sim.model.neq):
        assert cube_body not in (sim.model.eq_obj1id[constraint], sim.model.eq_obj2id[constraint])
    # No teleport: between two 2 ms steps the cube never moves more than 5 mm (2.5 m/s).
    assert np.linalg.norm(np.diff(positions, axis=0), axis=1).max() < 0.005
    # In the bin at the end, resting on its floor.
    end = positions[-1]
    assert task.bin.contains(end, task.cube_size / 2 * 0.9)
    assert abs(end[2] - task.cube.size[2] / 2) < 0.003
    assert result.cube_end == pytest.approx(tuple(end), abs=1e-9)
    assert result.cube_rise > 0.04 and result.grip_width == pytest.approx(task.cube_size / 2, abs=0.004)


def test_a_cube_out_of_reach_is_refused_with_a_reason_and_nothing_moves(world, robots, task):
    result, sim, recorder = run_recorded(world, robots, (0.6, 0.0, 0.0), seed=0)
    assert not result.success
    assert result.code == 'unreachable' and result.stage == 'grasp'
    assert 'no approach pitch reaches the cube at (0.600, 0.000) m' in result.reason
    assert 'from the shoulder' in result.reason  # the solver's reason: the distance against the reach
    positions = np.array(recorder.positions)
    assert np.abs(positions - positions[0]).max() < 1e-3
    arm = [sim.data.qpos[sim.model.joint(name).qposadr[0]] for name in
           ('arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint', 'arm_wrist_joint')]
    assert np.abs(arm).max() < 0.02


class BlindExecutor(SimulationExecutor):
    """The simulator core seen as the ROS side sees it: no object poses."""

    def entity_pose(self, name):
        return None


def test_a_grasp_at_the_wrong_place_closes_on_nothing_and_says_so(world, robots, task):
    sim = Simulation(world, robots, SimOptions(cameras=False))
    sim.set_entity_pose('cube', (0.23, -0.06, task.cube.size[2] / 2), (1.0, 0.0, 0.0, 0.0))
    planner = ArmMotionPlanner(world, robots)
    executor = BlindExecutor(sim, planner)
    executor.wait(0.3)
    believed = np.eye(4)
    believed[:3, 3] = (0.23, 0.04, task.cube.size[2] / 2)  # 10 cm off: the fingers close on air
    result = PickAndPlace(planner, task).run(executor, cube_pose=believed)
    assert not result.success
    assert result.code == 'missed' and result.stage == 'close'
    assert 'nothing between them' in result.reason
    assert result.grip_width < 0.002


# ---------------------------------------------------------------------------- placements and the task's world
def test_placements_are_seeded_inside_the_region_and_clear_of_the_rover_and_the_bin(planner, task):
    region = PlacementRegion()
    first = sample_placements(planner, task, 30, seed=5, region=region)
    assert first == sample_placements(planner, task, 30, seed=5, region=region)
    assert first != sample_placements(planner, task, 30, seed=6, region=region)
    axis = planner.root_to_world(planner.chain.pitch_origin)
    bin_ = task.bin
    for x, y, yaw in first:
        radius = math.hypot(x - axis[0], y - axis[1])
        assert region.min_radius - 1e-9 <= radius <= region.max_radius + 1e-9
        bearing = math.atan2(y - axis[1], x - axis[0])
        assert region.min_bearing - 1e-9 <= bearing <= region.max_bearing + 1e-9
        assert not (bin_.outer_min[0] - region.clearance < x < bin_.outer_max[0] + region.clearance
                    and bin_.outer_min[1] - region.clearance < y < bin_.outer_max[1] + region.clearance)
        assert x > 0.17 + region.clearance or abs(y) > 0.13 + region.clearance  # the rover's outline


def test_the_bin_is_read_from_its_walls(task):
    assert task.bin.centre == pytest.approx((0.20, 0.14))
    assert task.bin.inner_half == pytest.approx((0.04, 0.04))
    assert task.bin.floor == pytest.approx(0.0) and task.bin.top == pytest.approx(0.03)
    assert task.cube_size == pytest.approx(0.025) and task.cube.mass == pytest.approx(0.03)


@pytest.mark.parametrize('boxes, expected', [
    ([], "boxes: expected a box named 'cube' with a mass > 0"),
    ([{'name': 'cube', 'position': [0.2, 0, 0.01], 'size': [0.02, 0.02, 0.02]}], 'it is fixed (mass 0)'),
    ([{'name': 'cube', 'position': [0.2, 0, 0.01], 'size': [0.02, 0.02, 0.02], 'mass': 0.02}],
     'expected at least 3 fixed boxes named bin_*'),
])
def test_a_world_without_the_cube_or_the_bin_is_refused_in_one_line(boxes, expected):
    world = parse_spec(WorldSpec, {'name': 'no_task', 'boxes': boxes}, 'no_task.yaml')
    with pytest.raises(PickSetupError) as raised:
        PickWorld.from_world(world, PickPlaceOptions())
    message = str(raised.value)
    assert expected in message and '\n' not in message and message.startswith('no_task.yaml: ')


def test_bad_options_are_refused_in_one_line():
    with pytest.raises(PickSetupError, match=r'^PickPlaceOptions.lift: expected a finite number > 0, got -0.1$'):
        PickPlaceOptions(lift=-0.1).check()
    with pytest.raises(PickSetupError, match=r'^PickPlaceOptions.pitches: expected pitches from -pi/2'):
        PickPlaceOptions(pitches=(0.5,)).check()


# ---------------------------------------------------------------------------- arm motions from tool targets
def test_a_reach_is_planned_timed_and_ends_at_the_target(planner):
    target = (0.20, -0.08, 0.02)   # base_link frame: in front, 65 mm above the floor
    plan = planner.reach(target, -math.pi / 2, np.zeros(4))
    assert plan.success and plan.code == '' and plan.reason == ''
    tool = planner.chain.forward(plan.goal)
    assert np.linalg.norm(tool[:3, 3] - target) < 1e-4
    assert planner.chain.tool_pitch(tool) == pytest.approx(-math.pi / 2, abs=1e-3)
    assert plan.trajectory.positions[-1] == pytest.approx(plan.goal)
    assert plan.trajectory.positions[0] == pytest.approx(np.zeros(4))
    assert plan.goal[0] == pytest.approx(math.atan2(-0.08, 0.20 - 0.07), abs=1e-3)  # the arm faces the target
    assert plan.goal[1] > 0  # leaning forward, not back over the base


@pytest.mark.parametrize('target, pitch, code, words', [
    ((0.60, 0.0, 0.0), -math.pi / 2, 'unreachable', 'reach 0.260 m'),
    ((0.20, -0.08, -0.03), -math.pi / 2, 'target_in_collision', 'touches floor'),
    ((0.20, math.nan, 0.0), None, 'bad_request', 'position: expected 3 finite numbers'),
    ((0.20, 0.0, 0.0), math.inf, 'bad_request', 'pitch: expected a finite angle'),
])
def test_a_reach_that_cannot_be_made_says_why(planner, target, pitch, code, words):
    plan = planner.reach(target, pitch, np.zeros(4))
    assert not plan.success and plan.code == code, plan.reason
    assert words in plan.reason and '\n' not in plan.reason
    assert plan.trajectory is None


def test_without_a_pitch_the_first_reachable_one_is_taken(planner):
    target = (0.12, 0.0, 0.325)  # high above the shoulder: not with the tool pointing down
    expected = next(pitch for pitch in DEFAULT_PITCHES
                    if planner.goal_configuration(target, pitch, np.zeros(4)).success)
    assert expected != DEFAULT_PITCHES[0]
    plan = planner.reach(target, None, np.zeros(4))
    assert plan.success, plan.reason
    assert plan.pitch == expected
    assert planner.chain.tool_pitch(planner.chain.forward(plan.goal)) == pytest.approx(expected, abs=1e-3)


# ---------------------------------------------------------------------------- a grasped body in the planning scene
def test_an_attached_cube_moves_with_the_wrist_and_its_contacts_count(world, robots):
    motion = ArmMotionPlanner(world, robots)
    scene = motion.scene
    above = motion.goal_configuration(motion.world_to_root((0.22, -0.10, 0.10)), -math.pi / 2, np.zeros(4)).goal
    low = motion.goal_configuration(motion.world_to_root((0.22, -0.10, 0.05)), -math.pi / 2, above).goal
    assert scene.in_collision(above) is None and scene.in_collision(low) is None
    # The cube held 40 mm below the tool point: free up high, in the floor down low.
    held = motion.tool_pose(above)[:3, 3] - (0, 0, 0.04)
    motion.set_entity_pose('cube', held)
    scene.attach('cube', 'arm_wrist_link', above)
    assert scene.attached == ['cube']
    assert scene.in_collision(above) is None
    hit = scene.in_collision(low)
    assert (hit.arm_body, hit.other) == ('cube', 'floor')
    mujoco.mj_kinematics(scene.model, scene.data)
    carried = scene.data.xpos[scene.model.body('cube').id]
    assert np.linalg.norm(carried - (motion.tool_pose(low)[:3, 3] - (0, 0, 0.04))) < 1e-9
    scene.detach('cube')
    assert scene.attached == [] and scene.in_collision(low) is None
    with pytest.raises(ValueError, match="attach: body 'bin_left' is not a body of the scene"):
        scene.attach('bin_left', 'arm_wrist_link', above)  # a bin wall is a fixed geom of the world
    with pytest.raises(ValueError, match="attach: body 'base_link' is not a free body"):
        scene.attach('base_link', 'arm_wrist_link', above)
    with pytest.raises(ValueError, match="attach: link 'base_link' is not moved by the arm joints"):
        scene.attach('cube', 'base_link', above)
