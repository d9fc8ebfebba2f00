"""The end-of-run report (ROS-free): one PNG of what a run did.

Top-down trajectory over the world (ground truth vs encoder odometry, odometry anchored at the
spawn pose because the odom frame starts there), the last lidar scan, the last camera frame, and
time plots of commanded vs actual forward speed, wheel effort as a fraction of stall torque (the
PWM duty in firmware mode, where the motor bridge reports duty x stall torque), and wheel slip
(1 - true speed / wheel-rim speed while the wheels turn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from robotsim_core.description.world_geometry import heightfield_samples, load_entity_mesh
from robotsim_core.description.world_spec import WorldSpec
from robotsim_core.geometry import rpy_to_matrix


@dataclass
class RobotTrace:
    """What the monitor collected for one robot; times are sim seconds."""
    label: str
    truth: list[tuple[float, float, float, float, float]] = field(default_factory=list)
    """(t, x, y, yaw, forward speed) in the world frame."""
    odom: list[tuple[float, float, float]] = field(default_factory=list)
    """(t, x, y) in the robot's odom frame."""
    commands: list[tuple[float, float, float]] = field(default_factory=list)
    """(t, linear x, angular z) of cmd_vel."""
    wheels: list[tuple[float, float, float]] = field(default_factory=list)
    """(t, mean rim speed of the driven wheels m/s, mean |effort| / stall torque)."""
    scan: tuple[np.ndarray, np.ndarray] | None = None
    """Last scan: (angles rad, ranges m)."""
    image: np.ndarray | None = None
    """Last camera frame (H x W x 3, uint8)."""


def _world_outline(axes, world: WorldSpec) -> None:
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Circle, Polygon
    for wall in world.walls:
        axes.plot([wall.start[0], wall.end[0]], [wall.start[1], wall.end[1]], color='0.35', linewidth=3)
    for box in world.boxes:
        half = np.array(box.size[:2]) / 2
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * half
        c, s = math.cos(box.yaw), math.sin(box.yaw)
        corners = corners @ np.array([[c, s], [-s, c]]) + np.array(box.position[:2])
        axes.add_patch(Polygon(corners, closed=True, facecolor=box.rgba[:3], alpha=0.6, edgecolor='0.2'))
    for cylinder in world.cylinders:
        axes.add_patch(Circle(cylinder.position[:2], cylinder.radius, facecolor=cylinder.rgba[:3], alpha=0.6,
                              edgecolor='0.2'))
    for sphere in world.spheres:
        axes.add_patch(Circle(sphere.position[:2], sphere.radius, facecolor=sphere.rgba[:3], alpha=0.6, edgecolor='0.2'))
    for index, terrain in enumerate(world.heightfields):  # shaded by height, under the rest
        samples = heightfield_samples(terrain, f'heightfields[{index}]')
        x, y = terrain.position[:2]
        half_x, half_y = terrain.size[0] / 2, terrain.size[1] / 2
        axes.imshow(samples, origin='lower', extent=(x - half_x, x + half_x, y - half_y, y + half_y), cmap='terrain',
                    alpha=0.5, zorder=0)
    for index, entity in enumerate(world.meshes):  # its footprint: every triangle seen from above
        mesh = load_entity_mesh(entity, world.source or world.name, f'meshes[{index}]', contact=False)
        points = mesh.vertices @ rpy_to_matrix(entity.rpy).T + np.asarray(entity.position)
        axes.add_collection(PolyCollection(points[mesh.faces][:, :, :2], facecolor=entity.rgba[:3], alpha=0.6,
                                           edgecolor='none'))


def _odom_in_world(trace: RobotTrace) -> np.ndarray:
    if not trace.odom or not trace.truth:
        return np.zeros((0, 2))
    _, x0, y0, yaw0, _ = trace.truth[0]
    odom = np.array([(x, y) for _, x, y in trace.odom])
    c, s = math.cos(yaw0), math.sin(yaw0)
    return odom @ np.array([[c, s], [-s, c]]) + np.array([x0, y0])


