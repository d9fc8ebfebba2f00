"""The benchmark's room and rover in Drake 1.51.1 (run in the peers' environment by bench/bench_peers.py).

Usage: python drake_room.py SCENE.json MEASURE
  MEASURE: ``run`` (a whole run: SCENE's sim seconds with its sensors at their rates), ``run-no-cameras``,
  ``camera`` (milliseconds per RGB-D frame), ``snapshot`` (every 8th depth pixel at the spawn, before any step).
Prints one line ``RESULT {json}``.

What a Drake user would write: a discrete MultibodyPlant at the scene's timestep with Drake's default contact
model, the room's geoms registered on the world (the free box as a free body), the rover from its URDF, joint
actuators with Drake's PD controllers (velocity gains on the driven wheels, position gains holding the arm; the
URDF carries no transmissions), an RgbdSensor on the camera's optical frame rendered by VTK, the IMU and joint
states read from the plant's state; the simulator advanced from one sensor event to the next. Drake has no
ray-cast query, so there is no lidar here (robotsim still casts its lidar in the rows compared with these).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from pydrake.all import (AddMultibodyPlantSceneGraph, Box, ClippingRange, ColorRenderCamera, CoulombFriction,
                         Cylinder, DepthRange, DepthRenderCamera, DiagramBuilder, HalfSpace, MakeRenderEngineVtk,
                         Parser, PdControllerGains, Quaternion, RenderCameraCore, RenderEngineVtkParams, RgbdSensor,
                         RigidTransform, Simulator, SpatialInertia)
from pydrake.systems.sensors import CameraInfo

RENDERER = 'vtk'
WHEEL_DAMPING_GAIN = 1.0
"""N m s/rad: the wheels' velocity gain (the effort limit caps it at the motor's stall torque)."""
ARM_GAINS = (50.0, 2.0)
"""The arm's position and velocity gains."""


def transform(geom: dict) -> RigidTransform:
    w, x, y, z = geom['quat']
    return RigidTransform(Quaternion(w, x, y, z), geom['pos'])


