"""A straightforward PyBullet + rclpy bridge: the benchmark's room and rover in PyBullet, publishing what
robotsim's sim_node publishes for the rover at the same rates, as fast as possible (bench/bench_peers.py).

Usage: python pybullet_bridge.py SCENE.json cameras|no-cameras
Runs in the workspace's environment (rclpy) with PyBullet taken from the peers' environment (bench_peers.py puts
a folder holding only PyBullet's module on PYTHONPATH). Messages are built as a bridge written in an afternoon
builds them: message objects filled from the engine's arrays and handed to rclpy. Prints ``RESULT {json}``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, Imu, JointState, LaserScan
from tf2_msgs.msg import TFMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pybullet_room import Room, pb  # noqa: E402

CLOCK_RATE = 250.0
"""Hz of /clock, as sim_node's default."""


def stamp(seconds: float) -> Time:
    return Time(sec=int(seconds), nanosec=int(round((seconds - int(seconds)) * 1e9)) % 1_000_000_000)


def main() -> None:
    scene = json.load(open(sys.argv[1]))
    cameras = sys.argv[2] == 'cameras'
    rclpy.init()
    node = rclpy.create_node('pybullet_bridge')
    publishers = {
        'clock': node.create_publisher(Clock, '/clock', 10),
        'scan': node.create_publisher(LaserScan, '/scan', qos_profile_sensor_data),
        'rgb': node.create_publisher(Image, '/camera/color/image_raw', qos_profile_sensor_data),
        'depth': node.create_publisher(Image, '/camera/depth/image_rect_raw', qos_profile_sensor_data),
        'info': node.create_publisher(CameraInfo, '/camera/color/camera_info', qos_profile_sensor_data),
        'imu': node.create_publisher(Imu, '/imu/data', qos_profile_sensor_data),
        'joints': node.create_publisher(JointState, '/joint_states', 10),
        'odom': node.create_publisher(Odometry, '/odom', 10),
        'tf': node.create_publisher(TFMessage, '/tf', 10),
    }
    room = Room(scene)
    dt = scene['timestep']
    steps = round(scene['sim_seconds'] / dt)
    periods = {name: max(1, round(1.0 / (rate * dt))) for name, rate in scene['rates'].items()}
    clock_period = max(1, round(1.0 / (CLOCK_RATE * dt)))
    lidar, camera = scene['lidar'], scene['camera']
    names = [pb.getJointInfo(room.robot, index, physicsClientId=room.client)[1].decode() for index in room.moving]
    velocity = np.zeros(3)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        pb.stepSimulation(physicsClientId=room.client)
        now = stamp(step * dt)
        if step % clock_period == 0:
            publishers['clock'].publish(Clock(clock=now))
        if step % periods['lidar'] == 0:
            ranges = room.scan()
            message = LaserScan(angle_min=lidar['angle_min'], angle_increment=lidar['angle_increment'],
                                angle_max=lidar['angle_min'] + lidar['angle_increment'] * (lidar['samples'] - 1),
                                range_min=lidar['range_min'], range_max=lidar['range_max'],
                                ranges=ranges.astype(np.float32).tolist())
            message.header.stamp, message.header.frame_id = now, lidar['frame']
            publishers['scan'].publish(message)
        if cameras and step % periods['camera'] == 0:
            rgb, depth = room.rgbd()
            for key, pixels, encoding, size in (('rgb', np.ascontiguousarray(rgb, dtype=np.uint8), 'rgb8', 3),
                                                ('depth', depth.astype(np.float32), '32FC1', 4)):
                image = Image(height=camera['height'], width=camera['width'], encoding=encoding,
                              step=camera['width'] * size, data=pixels.tobytes())
                image.header.stamp, image.header.frame_id = now, camera['frame']
                publishers[key].publish(image)
            focal = camera['height'] / 2 / math.tan(camera['vertical_fov'] / 2)
            info = CameraInfo(height=camera['height'], width=camera['width'], distortion_model='plumb_bob',
                              d=[0.0] * 5, k=[focal, 0.0, camera['width'] / 2, 0.0, focal, camera['height'] / 2, 0.0, 0.0, 1.0])
            info.header.stamp, info.header.frame_id = now, camera['frame']
            publishers['info'].publish(info)
        if step % periods['imu'] == 0:
            acceleration, velocity = room.imu(velocity, periods['imu'] * dt)
            _, angular = pb.getBaseVelocity(room.robot, physicsClientId=room.client)
            imu = Imu()
            imu.header.stamp, imu.header.frame_id = now, 'imu_link'
            imu.linear_acceleration.x, imu.linear_acceleration.y, imu.linear_acceleration.z = map(float, acceleration)
            imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z = angular
            publishers['imu'].publish(imu)
        if step % periods['joint_states'] == 0:
            states = room.joint_states()
            joints = JointState(name=names, position=[s[0] for s in states], velocity=[s[1] for s in states],
                                effort=[s[3] for s in states])
            joints.header.stamp = now
            publishers['joints'].publish(joints)
            position, orientation = pb.getBasePositionAndOrientation(room.robot, physicsClientId=room.client)
            odometry = Odometry(child_frame_id='base_footprint')
            odometry.header.stamp, odometry.header.frame_id = now, 'odom'
            pose = odometry.pose.pose
            pose.position.x, pose.position.y, pose.position.z = position
            pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = orientation
            publishers['odom'].publish(odometry)
            transform = TransformStamped(child_frame_id='base_footprint')
            transform.header.stamp, transform.header.frame_id = now, 'odom'
            transform.transform.translation.x, transform.transform.translation.y, transform.transform.translation.z = position
            transform.transform.rotation = pose.orientation
            publishers['tf'].publish(TFMessage(transforms=[transform]))
    wall = time.perf_counter() - start
    room.close()
    node.destroy_node()
    rclpy.shutdown()
    print('\nRESULT', json.dumps({'wall': wall, 'sim_seconds': steps * dt}), flush=True)


if __name__ == '__main__':
    main()
