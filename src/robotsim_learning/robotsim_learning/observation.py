"""What a learned policy sees, built from the robot's own topics only (ROS-free).

One vector per decision, the same in training (from recorded bags) and on the robot (the policy
node): the lidar scan pooled into sectors, a small grey-scale copy of the camera image, the odometry
twist, and the goal relative to the robot. The :class:`ObservationSpec` travels inside the exported
policy file, so a node can refuse a policy trained for another robot (another beam count or image
size) instead of feeding it misread inputs.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class ObservationSpec:
    scan_samples: int
    """Beams of the robot's LaserScan the policy was trained on (its description's lidar samples)."""
    scan_range_max: float
    """Range reported for 'no return' (+Inf) and the clip of every range (m)."""
    sectors: int = 36
    """The scan is pooled into this many equal sectors, each its nearest range (obstacles stay visible); 0: the scan
    is not observed (a camera-only policy, for a robot without lidar)."""
    image_width: int = 0
    """Width of the robot's camera image (px); 0 = no image in the observation."""
    image_height: int = 0
    """Height of the robot's camera image (px)."""
    image_sectors: tuple[int, int] = (12, 16)
    """(rows, columns) of the grey-scale copy of the image: each cell the mean of its pixels, 0..1."""
    heading: str = 'odometry'
    """Where the robot's heading for the goal's bearing comes from: 'odometry' (the wheel odometry's pose) or
    'imu' (the IMU's orientation, the wheel odometry's travel turned onto it: :class:`ImuHeadingOdometry`)."""
    twist: bool = True
    """Whether the odometry's twist (linear.x, angular.z) is observed. A network imitating demonstrations can learn
    from the robot's own motion to go on with it (a demonstrator's next command is mostly its last one), and then
    turn on the spot because it is turning; False leaves the robot's motion out."""
    corridors: tuple[float, ...] = ()
    """Bearings (rad) relative to the goal's of the straight corridors whose free length is observed, after the one
    straight ahead (:func:`corridor_lengths`); () observes none. The pooled sectors say where obstacles are; these
    say whether one blocks the way to the goal, which a network otherwise has to infer from goal bearing times
    sector, the interaction it learns worst."""
    corridor_half_width: float = 0.0
    """Half the width (m) of a corridor: the radius of the robot's footprint (its collision shapes, arm included)."""
    corridor_length: float = 3.0
    """Longest free length (m) reported; a corridor free farther reads this."""
    scan_angle_min: float = 0.0
    """Angle (rad) of the scan's first beam in the lidar's frame (for the corridors)."""
    scan_angle_increment: float = 0.0
    """Angle (rad) between the scan's beams (for the corridors)."""
    scan_origin: tuple[float, float] = (0.0, 0.0)
    """(x, y) of the lidar in the base frame (m; for the corridors; a level lidar facing forward)."""
    perception: str = ''
    """sha256 of the perception model (stage 1 of a chained policy, ``robotsim perception train``) the camera image
    passes through first; '' observes the grey-scale copy of the image instead. With it the observation holds, in
    place of the grey levels, the abstraction: per cell of ``image_sectors`` the fraction of each of
    ``perception_classes``, and per column of cells the free floor ahead (:func:`pool_abstraction`)."""
    perception_classes: tuple[str, ...] = ()
    """The perception model's classes, in its output order (the first is the drivable floor)."""
    route_directions: int = 0
    """Bearings (evenly spaced from straight ahead) at which the route feature reads the change of the cost to go
    planned over the memory of seen returns (:class:`robotsim_learning.route_memory.RouteMemory`), followed by the
    cost to go itself; 0 observes no route."""
    route_radius: float = 0.4
    """Distance (m) from the robot of the points whose cost to go is read."""
    route_cell: float = 0.1
    """Side (m) of a cell of the memory's grid."""
    route_clearance: float = 0.0
    """Distance (m) from a remembered return planned around at a high cost: the robot's footprint radius."""
    route_berth: float = 0.15
    """Distance (m) beyond ``route_clearance`` that the plan keeps from returns where it can."""
    route_waypoint: float = 0.0
    """m: > 0 observes the goal's bearing as that of the point this far along the way planned over the memory
    (:meth:`RouteMemory.waypoint`; the goal's distance stays the goal's own); 0 the goal's own bearing."""

    @property
    def uses_image(self) -> bool:
        return self.image_width > 0

    @property
    def uses_scan(self) -> bool:
        return self.sectors > 0

    @property
    def uses_perception(self) -> bool:
        return bool(self.perception)

    @property
    def image_size(self) -> int:
        """Values the image contributes: a grey level per cell, or the abstraction's class fractions per cell
        and the free floor per column of cells."""
        rows, columns = self.image_sectors
        if not self.uses_image:
            return 0
        return rows * columns * len(self.perception_classes) + columns if self.uses_perception else rows * columns

    @property
    def size(self) -> int:
        image = self.image_size
        return (self.sectors + image + (2 if self.twist else 0) + 3 + (len(self.corridors) + 1 if self.corridors else 0)
                + (self.route_directions + 1 if self.route_directions else 0))

    @property
    def uses_route(self) -> bool:
        return self.route_directions > 0

    def names(self) -> list[str]:
        names = [f'scan_sector_{i}' for i in range(self.sectors)]
        if self.uses_perception:
            names += [f'{name}_{r}_{c}' for r in range(self.image_sectors[0]) for c in range(self.image_sectors[1])
                      for name in self.perception_classes]
            names += [f'free_floor_{c}' for c in range(self.image_sectors[1])]
        elif self.uses_image:
            names += [f'image_{r}_{c}' for r in range(self.image_sectors[0]) for c in range(self.image_sectors[1])]
        names += (['odom_linear_x', 'odom_angular_z'] if self.twist else []) + \
            ['goal_distance', 'goal_cos_bearing', 'goal_sin_bearing']
        if self.corridors:
            names += ['corridor_ahead'] + [f'corridor_goal_{math.degrees(b):+.0f}deg' for b in self.corridors]
        if self.route_directions:
            names += [f'route_{360 * k / self.route_directions:.0f}deg' for k in range(self.route_directions)]
            names += ['route_cost_to_go']
        return names

    def route_memory(self):
        """A fresh :class:`robotsim_learning.route_memory.RouteMemory` for an episode, or None without route."""
        if not self.uses_route and not self.route_waypoint:
            return None
        from .route_memory import RouteMemory
        return RouteMemory(self.route_directions, self.route_radius, self.route_cell, self.route_clearance,
                           self.route_berth, self.scan_range_max, self.scan_origin)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'ObservationSpec':
        data = json.loads(text)
        for key in ('image_sectors', 'corridors', 'scan_origin', 'perception_classes'):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)

    @property
    def uses_imu(self) -> bool:
        return self.heading == 'imu'

    def mismatch(self, other: 'ObservationSpec') -> str | None:
        """What differs from the robot's own spec (``other``), as 'expected ...', or None when it fits."""
        for name in ('scan_samples', 'image_width', 'image_height'):
            if name == 'scan_samples' and not self.uses_scan:
                continue  # a camera-only policy does not read the robot's scan
            if getattr(self, name) != getattr(other, name):
                return (f'the policy expects {name.replace("_", " ")} {getattr(self, name)}, '
                        f'the robot has {getattr(other, name)}')
        return None


