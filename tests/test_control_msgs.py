"""The compat control_msgs (bare machine): built from the official control_msgs 6.10.0 definitions
(ROS 2 Kilted; compat/control_msgs/UPSTREAM.md), with the official type hashes, and working for
rclpy actions between two real processes.

Where the expected hashes come from: the generated code (rosidl_generator_c ``*__description.c``)
of an independent ROS 2 build of control_msgs published in a public repository gives every hash
below except the three that control_msgs 6.3.0 changed (FollowJointTrajectory's feedback gained
``index`` and ``multi_dof_index``; that build predates it). Those three are rosidl's hashes of the
unchanged 6.10.0 definitions, and :func:`test_an_independent_hash_implementation_agrees` recomputes
the message ones with a second implementation (rosbags' RIHS01) from the vendored text.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_share_directory

from conftest import ROS_NODES, WORKSPACE, run_python

COMPAT = WORKSPACE / 'compat' / 'control_msgs'

# From the independent build (unchanged from control_msgs 5.x through 6.10.0).
OFFICIAL_HASHES = {
    'control_msgs/action/FollowJointTrajectory_Goal':
        'RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205',
    'control_msgs/action/FollowJointTrajectory_Result':
        'RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220',
    'control_msgs/action/FollowJointTrajectory_SendGoal':
        'RIHS01_b13789dddc325a7a962825c45e28c77d37237ec129dd0c34dc5994562938c57f',
    'control_msgs/action/FollowJointTrajectory_SendGoal_Request':
        'RIHS01_179c93691f1f6d1d115881ff88c3917b7cc6eac2ba4bf56766cc7c4389e19ef1',
    'control_msgs/action/FollowJointTrajectory_SendGoal_Response':
        'RIHS01_e6a48ba740ae254500129a877f0b071be8663a115da1a539b74599cc97921fbf',
    'control_msgs/action/FollowJointTrajectory_SendGoal_Event':
        'RIHS01_906dd566308db02673c73c654f69bdd84738589629c1bc2841ddb49059ed1c6f',
    'control_msgs/action/FollowJointTrajectory_GetResult':
        'RIHS01_e3ceb38e3e1867c8dc0f46014df26e90eb93422f27e9e97f936e07f94be4bc8b',
    'control_msgs/action/FollowJointTrajectory_GetResult_Request':
        'RIHS01_ecf7ea8463d3beec7084bca75216d0b01b87b6e1e4e09679bb26093041efcbe9',
    'control_msgs/action/FollowJointTrajectory_GetResult_Response':
        'RIHS01_08eefbaa146ce02ba45898d5e99160afd6c4c54a30d159aee0f2ca6035b1580f',
    'control_msgs/action/FollowJointTrajectory_GetResult_Event':
        'RIHS01_43161a489e52daaa5bbc2fa74f73f1804d099574fcf8f819170807d75472662a',
    'control_msgs/msg/JointTolerance': 'RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648',
    'control_msgs/msg/JointComponentTolerance':
        'RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4',
    'control_msgs/action/GripperCommand': 'RIHS01_e17c0e644eccf14bea84a0a93e0977182872c2eb7873ca6694900059b46dbc84',
    'control_msgs/action/GripperCommand_Goal': 'RIHS01_607d9f41eb241e1922e90f02125e87ae6bfb78f7f64a71dc92630263d01f8b6d',
    'control_msgs/action/GripperCommand_Result':
        'RIHS01_bf512d5aa6a0e4fe4d8be22b2ec4a1973c3d250fa1f65e47450322c25c45c0a0',
    'control_msgs/action/GripperCommand_Feedback':
        'RIHS01_8f7c520077bab528bb9161ee3b83c81eee1f8aecadb8922ce82c79d667a819c4',
    'control_msgs/action/GripperCommand_FeedbackMessage':
        'RIHS01_392ff03fcd872f9dc2405cbeb2897fcf011ad9998458b6aa85c603b8a49e431d',
    'control_msgs/action/GripperCommand_SendGoal':
        'RIHS01_6bf8cc4ce80cd499e7dd3258c03c50c3fa6672b469ff8355339ef1df77fcd212',
    'control_msgs/action/GripperCommand_SendGoal_Request':
        'RIHS01_1b869b7b4042272dc0f8ed65468c4e57c9e532ea5e53ce74fda0767eefbfa983',
    'control_msgs/action/GripperCommand_SendGoal_Response':
        'RIHS01_0c8dda5e9d39ab5e3162b66e79b292a4258659ddfcf8722d39463f718b6c59bc',
    'control_msgs/action/GripperCommand_SendGoal_Event':
        'RIHS01_5c80eac98bcde7d64faf4b94f77ef69f12e442870dc1eba26d25b4681ef9ac0a',
    'control_msgs/action/GripperCommand_GetResult':
        'RIHS01_7e60a7606063d4a2728d21badac099e68b734a196ac3ab42d1d4c668eb0bb3cd',
    'control_msgs/action/GripperCommand_GetResult_Request':
        'RIHS01_1a3308da3acbc62cd8a3c823de80ba9e5f9b6bb6f6056d1ad6b29f5f285f97ae',
    'control_msgs/action/GripperCommand_GetResult_Response':
        'RIHS01_32ed5e1b5906767a3e9914dca4c4aed22529918f6c2360e6fb382363d4df4b45',
    'control_msgs/action/GripperCommand_GetResult_Event':
        'RIHS01_c6a1f7afeb87bf8b3165bd7b03ec0173ffada35f083a583144ab7ac96edc5a04',
    'control_msgs/msg/GripperCommand': 'RIHS01_57eb8f326c9889ca8bb34ead82cc94cc09bf6bc5c3b6c09546dca3a00b589890',
}
# Changed by control_msgs 6.3.0 (feedback `index`, `multi_dof_index`): rosidl's hashes of the 6.10.0
# definitions, confirmed by rosbags below for the two message types.
OFFICIAL_HASHES_SINCE_6_3 = {
    'control_msgs/action/FollowJointTrajectory':
        'RIHS01_ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0',
    'control_msgs/action/FollowJointTrajectory_Feedback':
        'RIHS01_0bb018d181bdc6384dd75365480967bd1d6eaee4ef3dd597c64cd0b8bdc10867',
    'control_msgs/action/FollowJointTrajectory_FeedbackMessage':
        'RIHS01_95618cc73912d99b9acaa17d2da5e832cb0bfdeede7534fa8ec600feca2a6c4b',
}
# FollowJointTrajectory_Feedback as the independent build (control_msgs < 6.3: Jazzy, early Kilted)
# has it: a peer with that definition cannot exchange feedback with a Kilted 6.3+ one.
PRE_6_3_FEEDBACK_HASH = 'RIHS01_3fd0aaecf71725121ae1ff7f01098a5e0da581e672be18a6b2c286cb43d96b49'
# Our own build's copies of the ROS 2 Kilted wheels' hashes for nested types, as the independent
# build saw them too (a mismatch here would mean the wheels are not Kilted's).
NESTED_HASHES = {
    'trajectory_msgs/msg/JointTrajectory': 'RIHS01_179b33eba59d676f6d967ac71fe35e7ca2f64b2f3928f4a018cec115e213796e',
    'trajectory_msgs/msg/JointTrajectoryPoint':
        'RIHS01_de8907036d8bd45aac6f30cc9044a3d4a329c42cbf719aff7d95a584cfa532d7',
    'unique_identifier_msgs/msg/UUID': 'RIHS01_1b8e8aca958cbea28fe6ef60bf6c19b683c97a9ef60bb34752067d0f2f7ab437',
    'service_msgs/msg/ServiceEventInfo': 'RIHS01_41bcbbe07a75c9b52bc96bfd5c24d7f0fc0a08c0cb7921b3373c5732345a6f45',
}


def built_hashes() -> dict[str, str]:
    """Every type hash the installed control_msgs declares (its type description files, the data
    the type-description service and the graph advertise)."""
    share = Path(get_package_share_directory('control_msgs'))
    hashes = {}
    for path in sorted(share.glob('*/*.json')):
        for entry in json.loads(path.read_text())['type_hashes']:
            assert hashes.setdefault(entry['type_name'], entry['hash_string']) == entry['hash_string'], path
    return hashes


def test_type_hashes_equal_the_official_ones():
    hashes = built_hashes()
    for type_name, expected in {**OFFICIAL_HASHES, **OFFICIAL_HASHES_SINCE_6_3, **NESTED_HASHES}.items():
        assert hashes.get(type_name) == expected, type_name


def test_an_independent_hash_implementation_agrees():
    """rosbags computes RIHS01 in its own code from message text: fed the vendored definitions (and
    its ROS 2 Kilted store for the nested types) it gets the hashes above."""
    from rosbags.typesys import Stores, get_typestore, get_types_from_msg

    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for name in ('JointTolerance', 'JointComponentTolerance', 'GripperCommand'):
        types.update(get_types_from_msg((COMPAT / 'msg' / f'{name}.msg').read_text(), f'control_msgs/msg/{name}'))
    for action in ('FollowJointTrajectory', 'GripperCommand'):
        parts = (COMPAT / 'action' / f'{action}.action').read_text().split('\n---\n')
        assert len(parts) == 3
        for part, text in zip(('Goal', 'Result', 'Feedback'), parts):
            # Inside an .action a bare type name means this package's msg/ (rosidl's rule).
            for name in ('JointTolerance', 'JointComponentTolerance', 'GripperCommand'):
                text = '\n'.join(f'control_msgs/msg/{line}' if line.startswith(f'{name} ') or
                                 line.startswith(f'{name}[]') else line for line in text.splitlines())
            types.update(get_types_from_msg(text, f'control_msgs/action/{action}_{part}'))
        # The wrappers rosidl generates for every action.
        types.update(get_types_from_msg(f'unique_identifier_msgs/UUID goal_id\ncontrol_msgs/action/{action}_Goal goal',
                                        f'control_msgs/action/{action}_SendGoal_Request'))
        types.update(get_types_from_msg('unique_identifier_msgs/UUID goal_id\n'
                                        f'control_msgs/action/{action}_Feedback feedback',
                                        f'control_msgs/action/{action}_FeedbackMessage'))
    # And the feedback as it was before 6.3 (without the two index fields), under another name.
    feedback = (COMPAT / 'action' / 'FollowJointTrajectory.action').read_text().split('\n---\n')[2]
    old_feedback = '\n'.join(line for line in feedback.splitlines() if not line.startswith(('int32 index',
                                                                                        'int32 multi_dof_index')))
    assert len(old_feedback.splitlines()) == len(feedback.splitlines()) - 2
    types.update(get_types_from_msg(old_feedback, 'control_msgs/action/FollowJointTrajectory_Feedback_OLD'))
    store.register(types)
    expected = {**OFFICIAL_HASHES, **OFFICIAL_HASHES_SINCE_6_3}
    checked = [name for name in types if name in expected]
    assert len(checked) == 13
    for name in checked:
        assert store.hash_rihs01(name) == expected[name], name
    # The type name is part of the hash: rebuild the old one's description under the real name.
    renamed = get_typestore(Stores.ROS2_KILTED)
    renamed.register(get_types_from_msg(old_feedback, 'control_msgs/action/FollowJointTrajectory_Feedback'))
    assert renamed.hash_rihs01('control_msgs/action/FollowJointTrajectory_Feedback') == PRE_6_3_FEEDBACK_HASH


def test_every_upstream_interface_is_built_and_importable():
    """The whole package, not just the arm's actions: each vendored definition imports."""
    import importlib

    files = sorted(COMPAT.glob('msg/*.msg')) + sorted(COMPAT.glob('action/*.action')) + sorted(COMPAT.glob('srv/*.srv'))
    assert len(files) == 50
    for path in files:
        module = importlib.import_module(f'control_msgs.{path.parent.name}')
        assert hasattr(module, path.stem), path.name
    from control_msgs.action import FollowJointTrajectory
    result = FollowJointTrajectory.Result
    assert (result.SUCCESSFUL, result.INVALID_GOAL, result.INVALID_JOINTS, result.OLD_HEADER_TIMESTAMP,
            result.PATH_TOLERANCE_VIOLATED, result.GOAL_TOLERANCE_VIOLATED) == (0, -1, -2, -3, -4, -5)


