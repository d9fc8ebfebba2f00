"""Collision-free joint-space planning through MuJoCo (robotsim_sim.arm_planning): the planning
scene's collision check, RRT-Connect with shortcutting, determinism, and bad queries as reasons."""

import importlib.util

import numpy as np
import pytest

from robotsim_core.config_schema import parse_spec
from robotsim_core.description import load_robot
from robotsim_sim.arm_planning import PlannerOptions, PlanningScene, dense_path_collision, plan
from robotsim_sim.scene import RobotPlacement
from robotsim_sim.simulation import SimOptions, Simulation
from robotsim_core.description.world_spec import WorldSpec
from rostest_helpers import WORKSPACE

DENSE = 0.001  # rad: the independent re-check samples edges ten times finer than the planner

# A post in front of the rover, as tall as its arm's shoulder; a wall 1 m ahead; a free box.
ROVER_WORLD = {
    'name': 'rover_post',
    'walls': [{'start': [1.0, -1.0], 'end': [1.0, 1.0], 'height': 0.5}],
    'cylinders': [{'name': 'post', 'position': [0.30, 0.0, 0.15], 'radius': 0.03, 'height': 0.30}],
    'boxes': [{'name': 'parcel', 'position': [-0.6, 0.6, 0.05], 'size': [0.1, 0.1, 0.1], 'mass': 0.2}],
}
# The arm leaning forward over the post's left and right sides: swinging the base joint straight
# from one to the other sweeps the wrist through the post.
LEFT = (1.2, 1.4, 0.0, 0.0)
RIGHT = (-1.2, 1.4, 0.0, 0.0)

# The UR5 on its 0.5 m pedestal (its overlay's mount) with a table in front and a pole on the table.
UR5_WORLD = {
    'name': 'ur5_cell',
    'boxes': [{'name': 'pedestal', 'position': [0.0, 0.0, 0.24], 'size': [0.16, 0.16, 0.48]},
              {'name': 'table', 'position': [0.6, 0.0, 0.2], 'size': [0.5, 0.8, 0.4]}],
    'cylinders': [{'name': 'pole', 'position': [0.45, 0.0, 0.75], 'radius': 0.05, 'height': 0.7}],
}
UR5_UP = (0.0, -np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0)


def world(spec: dict) -> WorldSpec:
    return parse_spec(WorldSpec, spec, f'{spec["name"]} (test_arm_planning.py)')


def scene(spec: dict, robot: str, **keywords) -> PlanningScene:
    return PlanningScene(world(spec), [RobotPlacement(load_robot(robot))], **keywords)


@pytest.fixture(scope='module')
def rover():
    return scene(ROVER_WORLD, 'rover')


@pytest.fixture(scope='module')
def rover_exact():
    """The same scene without margin: what 'no contact' means for the re-check."""
    return scene(ROVER_WORLD, 'rover', margin=0.0)


def assert_valid_path(result, start, goal, exact: PlanningScene, planning: PlanningScene):
    assert result.success, result.reason
    assert result.reason == ''
    np.testing.assert_array_equal(result.path[0], start)
    np.testing.assert_array_equal(result.path[-1], goal)
    assert np.all(result.path >= planning.lower) and np.all(result.path <= planning.upper)
    assert dense_path_collision(exact, result.path, DENSE) is None
    for waypoint in result.path:
        assert planning.in_collision(waypoint) is None


# ---------------------------------------------------------------------------- collision check
def test_rover_at_rest_is_free_though_its_fingers_and_wheels_touch(rover):
    # The closed fingers touch each other and the tyres the floor: contacts the plan cannot change.
    assert rover.in_collision([0.0, 0.0, 0.0, 0.0]) is None
    assert rover.in_collision(LEFT) is None and rover.in_collision(RIGHT) is None


def test_the_arm_against_its_own_base_the_floor_and_an_obstacle_names_the_pair(rover):
    hit = rover.in_collision([0.0, -1.57, -1.57, 0.0])      # folded back onto the chassis
    assert (hit.arm_body, hit.other) == ('arm_elbow_link', 'base_link') and hit.distance <= 0
    assert str(hit) == 'arm_elbow_link touches base_link'
    hit = rover.in_collision([0.0, 1.57, 1.57, 0.0])        # reaching down in front
    assert hit.other == 'floor' and hit.arm_body.startswith('arm_')
    hit = rover.in_collision([0.0, 1.4, 0.0, 0.0])          # straight through the post
    assert hit.other == 'post'


