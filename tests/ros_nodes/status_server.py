"""A real rclpy process serving robotsim_msgs control services and publishing SimStatus and
TFMessage, standing in for the simulator's ROS surface (the interfaces are what is under test).

Runs until a Reset with seed 4242 arrives (or 30 s pass), then exits 0.
"""

import sys
import time

import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from robotsim_msgs.msg import SimStatus
from robotsim_msgs.srv import Pause, Reset, Step
from tf2_msgs.msg import TFMessage

STEP = 0.002


def main() -> int:
    rclpy.init()
    node = rclpy.create_node('status_server')
    state = {'steps': 0, 'paused': False, 'seed': 0, 'done': False}
    status_pub = node.create_publisher(SimStatus, 'sim/status', 10)
    tf_pub = node.create_publisher(TFMessage, 'tf', 10)

    def sim_time() -> Time:
        nanoseconds = round(state['steps'] * STEP * 1e9)
        return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)

    def on_pause(request, response):
        state['paused'] = request.paused
        response.success, response.paused = True, state['paused']
        return response

    def on_step(request, response):
        if not state['paused']:
            response.success, response.message = False, 'step is only allowed while paused'
        else:
            state['steps'] += request.steps
            response.success = True
        response.sim_time, response.step_count = sim_time(), state['steps']
        return response

    def on_reset(request, response):
        state['steps'] = 0
        state['seed'] = request.seed if request.use_seed else state['seed']
        response.success, response.seed = True, state['seed']
        state['done'] = request.seed == 4242
        return response

    node.create_service(Pause, 'sim/pause', on_pause)
    node.create_service(Step, 'sim/step', on_step)
    node.create_service(Reset, 'sim/reset', on_reset)

    def publish():
        status_pub.publish(SimStatus(sim_time=sim_time(), paused=state['paused'], step_count=state['steps'],
                                     physics_timestep=STEP, seed=state['seed']))
        transform = TransformStamped()
        transform.header.stamp, transform.header.frame_id, transform.child_frame_id = sim_time(), 'odom', 'base_link'
        transform.transform.rotation.w = 1.0
        tf_pub.publish(TFMessage(transforms=[transform]))

    node.create_timer(0.05, publish)
    deadline = time.monotonic() + 30
    while rclpy.ok() and not state['done'] and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    # Let the last response leave before the process goes away.
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()
    return 0 if state['done'] else 1


if __name__ == '__main__':
    sys.exit(main())