CORRIDORS = (0.0, -0.35, 0.35, -0.7, 0.7)
"""The corridors (bearings relative to the goal's, rad) of ``--corridors``: toward the goal and 20 and 40 degrees
either side of it."""


def spec_for_robot(model, sectors: int = 36, image: bool = True, heading: str = 'odometry',
                   corridors: tuple[float, ...] = (), route: int = 0, waypoint: float = 0.0,
                   twist: bool = True) -> ObservationSpec:
    """The observation of ``model``'s first 1-channel lidar (and first camera, when ``image``; its IMU when
    ``heading`` is 'imu'; the free length of ``corridors`` and straight ahead, when given; the odometry's twist when
    ``twist``)."""
    if heading not in ('odometry', 'imu'):
        raise ValueError(f"heading: expected 'odometry' or 'imu', got {heading!r}")
    if heading == 'imu' and not any(s.type == 'imu' for s in model.sensors):
        raise ValueError(f'robot {model.name} has no IMU: expected one for heading imu')
    lidars = [s.spec for s in model.sensors if s.type == 'lidar' and s.spec.channels == 1]
    if not lidars and sectors > 0:
        raise ValueError(f'robot {model.name} has no 1-channel lidar: the policy observes a LaserScan '
                         '(a camera-only policy observes no scan: --no-scan)')
    cameras = [s.spec for s in model.sensors if s.type == 'camera' and 'rgb' in s.spec.images] if image else []
    if sectors == 0 and not cameras:
        raise ValueError(f'robot {model.name}: a policy without the scan observes the camera image; expected an rgb '
                         f'camera{" and image observed (not --no-image)" if not image else ""}')
    if not (0 <= waypoint <= 5):
        raise ValueError(f'waypoint: expected 0 ... 5 m, got {waypoint}')
    if sectors == 0 and (corridors or route or waypoint):
        raise ValueError('corridors and the route are measured on the scan: expected the scan observed with them')
    if route and (route < 2 or route % 2 or route > 64):
        raise ValueError(f'route: expected an even number of directions 2 ... 64, got {route}')
    geometry = {}
    if corridors or route or waypoint:
        from robotsim_core.description.kinematics import forward_kinematics
        from robotsim_sensors.lidar import beam_angles

        from .expert import footprint_radius
        lidar = next(s for s in model.sensors if s.type == 'lidar' and s.spec.channels == 1)
        poses = forward_kinematics(model.tree, {})
        relative = np.linalg.inv(poses[model.base_link]) @ poses[lidar.frame]
        angles, _ = beam_angles(lidar.spec)
        geometry = dict(corridors=tuple(float(b) for b in corridors),
                        corridor_half_width=footprint_radius(model) if corridors else 0.0,
                        scan_angle_min=float(angles[0]),
                        scan_angle_increment=float(angles[1] - angles[0]) if len(angles) > 1 else 0.0,
                        scan_origin=(float(relative[0, 3]), float(relative[1, 3])))
        if route or waypoint:
            geometry.update(route_directions=int(route), route_clearance=footprint_radius(model),
                            route_waypoint=float(waypoint))
    if not lidars:  # a camera-only policy for a robot without lidar: nothing of a scan
        return ObservationSpec(scan_samples=0, scan_range_max=1.0, sectors=0, image_width=cameras[0].width,
                               image_height=cameras[0].height, heading=heading, twist=twist)
    return ObservationSpec(scan_samples=lidars[0].samples, scan_range_max=lidars[0].range_max, sectors=sectors,
                           image_width=cameras[0].width if cameras else 0,
                           image_height=cameras[0].height if cameras else 0, heading=heading, twist=twist, **geometry)