def test_margin_counts_a_near_miss_as_a_collision():
    near, exact = scene(ROVER_WORLD, 'rover'), scene(ROVER_WORLD, 'rover', margin=0.0)
    forward = [0.0, 1.57, 0.0, 0.0]                          # arm horizontal towards the wall at x = 0.95
    low, high = 0.5, 0.8                                     # base x: free at low, touching at high
    for _ in range(30):
        middle = (low + high) / 2
        exact.set_base_pose(middle, 0.0, 0.0)
        low, high = (low, middle) if exact.in_collision(forward) else (middle, high)
    for candidate in (near, exact):
        candidate.set_base_pose(low - 0.002, 0.0, 0.0)      # 2 mm short of touching
    assert exact.in_collision(forward) is None
    hit = near.in_collision(forward)
    assert hit.other == 'wall_0' and 0 < hit.distance < near.margin
    assert str(hit).endswith('is within 5 mm of wall_0')


def test_the_base_pose_moves_the_arm_with_it():
    moved = scene(ROVER_WORLD, 'rover')
    forward = [0.0, 1.57, 0.0, 0.0]
    moved.set_base_pose(-0.5, 0.0, 0.0)
    assert moved.in_collision(forward) is None
    moved.set_base_pose(0.72, 0.0, 0.0)                      # arm tip past the wall's face
    assert moved.in_collision(forward).other == 'wall_0'
    moved.set_base_pose(0.72, 0.0, np.pi)                    # turned round: the arm points away
    assert moved.in_collision(forward) is None


def test_allowed_contact_is_ignored():
    allowing = scene(ROVER_WORLD, 'rover')
    through_post = [0.0, 1.4, 0.0, 0.0]
    allowed = []
    while (hit := allowing.in_collision(through_post)) is not None:
        assert hit.other == 'post' and hit.arm_body not in allowed
        allowed.append(hit.arm_body)
        allowing.allow_contact(hit.arm_body, 'world')        # the post is a geom of the world body
    assert allowed
    with pytest.raises(ValueError, match="'no_such_body' is not a body of the scene"):
        allowing.allow_contact('arm_wrist_link', 'no_such_body')


def test_gripper_positions_move_the_mimicking_finger_too():
    cell = scene({'name': 'empty'}, 'panda')
    cell.set_positions({'panda_finger_joint1': 0.03})
    finger2 = cell.model.joint('panda_finger_joint2').qposadr[0]
    assert cell.data.qpos[finger2] == pytest.approx(0.03)
    with pytest.raises(ValueError, match="positions: 'thumb' is not a moving joint of robot panda"):
        cell.set_positions({'thumb': 0.0})


def test_world_state_of_a_simulation_places_its_free_boxes(rover):
    """The planning model has the simulator's qpos layout: a simulation's state copies over."""
    placements = [RobotPlacement(load_robot('rover'))]
    sim = Simulation(world(ROVER_WORLD), placements, SimOptions(cameras=False))
    try:
        copy = PlanningScene(world(ROVER_WORLD), placements)
        reach = [np.pi / 2, 1.2, 0.0, 0.0]                   # the arm over the rover's left side
        assert copy.in_collision(reach) is None
        assert sim.set_entity_pose('parcel', (0.07, 0.25, 0.17), (1.0, 0.0, 0.0, 0.0)) is None
        copy.set_world_state(sim.data.qpos)
        assert copy.in_collision(reach).other == 'parcel'
        with pytest.raises(ValueError, match='qpos: expected'):
            copy.set_world_state(sim.data.qpos[:-1])
    finally:
        sim.close()


# ---------------------------------------------------------------------------- planning
def test_rover_plans_around_the_post_where_the_straight_line_collides(rover, rover_exact):
    straight = np.array([LEFT, RIGHT])
    edge, hit = dense_path_collision(rover_exact, straight, DENSE)
    assert edge == 0 and hit.other == 'post'
    result = plan(rover, LEFT, RIGHT, seed=0)
    assert_valid_path(result, LEFT, RIGHT, rover_exact, rover)
    assert result.iterations >= 1 and len(result.path) >= 3
    assert result.raw_waypoints >= len(result.path)
    assert result.collision_checks > 0 and result.planning_time > 0


def test_same_seed_same_path_and_the_seed_matters(rover):
    first = plan(rover, LEFT, RIGHT, seed=7)
    again = plan(rover, LEFT, RIGHT, seed=7)
    assert first.success and again.success
    assert first.path.tobytes() == again.path.tobytes()
    assert (first.iterations, first.collision_checks) == (again.iterations, again.collision_checks)
    others = [plan(rover, LEFT, RIGHT, seed=seed).path for seed in (8, 9, 10)]
    assert any(other.shape != first.path.shape or not np.array_equal(other, first.path) for other in others)