def slip_ratio(rim_speed: np.ndarray, true_speed: np.ndarray, threshold: float = 0.05) -> np.ndarray:
    """1 - v_true / v_rim where the wheels turn faster than ``threshold`` m/s, NaN elsewhere."""
    out = np.full(rim_speed.shape, np.nan)
    moving = np.abs(rim_speed) > threshold
    out[moving] = 1.0 - true_speed[moving] / rim_speed[moving]
    return out


def write_report(path: str, world: WorldSpec, traces: list[RobotTrace], title: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    main = traces[0]
    figure = plt.figure(figsize=(16, 10), dpi=90)
    grid = figure.add_gridspec(3, 3)
    figure.suptitle(title)

    top = figure.add_subplot(grid[:2, 0:2])
    _world_outline(top, world)
    for index, trace in enumerate(traces):
        color = f'C{index}'
        if trace.truth:
            truth = np.array(trace.truth)
            top.plot(truth[:, 1], truth[:, 2], color=color, label=f'{trace.label} ground truth')
            top.plot(truth[0, 1], truth[0, 2], 'o', color=color)
        odom = _odom_in_world(trace)
        if len(odom):
            top.plot(odom[:, 0], odom[:, 1], '--', color=color, label=f'{trace.label} wheel odometry')
    top.set_aspect('equal')
    top.set_xlabel('x (m)')
    top.set_ylabel('y (m)')
    top.set_title('top-down trajectory (o = start)')
    top.legend(loc='upper right', fontsize=8)

    scan_axes = figure.add_subplot(grid[0, 2], projection='polar')
    if main.scan is not None:
        angles, ranges = main.scan
        finite = np.isfinite(ranges)
        scan_axes.scatter(angles[finite], ranges[finite], s=2)
    scan_axes.set_title(f'{main.label}: last scan (robot frame, x forward up)', fontsize=9)
    scan_axes.set_theta_zero_location('N')

    image_axes = figure.add_subplot(grid[1, 2])
    if main.image is not None:
        image_axes.imshow(main.image)
    else:
        image_axes.text(0.5, 0.5, 'no camera frame received', ha='center', va='center')
    image_axes.set_title(f'{main.label}: last camera frame', fontsize=9)
    image_axes.axis('off')

    speed_axes = figure.add_subplot(grid[2, 0])
    if main.commands:
        commands = np.array(main.commands)
        speed_axes.step(commands[:, 0], commands[:, 1], where='post', label='commanded v')
    if main.truth:
        truth = np.array(main.truth)
        speed_axes.plot(truth[:, 0], truth[:, 4], label='actual v (ground truth)')
    speed_axes.set_xlabel('sim time (s)')
    speed_axes.set_ylabel('m/s')
    speed_axes.set_title('commanded vs actual forward speed', fontsize=9)
    speed_axes.legend(fontsize=8)

    duty_axes = figure.add_subplot(grid[2, 1])
    slip_axes = figure.add_subplot(grid[2, 2])
    if main.wheels:
        wheels = np.array(main.wheels)
        duty_axes.plot(wheels[:, 0], wheels[:, 2])
        if main.truth:
            truth = np.array(main.truth)
            true_speed = np.interp(wheels[:, 0], truth[:, 0], truth[:, 4])
            slip_axes.plot(wheels[:, 0], slip_ratio(wheels[:, 1], true_speed))
    duty_axes.set_title('mean |wheel effort| / stall torque (= PWM duty with firmware)', fontsize=9)
    duty_axes.set_xlabel('sim time (s)')
    slip_axes.set_title('wheel slip 1 - v_true / v_rim', fontsize=9)
    slip_axes.set_xlabel('sim time (s)')
    slip_axes.set_ylim(-1, 1)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
