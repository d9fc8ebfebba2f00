"""The stand-up demo's node: a legged robot rises from its crouch to its stance and holds it.

A thin adapter around :class:`robotsim_sim.stand_up.StandUp`: publishes its position targets on
``leg_position_controller/commands`` (std_msgs/Float64MultiArray, legs.joints order) at ``rate`` Hz on sim time. The
profile starts at the first clock tick it sees; ``rise_time`` (s) is how long the rise takes.
"""

from __future__ import annotations

import sys

from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

from robotsim_core.contract import LEG_POSITION_COMMANDS
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.ros import common as convert
from robotsim_sim.stand_up import StandUp


class StandUpNode(Node):
    """Owns its publisher and timer (the node's own)."""

    def __init__(self):
        super().__init__('stand_up')
        robot = load_robot(self.declare_parameter('robot', 'go1').value)
        if robot.legs is None:
            raise DescriptionError(robot.source, 'legs', f'robot {robot.name} has no legs: the stand-up demo drives '
                                                         'a legged robot')
        rise_time = convert.checked_parameter(self, 'rise_time', 1.5, minimum=0.1, maximum=60.0)
        rate = convert.checked_parameter(self, 'rate', 50.0, minimum=1.0, maximum=1000.0)
        self.legs = robot.legs
        self.rise_time = rise_time
        self.controller: StandUp | None = None
        self.publisher = self.create_publisher(Float64MultiArray, LEG_POSITION_COMMANDS, 10)
        self.create_timer(1.0 / rate, self.tick)
        self.announced = False

    def tick(self) -> None:
        now = self.get_clock().now().nanoseconds * 1e-9
        if self.controller is None:
            if now <= 0.0:  # no clock yet (use_sim_time before the first /clock)
                return
            self.controller = StandUp(self.legs, self.rise_time, start_time=now)
            self.get_logger().info(f'rising from the crouch to the stance in {self.rise_time:g} s')
        self.publisher.publish(Float64MultiArray(data=[float(v) for v in self.controller.targets(now)]))
        if not self.announced and self.controller.standing(now):
            self.announced = True
            self.get_logger().info('standing: holding the stance')


def main(args=None) -> int:
    return convert.run_node('stand_up', StandUpNode, (DescriptionError,), args)


if __name__ == '__main__':
    sys.exit(main())