def test_free_straight_line_needs_no_search(rover, rover_exact):
    start, goal = (0.5, 0.3, 0.2, 0.0), (-0.5, 0.3, 0.2, 0.0)  # upright enough to pass over the post
    result = plan(rover, start, goal)
    assert_valid_path(result, start, goal, rover_exact, rover)
    assert result.iterations == 0 and len(result.path) == 2


def test_goal_given_by_joint_name(rover, rover_exact):
    goal = dict(zip(rover.joint_names, RIGHT))
    result = plan(rover, LEFT, goal, seed=1)
    assert_valid_path(result, LEFT, RIGHT, rover_exact, rover)


def test_ur5_on_a_pedestal_plans_around_a_pole_on_the_table():
    cell, exact = scene(UR5_WORLD, 'ur5'), scene(UR5_WORLD, 'ur5', margin=0.0)
    left, right = (1.0, -0.6, 1.2, -0.6, 0.0, 0.0), (-1.0, -0.6, 1.2, -0.6, 0.0, 0.0)
    assert dense_path_collision(exact, np.array([left, right]), DENSE)[1].other == 'pole'
    result = plan(cell, left, right, seed=0)
    assert_valid_path(result, left, right, exact, cell)


def test_panda_plans_over_a_block_on_its_table():
    spec = {'name': 'panda_table',
            'boxes': [{'name': 'table', 'position': [0.6, 0.0, 0.075], 'size': [0.4, 0.8, 0.15]},
                      {'name': 'block', 'position': [0.6, 0.0, 0.3], 'size': [0.08, 0.08, 0.3]}]}
    cell, exact = scene(spec, 'panda'), scene(spec, 'panda', margin=0.0)
    left = (0.5, 0.3, 0.0, -2.0, 0.0, 2.3, 0.785)         # hand 0.3 m above the table, left of the block
    right = (-0.5, 0.3, 0.0, -2.0, 0.0, 2.3, 0.785)
    assert dense_path_collision(exact, np.array([left, right]), DENSE)[1].other == 'block'
    result = plan(cell, left, right, seed=0)
    assert_valid_path(result, left, right, exact, cell)


# ---------------------------------------------------------------------------- bad queries
def test_start_or_goal_in_collision_is_a_reason(rover):
    result = plan(rover, [0.0, 1.4, 0.0, 0.0], RIGHT)
    assert not result.success and result.path.shape == (0, 4)
    assert result.reason.startswith('start in collision: arm_') and result.reason.endswith('touches post')
    result = plan(rover, LEFT, [0.0, -1.57, -1.57, 0.0])
    assert result.reason == 'goal in collision: arm_elbow_link touches base_link'


@pytest.mark.parametrize('start, goal, reason', [
    (LEFT, (0.0, 2.0, 0.0, 0.0), 'goal outside joint limits: arm_shoulder_joint 2 > 1.57'),
    ((-3.0, 1.4, 0.0, 0.0), RIGHT, 'start outside joint limits: arm_base_joint -3 < -2.9'),
    (LEFT, (0.0, 1.0, 0.0), 'goal has 3 values, expected 4 (arm_base_joint, arm_shoulder_joint, arm_elbow_joint, '
                            'arm_wrist_joint)'),
    (LEFT, (0.0, float('nan'), 0.0, 0.0), 'goal: arm_shoulder_joint is nan, expected a finite number'),
    (None, RIGHT, 'start: expected 4 numbers (arm_base_joint, arm_shoulder_joint, arm_elbow_joint, arm_wrist_joint), '
                  'got None'),
    (LEFT, {'arm_base_joint': 0.0, 'gripper': 0.0}, "goal names unknown joint 'gripper'; arm 'arm' has joints "
                                                    'arm_base_joint, arm_shoulder_joint, arm_elbow_joint, '
                                                    'arm_wrist_joint'),
    (LEFT, {'arm_base_joint': 0.0}, "goal lacks joint 'arm_shoulder_joint'; expected values for arm_base_joint, "
                                    'arm_shoulder_joint, arm_elbow_joint, arm_wrist_joint'),
])
def test_bad_query_is_a_reason_not_an_exception(rover, start, goal, reason):
    result = plan(rover, start, goal)
    assert not result.success
    assert result.reason == reason


def test_start_a_hair_outside_a_limit_starts_on_it(rover, rover_exact):
    start = (0.5, 1.57 + 0.002, 0.0, 0.0)                     # a measured state overshooting the limit
    goal = (-0.5, 1.0, 0.0, 0.0)
    result = plan(rover, start, goal)
    assert result.success, result.reason
    assert result.path[0][1] == 1.57