def pool_scan(spec: ObservationSpec, ranges: np.ndarray) -> np.ndarray:
    """Nearest range per sector; REP 117: +Inf (no return) is the maximum range, -Inf (too close) and
    NaN (no valid measurement) count as blocked (0), the cautious reading."""
    ranges = np.asarray(ranges, dtype=np.float64)
    if ranges.shape != (spec.scan_samples,):
        raise ValueError(f'expected {spec.scan_samples} scan ranges, got {ranges.shape[0]}')
    clean = np.where(np.isposinf(ranges), spec.scan_range_max, ranges)
    clean = np.where(np.isnan(clean) | np.isneginf(clean), 0.0, clean)
    clean = np.clip(clean, 0.0, spec.scan_range_max)
    edges = np.linspace(0, spec.scan_samples, spec.sectors + 1).round().astype(int)
    return np.array([clean[a:b].min() if b > a else spec.scan_range_max for a, b in zip(edges, edges[1:])])


def pool_image(spec: ObservationSpec, rgb: np.ndarray) -> np.ndarray:
    """(rows x columns) mean grey level of an (H, W, 3) uint8 image, 0..1, row-major."""
    rgb = np.asarray(rgb)
    if rgb.shape != (spec.image_height, spec.image_width, 3):
        raise ValueError(f'expected a {spec.image_width}x{spec.image_height} rgb8 image, got shape {rgb.shape}')
    grey = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255.0
    rows, columns = spec.image_sectors
    row_edges = np.linspace(0, spec.image_height, rows + 1).round().astype(int)
    column_edges = np.linspace(0, spec.image_width, columns + 1).round().astype(int)
    return np.array([grey[r0:r1, c0:c1].mean() for r0, r1 in zip(row_edges, row_edges[1:])
                     for c0, c1 in zip(column_edges, column_edges[1:])])


