"""The pick-and-place demo through ROS (`make sim DEMO=pick`: scripts/run-sim.sh): the simulator with
world pick and the pick_place node, which puts the cube at the seeded placement (sim/set_entity_pose),
plans with the arm core and picks and places the cube through arm_controller/follow_joint_trajectory
and gripper_controller/gripper_cmd; the bringup ends with the node's exit status. Wall-clock timeouts
only guard against hangs."""

from __future__ import annotations

from rostest_helpers import WORKSPACE, Launch


def test_the_pick_demo_places_the_cube_through_the_actions(tmp_path):
    run = Launch([str(WORKSPACE / 'scripts' / 'run-sim.sh'), 'cameras:=false'],
                 env={'DEMO': 'pick', 'FIRMWARE': '0', 'SEED': '2', 'REPORT': str(tmp_path / 'report.png')})
    try:
        code = run.finish(timeout=600)
    finally:
        run.stop()
    assert code == 0, run.text[-4000:]
    text = run.text
    assert 'cube placed at (' in text and '(placement seed 2)' in text
    for step in ('to the pre-grasp', 'descend', 'closed on the cube: fingers at', 'lift', 'carry to the bin',
                 'lower into the bin', 'retreat', 'pick and place done'):
        assert step in text, step
    assert 'gripper_controller/gripper_cmd: goal succeeded (stalled)' in text  # the fingers stopped on the cube
    assert 'required node pick_place exited with status 0' in text