def test_no_path_between_two_sides_of_the_pedestal():
    """Upright at shoulder_lift -pi/2 and at 3 pi/2 look alike, but between them within the +-2 pi
    limits the upper arm would have to point down through the pedestal."""
    cell = scene(UR5_WORLD, 'ur5')
    other_side = (0.0, 3 * np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0)
    assert cell.in_collision(UR5_UP) is None and cell.in_collision(other_side) is None
    result = plan(cell, UR5_UP, other_side, options=PlannerOptions(max_iterations=300))
    assert not result.success and result.reason == 'no path within 300 iterations'
    assert result.iterations == 300


def test_options_and_scene_arguments_are_checked():
    with pytest.raises(ValueError, match='PlannerOptions.resolution: expected a finite number > 0, got 0'):
        PlannerOptions(resolution=0)
    with pytest.raises(ValueError, match='PlannerOptions.max_iterations: expected an integer >= 1'):
        PlannerOptions(max_iterations=0)
    with pytest.raises(ValueError, match=r"arm: expected one of \['arm'\]"):
        scene(ROVER_WORLD, 'rover', arm='left_arm')
    with pytest.raises(ValueError, match='has no arm to plan for'):
        scene(ROVER_WORLD, 'racer')
    with pytest.raises(ValueError, match=r'q: expected 4 values \(arm_base_joint, .*\), got shape \(3,\)'):
        scene(ROVER_WORLD, 'rover').in_collision([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r'fixed to the world \(fixed_base\)'):
        scene(UR5_WORLD, 'ur5').set_base_pose(1.0, 0.0, 0.0)


# ---------------------------------------------------------------------------- benchmark section
def test_planning_benchmark_writes_raw_rows_and_a_summary(tmp_path):
    spec = importlib.util.spec_from_file_location('bench_arm_planning', WORKSPACE / 'bench' / 'bench_arm_planning.py')
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.run_planning(tmp_path, seed=3, queries=3, arms=['rover'])
    assert len(rows) == 3 and (tmp_path / bench.CSV_NAME).is_file()
    header = (tmp_path / bench.CSV_NAME).read_text().splitlines()[0]
    assert header.split(',') == list(bench.COLUMNS)
    assert all(row['success'] == 1 and row['recheck'] == 'ok' for row in rows)
    again = bench.run_planning(tmp_path / 'again', seed=3, queries=3, arms=['rover'])
    assert [(r['start'], r['goal'], r['path_length_rad']) for r in rows] == \
           [(r['start'], r['goal'], r['path_length_rad']) for r in again]
    summary = bench.summarize(rows)
    assert summary['rover']['successes'] == 3 and summary['rover']['wilson95'][0] < 1.0
    assert any(line.startswith('| rover | 3/3 (100.0 %) | ') for line in bench.markdown(summary, 3, 3))


def test_planning_is_a_section_of_the_arm_benchmark_and_check_compares_its_rows(tmp_path):
    """bench/bench_arm.py --sections planning: planning.csv and the summary; --check repeats every row but
    the times, and a row that differs (another path) fails it."""
    import csv
    import json

    from workspace_setup import run_python
    script = WORKSPACE / 'bench' / 'bench_arm.py'
    first, second = tmp_path / 'first', tmp_path / 'second'
    run_python(script, '--sections', 'planning', '--planning-queries', '2', '--arms', 'rover', '--seed', '5',
               '--out', str(first), timeout=300)
    with open(first / 'planning.csv', newline='') as stream:
        rows = list(csv.DictReader(stream))
    assert [(row['arm'], row['query'], row['success']) for row in rows] == [('rover', '0', '1'), ('rover', '1', '1')]
    summary = json.loads((first / 'summary.json').read_text())
    assert summary['settings']['planning_queries'] == 2 and summary['planning']['rover']['successes'] == 2
    assert '| rover | 2/2 (100.0 %) | ' in (first / 'summary.md').read_text()
    run_python(script, '--out', str(second), '--check', str(first), timeout=300)
    rows[1]['path_length_rad'] = str(float(rows[1]['path_length_rad']) + 0.01)
    rows[0]['planning_time_ms'] = '123456'  # times are not compared
    with open(first / 'planning.csv', 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    failed = run_python(script, '--out', str(second), '--check', str(first), timeout=300, check=False)
    assert failed.returncode == 1, failed
    differences = [line for line in failed.stderr.splitlines() if "planning {'arm': 'rover'" in line]
    assert len(differences) == 1 and "'query': '1'}: path_length_rad was" in differences[0], failed.stderr