def pool_abstraction(spec: ObservationSpec, classes: np.ndarray) -> np.ndarray:
    """The observation of a perception model's class map (h, w; class indices): per cell of ``spec.image_sectors``
    (row-major) the fraction of its pixels of each class, then per column of cells the free floor ahead: the
    shortest run of floor pixels (class 0) from the bottom row up, over the cell's pixel columns, as a fraction of
    the map's height (the camera's pseudo-scan: the nearer a wall or an obstacle, the lower it meets the floor)."""
    classes = np.asarray(classes)
    count = len(spec.perception_classes)
    if classes.ndim != 2 or classes.shape[0] < spec.image_sectors[0] or classes.shape[1] < spec.image_sectors[1]:
        raise ValueError(f'expected a class map of at least {spec.image_sectors} pixels, got shape {classes.shape}')
    height, width = classes.shape
    rows, columns = spec.image_sectors
    row_edges = np.linspace(0, height, rows + 1).round().astype(int)
    column_edges = np.linspace(0, width, columns + 1).round().astype(int)
    one_hot = np.eye(count, dtype=np.float64)[np.clip(classes, 0, count - 1)]
    fractions = [one_hot[r0:r1, c0:c1].mean(axis=(0, 1)) for r0, r1 in zip(row_edges, row_edges[1:])
                 for c0, c1 in zip(column_edges, column_edges[1:])]
    not_floor = classes[::-1] != 0                      # bottom row first
    run = np.where(not_floor.any(axis=0), not_floor.argmax(axis=0), height) / height
    free = [run[c0:c1].min() for c0, c1 in zip(column_edges, column_edges[1:])]
    return np.concatenate([np.concatenate(fractions), np.array(free)])


def corridor_lengths(spec: ObservationSpec, ranges: np.ndarray, goal_base) -> np.ndarray:
    """Free length (m, 0 ... ``corridor_length``) straight ahead and along each of ``spec.corridors`` (bearings
    relative to the goal's): how far a disc of ``corridor_half_width`` moves from the base's origin along that line
    before it touches a scan return (a point behind the origin never blocks)."""
    ranges = np.asarray(ranges, dtype=np.float64)
    angles = spec.scan_angle_min + spec.scan_angle_increment * np.arange(len(ranges))
    hit = np.isfinite(ranges) & (ranges > 0) & (ranges < spec.scan_range_max)
    points = np.stack([spec.scan_origin[0] + ranges[hit] * np.cos(angles[hit]),
                       spec.scan_origin[1] + ranges[hit] * np.sin(angles[hit])], axis=1)
    bearing = math.atan2(goal_base[1], goal_base[0]) if any(goal_base) else 0.0
    directions = np.array([0.0, *(bearing + b for b in spec.corridors)])
    units = np.stack([np.cos(directions), np.sin(directions)], axis=1)        # (D, 2)
    along = points @ units.T                                                   # (P, D)
    across = np.abs(points @ np.stack([-units[:, 1], units[:, 0]], axis=1).T)
    width = spec.corridor_half_width
    blocked = (along > 0) & (across < width)
    reach = along - np.sqrt(np.maximum(width ** 2 - across ** 2, 0.0))
    lengths = np.where(blocked, reach, np.inf).min(axis=0, initial=np.inf)
    return np.clip(lengths, 0.0, spec.corridor_length)


def goal_features(goal_in_base: tuple[float, float]) -> np.ndarray:
    """Distance and bearing (as cos, sin) of the goal in the robot's base frame."""
    x, y = float(goal_in_base[0]), float(goal_in_base[1])
    distance = math.hypot(x, y)
    bearing = math.atan2(y, x) if distance > 0 else 0.0
    return np.array([distance, math.cos(bearing), math.sin(bearing)])


MAX_GOAL_DISTANCE = 1e4
"""m: the farthest goal coordinate a driver takes (10 km; (1e300, 1e300) is no place to drive to)."""


def goal_problem(frame_id: str, point, frame_prefix: str, other_frames: tuple[str, ...] = ()) -> str:
    """'' when a goal_pose can be used: finite x and y in the robot's odom frame (or one of ``other_frames``);
    otherwise why it is refused (a goal in another frame is never silently misread)."""
    frames = tuple(dict.fromkeys((f'{frame_prefix}odom', 'odom', *other_frames)))
    if not all(math.isfinite(v) and abs(v) <= MAX_GOAL_DISTANCE for v in point):
        return f'expected finite x and y within +-{MAX_GOAL_DISTANCE:g} m, got {tuple(point)}'
    if frame_id not in frames:
        return f'expected frame_id {" or ".join(repr(f) for f in frames)}, got {frame_id!r}'
    return ''


