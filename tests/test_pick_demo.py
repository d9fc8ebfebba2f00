"""The pick-and-place demo through ROS (`make sim DEMO=pick`: scripts/run-sim.sh): the simulator with
world pick and the pick_place node, which puts the cube at the seeded placement (sim/set_entity_pose),
plans with the arm core, picks and places the cube through arm_controller/follow_joint_trajectory and
gripper_controller/gripper_cmd, and reads the cube's pose from sim/get_entity_pose to say whether it
lies in the bin; the bringup ends with the node's exit status. Also the sim/get_entity_pose service
itself. Wall-clock timeouts only guard against hangs."""

from __future__ import annotations

import math

import pytest

from robotsim_core.description import load_robot
from robotsim_msgs.msg import SimStatus
from robotsim_msgs.srv import GetEntityPose, SetEntityPose
from robotsim_sim.arm_motion import ArmMotionPlanner
from robotsim_sim.pick_place import PickPlaceOptions, PickWorld, run_in_simulation, sample_placements
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from rostest_helpers import RELIABLE, WORKSPACE, Launch, NodeProcess, Observer

BOTTOMLESS = WORKSPACE / 'tests' / 'data' / 'worlds' / 'pick_bottomless.yaml'


def run_demo(tmp_path, seed: int, world: str | None = None) -> tuple[int, str]:
    env = {'DEMO': 'pick', 'FIRMWARE': '0', 'SEED': str(seed), 'REPORT': str(tmp_path / 'report.png')}
    if world:
        env['WORLD'] = world
    run = Launch([str(WORKSPACE / 'scripts' / 'run-sim.sh'), 'cameras:=false'], env=env)
    try:
        code = run.finish(timeout=600)
    finally:
        run.stop()
    return code, run.text


def test_the_pick_demo_places_the_cube_through_the_actions(tmp_path):
    code, text = run_demo(tmp_path, seed=2)
    assert code == 0, text[-4000:]
    assert 'cube placed at (' in text and '(placement seed 2)' in text
    for step in ('to the pre-grasp', 'descend', 'closed on the cube: fingers at', 'lift', 'carry to the bin',
                 'lower into the bin', 'retreat'):
        assert step in text, step
    assert 'gripper_controller/gripper_cmd: goal succeeded (stalled)' in text  # the fingers stopped on the cube
    # The cube's pose came from the simulator: it rose with the gripper and lies in the bin.
    assert 'lifted: the cube rose ' in text
    assert 'the cube lies in the bin at (' in text and 'pick and place done: placed in the bin at (' in text
    assert 'not observable' not in text
    assert 'required node pick_place exited with status 0' in text


def test_a_cube_that_misses_the_bin_is_reported_not_in_bin_as_the_core_reports_it(tmp_path):
    """A bin without a bottom (its walls 20 mm above the floor): the released cube falls through. The core
    and the node over ROS both end with 'not_in_bin' at the check, and the node exits 1."""
    world = load_world(resolve_world_path(str(BOTTOMLESS)))
    robots = [RobotPlacement(load_robot('rover'))]
    task = PickWorld.from_world(world, PickPlaceOptions())
    placement = sample_placements(ArmMotionPlanner(world, robots), task, 1, 0)[0]
    core, _ = run_in_simulation(world, robots, placement)
    assert (core.success, core.code, core.stage) == (False, 'not_in_bin', 'check'), core.reason
    assert core.cube_end[2] < task.bin.floor  # on the floor under the bin

    code, text = run_demo(tmp_path, seed=0, world=str(BOTTOMLESS))
    assert code == 1, text[-4000:]
    assert '(placement seed 0)' in text and 'lower into the bin' in text
    assert 'pick and place failed (not_in_bin) in stage check: the cube ended at (' in text, text[-3000:]
    assert 'the cube lies in the bin' not in text
    assert 'required node pick_place exited with status 1' in text


@pytest.fixture(scope='module')
def paused_pick_world():
    """The simulator with world pick, paused at its start (poses stay exactly as set)."""
    node = NodeProcess('robotsim_sim', 'sim_node', {'world': 'pick', 'cameras': False, 'start_paused': True})
    observer = Observer('get_entity_pose_test')
    observer.watch('/sim/status', SimStatus, RELIABLE)  # published while paused too (/clock is not)
    try:
        assert observer.spin_until(lambda: observer.messages['/sim/status'], 90), node.output()
        yield node, observer
    finally:
        observer.close()
        node.stop()


def test_get_entity_pose_reads_free_bodies_and_robots_in_the_world_frame(paused_pick_world):
    node, observer = paused_pick_world
    cube = observer.call(GetEntityPose, '/sim/get_entity_pose', GetEntityPose.Request(entity='cube'))
    assert cube.success and cube.message == 'ok'
    assert cube.pose.header.frame_id == 'world'
    assert cube.pose.header.stamp == observer.messages['/sim/status'][-1].sim_time  # paused: the same step
    position, orientation = cube.pose.pose.position, cube.pose.pose.orientation
    assert (position.x, position.y, position.z) == pytest.approx((0.23, -0.06, 0.0125))  # as config/worlds/pick.yaml
    assert (orientation.w, orientation.x, orientation.y, orientation.z) == pytest.approx((1, 0, 0, 0))
    rover = observer.call(GetEntityPose, '/sim/get_entity_pose', GetEntityPose.Request(entity='rover'))
    assert rover.success and (rover.pose.pose.position.x, rover.pose.pose.position.y) == pytest.approx((0, 0))

    # What set_entity_pose sets, get_entity_pose reads back (paused: nothing moves in between).
    request = SetEntityPose.Request(entity='cube')
    request.pose.position.x, request.pose.position.y, request.pose.position.z = 0.5, -0.4, 0.2
    request.pose.orientation.w, request.pose.orientation.z = math.cos(0.3), math.sin(0.3)
    assert observer.call(SetEntityPose, '/sim/set_entity_pose', request).success
    moved = observer.call(GetEntityPose, '/sim/get_entity_pose', GetEntityPose.Request(entity='cube')).pose.pose
    assert (moved.position.x, moved.position.y, moved.position.z) == pytest.approx((0.5, -0.4, 0.2), abs=1e-12)
    assert (moved.orientation.w, moved.orientation.z) == pytest.approx((math.cos(0.3), math.sin(0.3)), abs=1e-12)


def test_get_entity_pose_refuses_an_unknown_name_with_the_names_there_are(paused_pick_world):
    node, observer = paused_pick_world
    for name, expected in (('unicorn', "entity: no entity 'unicorn'; expected one of cube, rover"),
                           ('', 'entity: empty name; expected one of cube, rover')):
        refused = observer.call(GetEntityPose, '/sim/get_entity_pose', GetEntityPose.Request(entity=name))
        assert not refused.success and refused.message == expected
        assert refused.pose.header.frame_id == '' and refused.pose.pose.position.x == 0.0
    # The simulator serves on.
    assert observer.call(GetEntityPose, '/sim/get_entity_pose', GetEntityPose.Request(entity='cube')).success
    assert node.process.poll() is None
    assert "refused sim/get_entity_pose: entity: no entity 'unicorn'" in node.output()
    assert 'Traceback' not in node.output()