def test_actions_between_two_processes():
    """An rclpy ActionServer for FollowJointTrajectory and GripperCommand in one process, an
    ActionClient in another: goals, feedback and results cross, and the graph advertises the
    official feedback type hash."""
    server = subprocess.Popen([sys.executable, str(ROS_NODES / 'control_action_server.py')],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = json.loads(run_python(ROS_NODES / 'control_action_client.py', timeout=120).stdout.strip()
                            .splitlines()[-1])
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server_out, server_err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server_out, server_err = server.communicate()
    assert server.returncode == 0, server_err
    goals = [json.loads(line) for line in server_out.splitlines() if line.startswith('{')]
    assert goals == [
        {'goal': 'follow_joint_trajectory', 'joints': ['arm_base_joint', 'arm_shoulder_joint'], 'points': 3,
         'path_tolerance': ['arm_base_joint'], 'goal_time_tolerance': 2},
        {'goal': 'gripper_cmd', 'position': 0.015, 'max_effort': 4.0},
    ]
    assert report['trajectory_status'] == 4  # action_msgs GoalStatus.STATUS_SUCCEEDED
    assert (report['trajectory_error_code'], report['trajectory_error_string']) == (0, 'followed 3 points')
    # Feedback is a topic: what arrived is in order and matches the goal's points.
    points = [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]
    assert report['feedback_indices'], report
    assert report['feedback_indices'] == sorted(set(report['feedback_indices']))
    assert report['feedback_desired'] == [points[index] for index in report['feedback_indices']]
    assert report['feedback_type'] == 'control_msgs/action/FollowJointTrajectory_FeedbackMessage'
    assert report['feedback_type_hash'] == OFFICIAL_HASHES_SINCE_6_3[report['feedback_type']]
    assert report['gripper_status'] == 4
    assert report['gripper_result'] == [0.015, 2.0, True]


@pytest.mark.parametrize('manifest', ['robotsim', 'robotsim_sim'])
def test_packages_that_serve_the_actions_declare_control_msgs(manifest):
    import xml.etree.ElementTree as ET

    root = ET.parse(WORKSPACE / 'src' / manifest / 'package.xml').getroot()
    assert 'control_msgs' in [element.text for element in root.findall('exec_depend')]
