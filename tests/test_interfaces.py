"""robotsim_msgs and the compat tf2_msgs: built by colcon, importable, and working between
two real rclpy processes (publish/subscribe and service calls)."""

import json
import os
import subprocess
import sys

from conftest import ROS_NODES, run_python

# The official type hash of tf2_msgs/msg/TFMessage (ROS 2 Jazzy/Kilted); the compat build must
# match it or a real tf2 node would refuse our /tf.
OFFICIAL_TFMESSAGE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'


def test_messages_import_with_expected_fields():
    from robotsim_msgs.msg import SimStatus
    from robotsim_msgs.srv import GetEntityPose, Pause, Reset, SetEntityPose, Step
    from tf2_msgs.msg import TFMessage

    status = SimStatus()
    assert {'sim_time', 'real_time_factor', 'paused', 'step_count'} <= set(status.get_fields_and_field_types())
    assert 'steps' in Step.Request.get_fields_and_field_types()
    assert {'use_seed', 'seed'} <= set(Reset.Request.get_fields_and_field_types())
    assert 'paused' in Pause.Request.get_fields_and_field_types()
    assert SetEntityPose.Request.get_fields_and_field_types()['pose'] == 'geometry_msgs/Pose'
    assert GetEntityPose.Request.get_fields_and_field_types() == {'entity': 'string'}
    assert GetEntityPose.Response.get_fields_and_field_types() == {
        'success': 'boolean', 'message': 'string', 'pose': 'geometry_msgs/PoseStamped'}
    assert TFMessage.get_fields_and_field_types() == {'transforms': 'sequence<geometry_msgs/TransformStamped>'}


def test_services_and_topics_across_two_processes():
    server = subprocess.Popen([sys.executable, str(ROS_NODES / 'status_server.py')],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = json.loads(run_python(ROS_NODES / 'status_client.py', timeout=90).stdout.strip().splitlines()[-1])
        assert server.wait(timeout=30) == 0, server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert report['step_while_running_refused'] is True
    assert report['pause'] is True
    # 250 steps of 2 ms = 0.5 s of sim time
    assert report['step'] == [True, 250, 0, 500_000_000]
    assert report['status_step_count'] == 250 and report['status_paused'] is True
    assert report['tf_child'] == 'base_link'
    assert report['tf_type'] == 'tf2_msgs/msg/TFMessage'
    assert report['tf_type_hash'] == OFFICIAL_TFMESSAGE_HASH
    assert report['reset_seed'] == 4242


def test_python_int_in_a_float64_field_does_not_abort_the_client():
    """With an empty CMAKE_BUILD_TYPE the generated C converters keep an assert that aborts the whole
    client process (SIGABRT) when a float64 field holds a Python int. robotsim_msgs (and the compat
    packages) build as Release, like ROS's binary packages: no abort. The value itself is then
    undefined in ROS 2's generated code (it is for the official geometry_msgs wheel too), so
    ROS_PYTHON_CHECK_FIELDS=1 turns it into a Python error naming the field."""
    script = (
        'from rclpy.serialization import serialize_message\n'
        'from robotsim_msgs.srv import InjectFault\n'
        'request = InjectFault.Request(fault="encoder_noise", channel=1)\n'
        'try:\n'
        '    request.value = 3\n'
        'except AssertionError as error:\n'
        '    print("refused:", error)\n'
        'serialize_message(request)\n'
        'print("serialized")\n')
    completed = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr  # -6 (SIGABRT) with the asserts compiled in
    assert completed.stdout.strip() == 'serialized'
    checked = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=60,
                             env={**os.environ, 'ROS_PYTHON_CHECK_FIELDS': '1'})
    assert checked.returncode == 0, checked.stderr
    assert "refused: The 'value' field must be of type 'float'" in checked.stdout


def test_compat_composition_interfaces_serve_launch_ros():
    """`import launch_ros` needs composition_interfaces (not on PyPI): the compat build provides it with
    the official service definitions."""
    from composition_interfaces.srv import ListNodes, LoadNode, UnloadNode
    assert LoadNode.Request.get_fields_and_field_types()['parameters'] == 'sequence<rcl_interfaces/Parameter>'
    assert {'unique_id', 'full_node_name', 'success'} <= set(LoadNode.Response.get_fields_and_field_types())
    assert UnloadNode.Request.get_fields_and_field_types() == {'unique_id': 'uint64'}
    assert ListNodes.Response.get_fields_and_field_types() == {'full_node_names': 'sequence<string>',
                                                             'unique_ids': 'sequence<uint64>'}
