"""The benchmark's room and rover in PyBullet 3.2.7 (run in the peers' environment by bench/bench_peers.py).

Usage: python pybullet_room.py SCENE.json MEASURE
  MEASURE: ``run`` (a whole run: SCENE's sim seconds at its timestep with its sensors and rates), ``run-no-cameras``,
  ``lidar`` (microseconds per ray of rayTestBatch), ``camera`` (milliseconds per RGB-D frame), ``snapshot`` (the
  scan and every 8th depth pixel at the spawn, before any step).
Prints one line ``RESULT {json}``.

The scene file (written by bench_peers.py from robotsim's compiled MuJoCo model) gives the rover's URDF (as
``robotsim describe --urdf`` writes it), every world geom with its world pose, the wheel speeds of a 0.2 m/s,
0.3 rad/s arc, and each sensor's frame, rate and resolution. Everything here is what a PyBullet user would
write: the engine's defaults except the timestep, velocity motors on the driven wheels, position motors holding
the arm, ``rayTestBatch`` for the lidar, ``getCameraImage`` for the camera (EGL when its plugin loads, else the
TinyRenderer; the result says which), the base's velocity for the IMU, ``getJointStates`` for the joints.
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import pybullet as pb


def quaternion_xyzw(wxyz) -> list[float]:
    return [wxyz[1], wxyz[2], wxyz[3], wxyz[0]]


class Room:
    """One PyBullet client with the scene loaded; closes it on close()."""

    def __init__(self, scene: dict):
        self.scene = scene
        self.client = pb.connect(pb.DIRECT)
        c = self.client
        pb.setGravity(0, 0, -9.81, physicsClientId=c)
        pb.setTimeStep(scene['timestep'], physicsClientId=c)
        self.renderer = pb.ER_TINY_RENDERER
        self.renderer_name = 'TinyRenderer (CPU)'
        try:
            import pkgutil
            egl = pkgutil.get_loader('eglRenderer')
            if egl is not None and pb.loadPlugin(egl.get_filename(), '_eglRendererPlugin', physicsClientId=c) >= 0:
                self.renderer, self.renderer_name = pb.ER_BULLET_HARDWARE_OPENGL, 'EGL plugin (OpenGL)'
        except Exception:  # no EGL here: the TinyRenderer
            pass
        for geom in scene['geoms']:
            self._add_geom(geom)
        self.robot = pb.loadURDF(scene['urdf'], basePosition=scene['spawn'], flags=pb.URDF_USE_INERTIA_FROM_FILE,
                                 physicsClientId=c)
        self.joints = {}
        self.root = pb.getBodyInfo(self.robot, physicsClientId=c)[0].decode()
        self.links = {self.root: -1}
        for index in range(pb.getNumJoints(self.robot, physicsClientId=c)):
            info = pb.getJointInfo(self.robot, index, physicsClientId=c)
            self.joints[info[1].decode()] = index
            self.links[info[12].decode()] = index
        self.moving = [index for name, index in self.joints.items()
                       if pb.getJointInfo(self.robot, index, physicsClientId=c)[2] != pb.JOINT_FIXED]
        wheels = scene['wheel_speeds']
        pb.setJointMotorControlArray(self.robot, [self.joints[j] for j in wheels], pb.VELOCITY_CONTROL,
                                     targetVelocities=list(wheels.values()),
                                     forces=[scene['wheel_max_torque']] * len(wheels), physicsClientId=c)
        held = [self.joints[j] for j in scene['held_joints']]
        if held:
            pb.setJointMotorControlArray(self.robot, held, pb.POSITION_CONTROL, targetPositions=[0.0] * len(held),
                                         physicsClientId=c)
        lidar = scene['lidar']
        angles = lidar['angle_min'] + lidar['angle_increment'] * np.arange(lidar['samples'])
        self.ray_directions = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
        camera = scene['camera']
        self.projection = pb.computeProjectionMatrixFOV(math.degrees(camera['vertical_fov']),
                                                        camera['width'] / camera['height'], camera['near'], camera['far'])

    def _add_geom(self, geom: dict) -> None:
        c = self.client
        kind, size = geom['type'], geom['size']
        if kind == 'plane':
            shape = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=c)
            # (drawn as a thin box of the floor's extent: a body without a visual shape crashes the EGL plugin)
            visual = pb.createVisualShape(pb.GEOM_BOX, halfExtents=[size[0] / 2, size[1] / 2, 1e-3],
                                          visualFramePosition=[0, 0, -1e-3], rgbaColor=geom['rgba'], physicsClientId=c)
        elif kind == 'box':
            half = [s / 2 for s in size]
            shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=c)
            visual = pb.createVisualShape(pb.GEOM_BOX, halfExtents=half, rgbaColor=geom['rgba'], physicsClientId=c)
        elif kind == 'cylinder':
            shape = pb.createCollisionShape(pb.GEOM_CYLINDER, radius=size[0], height=size[1], physicsClientId=c)
            visual = pb.createVisualShape(pb.GEOM_CYLINDER, radius=size[0], length=size[1], rgbaColor=geom['rgba'],
                                          physicsClientId=c)
        else:
            raise ValueError(f'scene geom {geom["name"]!r}: type {kind!r} not rebuilt in PyBullet')
        body = pb.createMultiBody(baseMass=geom['mass'], baseCollisionShapeIndex=shape, baseVisualShapeIndex=visual,
                                  basePosition=geom['pos'], baseOrientation=quaternion_xyzw(geom['quat']),
                                  physicsClientId=c)
        pb.changeDynamics(body, -1, lateralFriction=geom['friction'], physicsClientId=c)

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        index = self.links[link]
        if index == -1:
            position, orientation = pb.getBasePositionAndOrientation(self.robot, physicsClientId=self.client)
        else:
            state = pb.getLinkState(self.robot, index, computeForwardKinematics=1, physicsClientId=self.client)
            position, orientation = state[4], state[5]
        rotation = np.array(pb.getMatrixFromQuaternion(orientation)).reshape(3, 3)
        return np.array(position), rotation

    def scan(self) -> np.ndarray:
        lidar = self.scene['lidar']
        position, rotation = self.link_pose(lidar['frame'])
        directions = self.ray_directions @ rotation.T
        starts = position + directions * lidar['range_min']
        ends = position + directions * lidar['range_max']
        hits = pb.rayTestBatch(starts.tolist(), ends.tolist(), physicsClientId=self.client)
        fractions = np.array([hit[2] for hit in hits])
        ranges = lidar['range_min'] + fractions * (lidar['range_max'] - lidar['range_min'])
        ranges[fractions >= 1.0] = np.inf
        return ranges

    def rgbd(self) -> tuple[np.ndarray, np.ndarray]:
        camera = self.scene['camera']
        position, rotation = self.link_pose(camera['frame'])  # the optical frame: +z forward, +y down
        view = pb.computeViewMatrix(position.tolist(), (position + rotation[:, 2]).tolist(), (-rotation[:, 1]).tolist())
        width, height, rgba, depth_buffer, _ = pb.getCameraImage(camera['width'], camera['height'], view,
                                                                 self.projection, renderer=self.renderer,
                                                                 physicsClientId=self.client)
        near, far = camera['near'], camera['far']
        depth = far * near / (far - (far - near) * np.reshape(depth_buffer, (height, width)))  # metres
        return np.reshape(rgba, (height, width, 4))[:, :, :3], depth

    def imu(self, previous_velocity: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        linear, angular = pb.getBaseVelocity(self.robot, physicsClientId=self.client)
        linear = np.array(linear)
        return (linear - previous_velocity) / dt + np.array([0.0, 0.0, 9.81]), linear

    def joint_states(self):
        return pb.getJointStates(self.robot, self.moving, physicsClientId=self.client)

    def run(self, cameras: bool) -> dict:
        """SCENE's sim seconds with every sensor at its rate; wall seconds and what was read."""
        scene = self.scene
        dt = scene['timestep']
        steps = round(scene['sim_seconds'] / dt)
        periods = {name: max(1, round(1.0 / (rate * dt))) for name, rate in scene['rates'].items()}
        counts = dict.fromkeys(periods, 0)
        velocity = np.zeros(3)
        start = time.perf_counter()
        for step in range(1, steps + 1):
            pb.stepSimulation(physicsClientId=self.client)
            if step % periods['lidar'] == 0:
                self.scan()
                counts['lidar'] += 1
            if cameras and step % periods['camera'] == 0:
                self.rgbd()
                counts['camera'] += 1
            if step % periods['imu'] == 0:
                _, velocity = self.imu(velocity, periods['imu'] * dt)
                counts['imu'] += 1
            if step % periods['joint_states'] == 0:
                self.joint_states()
                pb.getBasePositionAndOrientation(self.robot, physicsClientId=self.client)  # odometry / TF
                counts['joint_states'] += 1
        wall = time.perf_counter() - start
        position, _ = self.link_pose(self.root)
        return {'wall': wall, 'sim_seconds': steps * dt, 'counts': counts, 'final_xy': position[:2].tolist()}

    def close(self) -> None:
        pb.disconnect(self.client)


