"""robotsim_msgs and the compat tf2_msgs: built by colcon, importable, and working between
two real rclpy processes (publish/subscribe and service calls)."""

import json
import subprocess
import sys

from conftest import ROS_NODES, run_python

# The official type hash of tf2_msgs/msg/TFMessage (ROS 2 Jazzy/Kilted); the compat build must
# match it or a real tf2 node would refuse our /tf.
OFFICIAL_TFMESSAGE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'


def test_messages_import_with_expected_fields():
    from robotsim_msgs.msg import SimStatus
    from robotsim_msgs.srv import Pause, Reset, SetEntityPose, Step
    from tf2_msgs.msg import TFMessage

    status = SimStatus()
    assert {'sim_time', 'real_time_factor', 'paused', 'step_count'} <= set(status.get_fields_and_field_types())
    assert 'steps' in Step.Request.get_fields_and_field_types()
    assert {'use_seed', 'seed'} <= set(Reset.Request.get_fields_and_field_types())
    assert 'paused' in Pause.Request.get_fields_and_field_types()
    assert SetEntityPose.Request.get_fields_and_field_types()['pose'] == 'geometry_msgs/Pose'
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