class Room:
    """One Drake diagram with the scene built; nothing to close (plain Python objects)."""

    def __init__(self, scene: dict, cameras: bool):
        self.scene = scene
        builder = DiagramBuilder()
        plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=scene['timestep'])
        scene_graph.AddRenderer(RENDERER, MakeRenderEngineVtk(RenderEngineVtkParams()))
        self.free_bodies = []
        for geom in scene['geoms']:
            self._add_geom(plant, geom)
        (self.model,) = Parser(plant).AddModels(scene['urdf'])
        torque = scene['wheel_max_torque']
        for joint in scene['wheel_speeds']:
            actuator = plant.AddJointActuator(f'{joint}_motor', plant.GetJointByName(joint), effort_limit=torque)
            actuator.set_controller_gains(PdControllerGains(p=0.0, d=WHEEL_DAMPING_GAIN))
        for joint in scene['held_joints']:
            actuator = plant.AddJointActuator(f'{joint}_servo', plant.GetJointByName(joint))
            actuator.set_controller_gains(PdControllerGains(p=ARM_GAINS[0], d=ARM_GAINS[1]))
        plant.Finalize()
        self.sensor = None
        if cameras:
            camera = scene['camera']
            core = RenderCameraCore(RENDERER, CameraInfo(camera['width'], camera['height'], camera['vertical_fov']),
                                    ClippingRange(camera['near'], camera['far']), RigidTransform())
            frame = plant.GetBodyFrameIdOrThrow(plant.GetBodyByName(camera['frame']).index())
            self.sensor = builder.AddSystem(RgbdSensor(frame, RigidTransform(), ColorRenderCamera(core, False),
                                                       DepthRenderCamera(core, DepthRange(camera['near'], camera['far']))))
            builder.Connect(scene_graph.get_query_output_port(), self.sensor.query_object_input_port())
        self.plant = plant
        diagram = builder.Build()
        self.simulator = Simulator(diagram)
        context = self.simulator.get_mutable_context()
        self.plant_context = plant.GetMyMutableContextFromRoot(context)
        plant.get_actuation_input_port().FixValue(self.plant_context, np.zeros(plant.num_actuated_dofs()))
        # Desired state of the actuated joints (positions, then velocities, in actuator order).
        actuated = plant.num_actuated_dofs(self.model)
        desired = np.zeros(2 * actuated)
        wheel_speeds = list(scene['wheel_speeds'].values())
        desired[actuated:actuated + len(wheel_speeds)] = wheel_speeds
        plant.get_desired_state_input_port(self.model).FixValue(self.plant_context, desired)
        self.root = plant.GetBodyByName('base_footprint', self.model)
        plant.SetFreeBodyPose(self.plant_context, self.root, RigidTransform(scene['spawn']))
        for body, pose in self.free_bodies:
            plant.SetFreeBodyPose(self.plant_context, body, pose)
        self.sensor_context = self.sensor.GetMyContextFromRoot(context) if self.sensor is not None else None
        self.simulator.Initialize()

    def _add_geom(self, plant, geom: dict) -> None:
        kind, size = geom['type'], geom['size']
        friction = CoulombFriction(geom['friction'], geom['friction'])
        rgba = np.array(geom['rgba'])
        if kind == 'plane':
            pose, shape = HalfSpace.MakePose(np.array([0.0, 0.0, 1.0]), np.array(geom['pos'])), HalfSpace()
        elif kind == 'box':
            pose, shape = transform(geom), Box(*size)
        elif kind == 'cylinder':
            pose, shape = transform(geom), Cylinder(size[0], size[1])
        else:
            raise ValueError(f'scene geom {geom["name"]!r}: type {kind!r} not rebuilt in Drake')
        body = plant.world_body()
        if geom['mass'] > 0:
            body = plant.AddRigidBody(geom['name'], SpatialInertia.SolidBoxWithMass(geom['mass'], *size))
            self.free_bodies.append((body, pose))
            pose = RigidTransform()
        plant.RegisterCollisionGeometry(body, pose, shape, geom['name'], friction)
        plant.RegisterVisualGeometry(body, pose, shape, geom['name'] + '_visual', rgba)

    def rgbd(self):
        color = self.sensor.color_image_output_port().Eval(self.sensor_context)
        depth = self.sensor.depth_image_32F_output_port().Eval(self.sensor_context)
        return color.data, depth.data

    def run(self) -> dict:
        scene = self.scene
        dt = scene['timestep']
        steps = round(scene['sim_seconds'] / dt)
        periods = {name: max(1, round(1.0 / (rate * dt))) for name, rate in scene['rates'].items()
                   if name != 'lidar'}
        counts = dict.fromkeys(periods, 0)
        event_steps = sorted({step for period in periods.values() for step in range(period, steps + 1, period)})
        plant, context = self.plant, self.plant_context
        start = time.perf_counter()
        for step in event_steps:
            self.simulator.AdvanceTo(step * dt)
            if self.sensor is not None and step % periods['camera'] == 0:
                self.rgbd()
                counts['camera'] += 1
            if step % periods['imu'] == 0:
                plant.EvalBodySpatialVelocityInWorld(context, self.root)
                counts['imu'] += 1
            if step % periods['joint_states'] == 0:
                plant.GetPositionsAndVelocities(context, self.model)
                plant.EvalBodyPoseInWorld(context, self.root)  # odometry / TF
                counts['joint_states'] += 1
        wall = time.perf_counter() - start
        position = plant.EvalBodyPoseInWorld(context, self.root).translation()
        return {'wall': wall, 'sim_seconds': steps * dt, 'counts': counts, 'final_xy': position[:2].tolist()}


def main() -> None:
    scene = json.load(open(sys.argv[1]))
    measure = sys.argv[2]
    if measure in ('run', 'run-no-cameras'):
        result = Room(scene, cameras=measure == 'run').run()
    elif measure == 'snapshot':  # what the camera sees at the spawn, before any step
        _, depth = Room(scene, cameras=True).rgbd()
        depth = np.where(np.isfinite(depth[::8, ::8, 0]), depth[::8, ::8, 0], scene['camera']['far'])
        result = {'depth': depth.tolist()}
    elif measure == 'camera':
        room = Room(scene, cameras=True)
        for _ in range(3):
            room.rgbd()
        repeats = 40
        start = time.perf_counter()
        for index in range(repeats):
            room.simulator.AdvanceTo((index + 1) * scene['timestep'])  # the scene changes between frames
            room.rgbd()
        result = {'ms_per_frame': (time.perf_counter() - start) / repeats * 1e3}
        color, depth = room.rgbd()  # what the frames showed: the room, not a blank image
        result.update(color_std=float(np.std(color[..., :3])), depth_finite=float(np.isfinite(depth).mean()))
    else:
        raise SystemExit(f'drake_room.py: MEASURE: expected run, run-no-cameras or camera, got {measure!r}')
    result['renderer'] = 'RenderEngineVtk'
    print('\nRESULT', json.dumps(result), flush=True)


if __name__ == '__main__':
    main()