def mirrored_ranges(ranges, angle_min: float, angle_increment: float) -> np.ndarray:
    """A scan's ranges as the same lidar would read them in the world mirrored about the base's x axis (a lidar on
    that axis, looking forward): the sample at angle a takes the reading at -a, the nearest sample of a full turn
    (a scan of less than a full turn: the nearest within it). Training's ``--mirror`` data augmentation."""
    ranges = np.asarray(ranges, dtype=np.float64)
    count = len(ranges)
    angles = angle_min + angle_increment * np.arange(count)
    index = np.rint((-angles - angle_min) / angle_increment).astype(int)
    if abs(count * angle_increment - 2 * math.pi) < 0.5 * abs(angle_increment):
        index %= count
    return ranges[np.clip(index, 0, count - 1)]


def goal_in_base(goal_xy, pose: tuple[float, float, float]) -> tuple[float, float]:
    """A goal (x, y) given in the frame of ``pose`` (x, y, yaw: e.g. odom) in the robot's base frame."""
    dx, dy = goal_xy[0] - pose[0], goal_xy[1] - pose[1]
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return c * dx + s * dy, -s * dx + c * dy


def observation(spec: ObservationSpec, ranges, rgb, twist: tuple[float, float], goal_base,
                perceive=None, route=None) -> np.ndarray:
    """The policy's input vector (float32, ``spec.size`` values, in ``spec.names()`` order); ``ranges`` may be None
    when the spec observes no scan. ``perceive`` (a chained policy's: ``spec.perception``) turns the rgb image into
    its class map; ``route``: the route feature (:meth:`RouteMemory.features`) of a spec that observes it."""
    parts = [pool_scan(spec, ranges)] if spec.uses_scan else []
    if spec.uses_perception:
        if perceive is None:
            raise ValueError('the policy observes the perception stage\'s abstraction: expected its model')
        parts.append(pool_abstraction(spec, perceive(rgb)))
    elif spec.uses_image:
        parts.append(pool_image(spec, rgb))
    parts += ([np.asarray(twist, dtype=np.float64)] if spec.twist else []) + [goal_features(goal_base)]
    if spec.corridors:
        parts.append(corridor_lengths(spec, ranges, goal_base))
    if spec.uses_route:
        if route is None or len(route) != spec.route_directions + 1:
            raise ValueError(f'the policy observes the route: expected {spec.route_directions + 1} route values')
        parts.append(np.asarray(route, dtype=np.float64))
    return np.concatenate(parts).astype(np.float32)


