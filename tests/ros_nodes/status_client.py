"""The other process: calls the control services, checks the answers, and reports what it saw
on sim/status and tf (including the type hash the graph advertises for tf2_msgs/TFMessage)."""

import json
import sys
import time

import rclpy
from robotsim_msgs.msg import SimStatus
from robotsim_msgs.srv import Pause, Reset, Step
from tf2_msgs.msg import TFMessage


def call(node, client, request):
    if not client.wait_for_service(timeout_sec=20.0):
        raise RuntimeError(f'service {client.srv_name} not available')
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
    if future.result() is None:
        raise RuntimeError(f'service {client.srv_name} did not answer')
    return future.result()


def main() -> int:
    rclpy.init()
    node = rclpy.create_node('status_client')
    statuses, transforms = [], []
    node.create_subscription(SimStatus, 'sim/status', statuses.append, 10)
    node.create_subscription(TFMessage, 'tf', transforms.append, 10)
    report = {}
    step_while_running = call(node, node.create_client(Step, 'sim/step'), Step.Request(steps=5))
    report['step_while_running_refused'] = not step_while_running.success
    report['pause'] = call(node, node.create_client(Pause, 'sim/pause'), Pause.Request(paused=True)).paused
    stepped = call(node, node.create_client(Step, 'sim/step'), Step.Request(steps=250))
    report['step'] = [stepped.success, stepped.step_count, stepped.sim_time.sec, stepped.sim_time.nanosec]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (statuses and statuses[-1].step_count == 250 and transforms):
        rclpy.spin_once(node, timeout_sec=0.05)
    report['status_step_count'] = statuses[-1].step_count if statuses else None
    report['status_paused'] = statuses[-1].paused if statuses else None
    report['tf_child'] = transforms[-1].transforms[0].child_frame_id if transforms else None
    infos = node.get_publishers_info_by_topic('/tf')
    report['tf_type'] = infos[0].topic_type if infos else None
    report['tf_type_hash'] = str(infos[0].topic_type_hash) if infos else None
    reset = call(node, node.create_client(Reset, 'sim/reset'), Reset.Request(use_seed=True, seed=4242))
    report['reset_seed'] = reset.seed
    print(json.dumps(report))
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