def main() -> None:
    scene = json.load(open(sys.argv[1]))
    measure = sys.argv[2]
    room = Room(scene)
    try:
        if measure in ('run', 'run-no-cameras'):
            result = room.run(cameras=measure == 'run')
        elif measure == 'snapshot':  # what the sensors see at the spawn, before any step
            _, depth = room.rgbd()
            result = {'ranges': [r if np.isfinite(r) else None for r in room.scan().tolist()],
                      'depth': depth[::8, ::8].tolist()}
        elif measure == 'lidar':
            room.scan()
            repeats = 200
            start = time.perf_counter()
            for _ in range(repeats):
                room.scan()
            result = {'us_per_ray': (time.perf_counter() - start) / repeats / scene['lidar']['samples'] * 1e6,
                      'hits': int(np.isfinite(room.scan()).sum())}  # beams that met the room
        elif measure == 'camera':
            for _ in range(3):
                room.rgbd()
            repeats = 40
            start = time.perf_counter()
            for _ in range(repeats):
                pb.stepSimulation(physicsClientId=room.client)  # the scene changes between frames, as in a run
                room.rgbd()
            result = {'ms_per_frame': (time.perf_counter() - start) / repeats * 1e3}
            color, depth = room.rgbd()  # what the frames showed: the room, not a blank image
            result.update(color_std=float(np.std(color)), depth_finite=float((depth < scene['camera']['far'] - 1e-3).mean()))
        else:
            raise SystemExit(f'pybullet_room.py: MEASURE: expected run, run-no-cameras, lidar or camera, got {measure!r}')
        result['renderer'] = room.renderer_name
    finally:
        room.close()
    print('\nRESULT', json.dumps(result), flush=True)


if __name__ == '__main__':
    main()