def stamp_seconds(stamp) -> float:
    """A builtin_interfaces/Time (rclpy or rosbags message) in seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


def closest_by_stamp(messages, stamp: float):
    """The message whose header stamp is nearest ``stamp`` (s), or None: how the policy node and the
    training set pair the camera image and the odometry with a scan."""
    return min(messages, key=lambda m: abs(stamp_seconds(m.header.stamp) - stamp)) if messages else None


def rgb_array(image) -> np.ndarray:
    """An rgb8 sensor_msgs/Image (rclpy or rosbags message) as an (H, W, 3) uint8 array."""
    if image.encoding != 'rgb8':
        raise ValueError(f"expected an rgb8 image, got encoding {image.encoding!r}")
    return np.frombuffer(bytes(image.data), dtype=np.uint8).reshape(image.height, image.width, 3)


def yaw_of(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


class ImuHeadingOdometry:
    """The robot's pose in odom with the heading from the IMU's orientation: each wheel-odometry step
    (the change of its pose) is turned by the difference between the IMU's heading and the odometry's.

    Why: skid-steer wheel odometry's heading drifts with tyre scrub (measured on the randomised rooms:
    up to 18 degrees after 4 m), and a goal given in odom is then searched for in the wrong place; an
    IMU with on-board fusion (the rover's BNO055) reports a heading that does not drift. This is the planar
    core of what robot_localization's EKF does with the odometry and the IMU. Steps use pose changes,
    not speeds, so the estimate does not depend on how many messages were seen in between (the node gets
    every message, an episode driver every tenth)."""

    def __init__(self):
        self.imu_yaw: float | None = None
        self.heading_offset = 0.0   # odom yaw - IMU yaw at the first pose (the IMU's yaw is in its own world)
        self.position: np.ndarray | None = None
        self.heading = 0.0
        self.last_odometry: tuple[float, float, float] | None = None
        self.problem = 'no IMU orientation yet'

    def add_imu(self, imu) -> None:
        if imu.orientation_covariance[0] == -1.0:  # REP 145: -1 = the IMU does not report orientation
            self.problem = 'the IMU reports no orientation (orientation_covariance[0] == -1): expected a fused IMU'
            return
        self.imu_yaw = yaw_of(imu.orientation)

    def add_odometry(self, odometry) -> None:
        pose = odometry.pose.pose
        current = (pose.position.x, pose.position.y, yaw_of(pose.orientation))
        if self.imu_yaw is None:
            return
        if self.position is None:
            self.position, self.heading_offset = np.array(current[:2]), current[2] - self.imu_yaw
            self.problem = ''
        else:
            previous = self.last_odometry
            step = np.array(current[:2]) - np.array(previous[:2])
            heading = self.imu_yaw + self.heading_offset
            # The step as the odometry saw it, turned from its (drifting) heading onto the IMU's (both the
            # mean over the step).
            imu_mean = self.heading + 0.5 * math.remainder(heading - self.heading, math.tau)
            odometry_mean = previous[2] + 0.5 * math.remainder(current[2] - previous[2], math.tau)
            turn = math.remainder(imu_mean - odometry_mean, math.tau)
            c, s = math.cos(turn), math.sin(turn)
            self.position = self.position + np.array([c * step[0] - s * step[1], s * step[0] + c * step[1]])
        self.heading = self.imu_yaw + self.heading_offset
        self.last_odometry = current

    def pose(self) -> tuple[float, float, float] | None:
        """(x, y, yaw) in odom, or None before the first IMU orientation and odometry."""
        return None if self.position is None else (float(self.position[0]), float(self.position[1]), self.heading)


def decision_state(spec: ObservationSpec, scan, images, odometries,
                   pose: tuple[float, float, float] | None = None) -> tuple[float, object, tuple[float, float, float]]:
    """A decision's instant and where the robot is then: (the scan's stamp, or without one, a camera-only
    policy, the newest image's; the odometry message closest to it; the robot's x, y, yaw in odom: ``pose``
    when given, the :class:`ImuHeadingOdometry` estimate, else that odometry's pose). The one rule for the policy
    node and the training set alike."""
    stamp = stamp_seconds(scan.header.stamp if spec.uses_scan else images[-1].header.stamp)
    odometry = closest_by_stamp(odometries, stamp)
    if pose is not None:
        return stamp, odometry, tuple(pose)
    if spec.uses_imu:
        raise ValueError('heading imu: expected the IMU-heading pose')
    at = odometry.pose.pose
    return stamp, odometry, (at.position.x, at.position.y, yaw_of(at.orientation))


def observation_from_messages(spec: ObservationSpec, scan, images, odometries, goal_odom,
                              pose: tuple[float, float, float] | None = None, perceive=None,
                              memory=None) -> np.ndarray:
    """The observation at a scan: the image and odometry closest to its stamp, the goal (x, y in odom)
    seen from ``pose`` (heading imu: the :class:`ImuHeadingOdometry` estimate), else from the odometry's
    pose (:func:`decision_state`). Shared by the policy node and the training set, so both see the same vector
    for the same messages (``perceive``: a chained policy's perception stage, as :func:`observation`; ``memory``:
    the episode's :class:`RouteMemory` of a spec that observes the route, given the scan at the robot's pose
    first, once per scan stamp)."""
    stamp, odometry, robot = decision_state(spec, scan, images, odometries, pose)
    rgb = rgb_array(closest_by_stamp(images, stamp)) if spec.uses_image else None
    route, goal_base = None, goal_in_base(goal_odom, robot)
    if spec.uses_route or spec.route_waypoint:
        if memory is None:
            raise ValueError('the policy observes the route: expected the episode\'s route memory')
        memory.add_scan(scan.ranges, scan.angle_min, scan.angle_increment, robot, stamp)
        route = memory.features(robot, goal_odom) if spec.uses_route else None
        goal_base = waypoint_goal(spec, memory, robot, goal_odom)
    return observation(spec, np.asarray(scan.ranges, dtype=np.float64) if spec.uses_scan else None, rgb,
                       (odometry.twist.twist.linear.x, odometry.twist.twist.angular.z), goal_base, perceive, route)


def waypoint_goal(spec: ObservationSpec, memory, robot, goal_odom) -> tuple[float, float]:
    """The goal in the base frame as the policy observes it: with ``spec.route_waypoint``, at the goal's own
    distance in the bearing of the waypoint that far along the planned way; else the goal itself."""
    goal_base = goal_in_base(goal_odom, robot)
    if not spec.route_waypoint:
        return goal_base
    point = goal_in_base(memory.waypoint(robot, goal_odom, spec.route_waypoint), robot)
    distance, along = math.hypot(*goal_base), math.hypot(*point)
    if along == 0.0:
        return goal_base
    return distance * point[0] / along, distance * point[1] / along
