"""A velocity shield from the lidar scan, ROS-free: it lets a base command through only as fast as the robot can
still stop before any scan point enters its footprint.

The policy node (``shield:=true``) and the fast path (``--shield``) put every command of the policy through
:meth:`VelocityShield.filter`. For a command (v, w) it rolls the robot's footprint forward for one reaction time (a
decision period plus a margin for latency) at the command, its yaw rate slewing from the base's toward the
command's, and then while braking at the drive's limits (a dynamic-window check with the drive's own dynamics),
against the scan points of the newest scan in the base frame. The command passes when the footprint keeps ``margin``
from every point along that path (or, already closer than that, ends farther away); else the nearest command that
passes is sent: its speed scaled down in steps, its turn changed by up to ``steer`` (so a robot headed at an
obstacle is turned past it instead of stopped in front of it, where a policy that keeps pushing ahead would stay),
down to standing still, which always passes. It never adds speed: what it cannot make safe it stops.

What it cannot see, it cannot avoid: obstacles outside the lidar's plane, and slip (a robot sliding on a floor
less grippy than the deceleration limit assumes stops later than the rollout says).
"""

from __future__ import annotations

import math

import numpy as np

FRACTIONS = (1.0, 0.75, 0.5, 0.3, 0.15, 0.0)
"""Scales tried on the commanded speed, then (at zero speed) on the turn, largest first."""
STEER_STEPS = (0.0, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 1.0, -1.0)
"""Turns tried on a command, as fractions of :attr:`VelocityShield.steer`."""
STEER = 0.5
"""A robot's shield (:meth:`VelocityShield.for_robot`) turns commands by up to this fraction of its drive's yaw-rate
limit. Measured on the fast path with the shipped policy on room_obstacles_hard: on 100 scenarios a shield that only
slowed and stopped reached 90 goals and left 10 robots stuck in front of an obstacle (timeouts); turning by up to a
quarter, a half or all of the limit reached 91-96 of 100 with 0-3 collisions on those and 100 other scenarios, a
spread no larger than between the two sets of scenarios (all measured before a robot within the margin was held to
moving away, :data:`AWAY`). The half is kept as a robot's default."""
AWAY = 0.01
"""A robot already closer than :data:`HARD` may only move so that it ends this much farther (m) from what it sees."""
HARD = 0.03
"""m: a robot closer than the margin but not closer than this may also move along a path that does not end closer than
it is now and on the way comes no closer than this and at most :data:`DIP` closer than now: it may slide along an
obstacle beside it (forward or back) to where the obstacle ends. Closer than this, only moving away by :data:`AWAY`
passes. Measured on the fast path with the shipped policy on the hard course: held to moving away at any clearance
inside the margin, a robot alongside an obstacle could neither turn (a corner swings in) nor back up or drive on
(neither ends farther away) and stayed there until the episode's time ran out."""
DIP = 0.02
"""m: how much closer than now a path may come on the way for a robot between :data:`HARD` and the margin (a scan's
noise moves its nearest point by about this much from one scan to the next)."""
SUBSTEPS = 5
"""Integration steps per pose of a path (:meth:`VelocityShield.path`), whose poses are ``step`` apart in time."""
REACH = 3.0
"""Scan points farther than this (m) from the base cannot be reached within a stopping distance of the drives
this is made for (0.8 m/s, 1 m/s^2: 0.32 m plus a reaction time); they are skipped."""


def lidar_pose(model) -> tuple[float, float, float]:
    """(x, y, yaw) in the base frame of a robot description's first 1-channel lidar (mounted level, REP 103 axes)."""
    from robotsim_core.description.kinematics import forward_kinematics
    lidars = [s for s in model.sensors if s.type == 'lidar' and s.spec.channels == 1]
    if not lidars:
        raise ValueError(f'robot {model.name} has no 1-channel lidar: the shield reads a LaserScan')
    poses = forward_kinematics(model.tree, {})
    relative = np.linalg.inv(poses[model.base_link]) @ poses[lidars[0].frame]
    return float(relative[0, 3]), float(relative[1, 3]), math.atan2(relative[1, 0], relative[0, 0])


class VelocityShield:
    """Owns the robot's footprint, the lidar's pose in the base frame and the braking limits; no ROS, no state
    beyond its counters (:attr:`checked`, :attr:`limited`)."""

    def __init__(self, footprint: np.ndarray, sensor_pose: tuple[float, float, float], deceleration: float,
                 yaw_deceleration: float, reaction_time: float = 0.2, margin: float = 0.06, step: float = 0.05,
                 steer: float = 0.0, max_yaw_rate: float = math.inf):
        rectangles = np.asarray(footprint, dtype=float).reshape(-1, 4, 2)
        self.boxes = np.concatenate([rectangles.min(axis=1), rectangles.max(axis=1)], axis=1)  # (S, 4) x0 y0 x1 y1
        """The footprint's rectangles in the base frame (axis-aligned there: evaluation.footprint)."""
        self.sensor_pose = tuple(float(v) for v in sensor_pose)
        """(x, y, yaw) of the scan's frame in the base frame."""
        if not (deceleration > 0 and yaw_deceleration > 0 and reaction_time >= 0 and margin >= 0 and step > 0):
            raise ValueError('VelocityShield: expected positive decelerations and step, non-negative reaction time '
                             f'and margin, got {deceleration}, {yaw_deceleration}, {reaction_time}, {margin}, {step}')
        self.deceleration, self.yaw_deceleration = float(deceleration), float(yaw_deceleration)
        self.reaction_time, self.margin, self.step = float(reaction_time), float(margin), float(step)
        if not (steer >= 0 and max_yaw_rate > 0):
            raise ValueError(f'VelocityShield: expected steer >= 0 and max_yaw_rate > 0, got {steer}, {max_yaw_rate}')
        self.steer = float(steer)
        """Most the shield changes a moving command's yaw rate by (rad/s) to keep it moving; 0: it only slows and
        stops."""
        self.max_yaw_rate = float(max_yaw_rate)
        """The drive's yaw-rate limit (rad/s): no turned command exceeds it."""
        self.checked = 0
        """Commands filtered."""
        self.limited = 0
        """Commands slowed or stopped."""

    @classmethod
    def for_robot(cls, model, rate: float, **options) -> 'VelocityShield':
        """The shield of a robot description (robotsim_core.description.RobotModel) for a driver deciding at
        ``rate`` Hz: its footprint, its first 1-channel lidar's pose, its drive's acceleration limits."""
        from .evaluation import footprint
        drive = model.drive
        options.setdefault('reaction_time', 1.0 / rate + 0.1)
        options.setdefault('steer', STEER * drive.max_yaw_rate)
        options.setdefault('max_yaw_rate', drive.max_yaw_rate)
        return cls(footprint(model), lidar_pose(model), drive.max_linear_acceleration,
                   options.pop('yaw_deceleration', drive.max_yaw_acceleration), **options)

    def points(self, ranges, angle_min: float, angle_increment: float, range_min: float,
               range_max: float) -> np.ndarray:
        """The scan's returns within :data:`REACH` as (P, 2) points in the base frame (REP 117: +Inf and NaN
        are no return, -Inf a return at range_min; other readings outside [range_min, range_max] are dropped)."""
        ranges = np.asarray(ranges, dtype=float)
        angles = angle_min + angle_increment * np.arange(len(ranges))
        # REP 117: -Inf is an object closer than range_min: taken at range_min, where it is at the farthest.
        ranges = np.where(np.isneginf(ranges), range_min, ranges)
        valid = np.isfinite(ranges) & (ranges >= range_min) & (ranges <= min(range_max, REACH))
        x, y, yaw = self.sensor_pose
        angles, ranges = angles[valid] + yaw, ranges[valid]
        return np.stack([x + ranges * np.cos(angles), y + ranges * np.sin(angles)], axis=1)

    def clearances(self, points: np.ndarray, poses: np.ndarray) -> np.ndarray:
        """Signed distance (K,) from the footprint at each pose (K, 3) of the base (relative to now) to the nearest
        point: negative by the depth of the deepest point inside it (so going deeper reads as getting closer)."""
        if not len(points):
            return np.full(len(poses), math.inf)
        c, s = np.cos(poses[:, 2])[:, None], np.sin(poses[:, 2])[:, None]
        dx, dy = points[None, :, 0] - poses[:, 0:1], points[None, :, 1] - poses[:, 1:2]
        local = np.stack([c * dx + s * dy, -s * dx + c * dy], axis=-1)[:, :, None, :]   # (K, P, 1, 2)
        low, high = self.boxes[None, None, :, :2], self.boxes[None, None, :, 2:]
        gap = np.maximum(low - local, local - high)                                      # (K, P, S, 2)
        outside = np.sqrt((np.maximum(gap, 0.0) ** 2).sum(-1))
        signed = np.where((gap <= 0).all(-1), gap.max(-1), outside)                      # inside: -depth
        return signed.min(axis=(1, 2))

    def path(self, linear: float, angular: float, moving: float = 0.0, turning: float = 0.0) -> np.ndarray:
        """Poses (K, 3) of the base, relative to now, for the command (v, w) given while the base moves at
        ``moving`` (m/s) and turns at ``turning`` (rad/s): for the reaction time at the command's speed (at
        ``moving`` when that is faster the same way: it cannot slow down at once), its yaw rate slewing from
        ``turning`` toward the command's at the yaw deceleration limit, then braking, speed and turn each toward
        zero at its limit (as the drive's velocity limiter does: a robot stopping from a turn at speed goes on
        nearly straight). A turn the base is not yet making is not assumed made: a path that swerves past an
        obstacle at once would let a fast robot run at it."""
        if linear == 0.0 and moving != 0.0:
            linear = moving  # still rolling while it turns
        elif moving * linear > 0 and abs(moving) > abs(linear):
            linear = moving
        angular = float(np.clip(angular, -self.max_yaw_rate, self.max_yaw_rate))
        turning = float(np.clip(turning, -self.max_yaw_rate, self.max_yaw_rate))
        react = self.reaction_time
        turned = turning + math.copysign(min(self.yaw_deceleration * react, abs(angular - turning)),
                                         angular - turning)      # the yaw rate when braking starts
        total = react + max(abs(linear) / self.deceleration, abs(turned) / self.yaw_deceleration)
        count = max(1, math.ceil(total / self.step)) * SUBSTEPS
        dt = total / count
        t = (np.arange(count) + 0.5) * dt                        # midpoints of the integration steps
        braking = np.maximum(t - react, 0.0)
        speed = np.where(t < react, linear, np.sign(linear) * np.maximum(abs(linear) - self.deceleration * braking,
                                                                         0.0))
        yaw_rate = np.where(t < react,
                            turning + np.sign(angular - turning) * np.minimum(self.yaw_deceleration * t,
                                                                              abs(angular - turning)),
                            np.sign(turned) * np.maximum(abs(turned) - self.yaw_deceleration * braking, 0.0))
        heading = np.cumsum(yaw_rate) * dt
        middle = heading - 0.5 * yaw_rate * dt                   # heading at each step's midpoint
        x = np.cumsum(speed * np.cos(middle)) * dt
        y = np.cumsum(speed * np.sin(middle)) * dt
        poses = np.stack([x, y, heading], axis=1)
        return poses[SUBSTEPS - 1::SUBSTEPS]

    def filter(self, command: tuple[float, float], scan, moving: float = 0.0,
               turning: float = 0.0) -> tuple[float, float]:
        """The command made safe against ``scan`` (a sensor_msgs/LaserScan, read by attribute); ``moving`` and
        ``turning``: the base's forward speed (m/s) and yaw rate (rad/s) now, from odometry."""
        self.checked += 1
        points = self.points(scan.ranges, scan.angle_min, scan.angle_increment, scan.range_min, scan.range_max)
        if not len(points):
            return command
        now = float(self.clearances(points, np.zeros((1, 3)))[0])
        # Closer than the margin already: closer than HARD, allowed only to get away, by AWAY at the end of the path
        # and never closer on the way. "No closer than now" was not enough: each scan's noise lets a robot pushed on by
        # its policy creep by what the noise reads too far, and within seconds it touches (a centimetre's noise per
        # beam). Between HARD and the margin, also to slide along what it is beside (HARD).
        floor, away = min(self.margin, now), now < self.margin
        linear, angular = float(command[0]), float(command[1])
        driving = [(f * linear, angular) for f in FRACTIONS[:-1]]
        if self.steer > 0 and linear != 0.0:
            # Also turned by up to ``steer``: the moving commands in order of how far they are from the command.
            limit = max(self.max_yaw_rate, abs(angular))
            turned = [(f * linear, float(np.clip(angular + d * self.steer, -limit, limit)))
                      for f in FRACTIONS[:-1] for d in STEER_STEPS]
            driving = sorted(dict.fromkeys(driving + turned), key=lambda c: (
                abs(c[0] - linear) / abs(linear) + abs(c[1] - angular) / self.steer, -abs(c[0])))
        # Then turning on the spot at the commanded rate and less, down to standing still.
        candidates = driving + [(0.0, f * angular) for f in FRACTIONS]
        for candidate in candidates:
            if candidate == (0.0, 0.0) or self._passes(points, self.path(*candidate, moving, turning), floor, away):
                if candidate != (linear, angular):
                    self.limited += 1
                return candidate
        return 0.0, 0.0  # not reached: standing still is always a candidate

    def _passes(self, points: np.ndarray, path: np.ndarray, floor: float, away: bool) -> bool:
        clearances = self.clearances(points, path)
        if away and floor >= HARD:
            # 1e-6: a scan's float32 ranges round the same wall's distance differently at different points.
            return clearances.min() >= max(floor - DIP, HARD) and clearances[-1] >= floor - 1e-6
        return clearances.min() >= floor and (not away or clearances[-1] >= floor + AWAY)


STALL_TIME = 3.0
"""s: a robot that has not got farther than :data:`STALL_DISTANCE` from where it was this long ago, away from its goal,
is stuck (standing still, or jittering in front of an obstacle the shield holds it back from)."""
STALL_DISTANCE = 0.12
"""m: less progress than this in :data:`STALL_TIME` counts as stuck."""
TURN_TOLERANCE = 0.15
"""rad: a recovery's turn ends this close to its heading."""
RECOVERY_TURN_TIME = 4.0
"""s: the longest a recovery turns before it drives (or gives the robot back)."""
RECOVERY_BACK_TIME = 1.0
"""s: how long a recovery backs up when the shield does not let the robot turn on the spot (its corners would touch)."""
RECOVERY_DRIVE_TIME = 1.5
"""s: how long a recovery drives along its heading (through the shield) before the policy drives again."""
HEADINGS = np.radians(np.arange(-180, 180, 15))
"""Headings (relative to the robot's) a recovery chooses among."""


class StallRecovery:
    """The shield's answer to a robot stuck in front of an obstacle: when the robot has made less than
    :data:`STALL_DISTANCE` of progress in :data:`STALL_TIME` (the policy stalls, or pushes on and the shield holds it),
    it turns on the spot toward the freest heading, preferring the ones nearest the goal's bearing (backing up first
    when the shield does not let it turn), and then drives along it for :data:`RECOVERY_DRIVE_TIME` before the policy
    drives again (a recovery behaviour, as a navigation stack's spin and back-up). Its commands go through the shield
    like the policy's. Owns only its state: times come from the decision's stamps (sim time), so an episode repeats
    exactly. Counts :attr:`recoveries`."""

    def __init__(self, shield: VelocityShield, max_linear_speed: float, max_yaw_rate: float,
                 cruise_fraction: float = 0.4, turn_fraction: float = 0.6):
        self.shield = shield
        self.speed = cruise_fraction * max_linear_speed
        self.turn_rate = turn_fraction * max_yaw_rate
        self.recoveries = 0
        self.reset()

    def reset(self) -> None:
        self.anchor: tuple[float, float, float] | None = None   # (time, x, y) progress is measured from
        self.phase = ''              # '', 'turn', 'back' or 'drive'
        self.phase_since = 0.0
        self.target = 0.0            # the recovery's heading, as odometry yaw

    def free_lengths(self, points: np.ndarray, headings: np.ndarray, reach: float = 1.5) -> np.ndarray:
        """How far (m, up to ``reach``) the footprint's enclosing disc moves from the base along each heading before it
        touches a scan point."""
        boxes = self.shield.boxes
        radius = max(float(np.hypot(boxes[:, i], boxes[:, j]).max()) for i in (0, 2) for j in (1, 3))
        if not len(points):
            return np.full(len(headings), reach)
        units = np.stack([np.cos(headings), np.sin(headings)], axis=1)
        along = points @ units.T
        across = np.abs(points @ np.stack([-units[:, 1], units[:, 0]], axis=1).T)
        blocked = (along > 0) & (across < radius)
        hit = np.where(blocked, along - np.sqrt(np.maximum(radius ** 2 - across ** 2, 0.0)), np.inf).min(axis=0)
        return np.clip(hit, 0.0, reach)

    def heading(self, points: np.ndarray, goal_bearing: float) -> float:
        """The heading (relative to the robot's) to get unstuck along: among those with at least 0.6 m free (else the
        freest), the one nearest the goal's bearing."""
        free = self.free_lengths(points, HEADINGS)
        good = free >= min(0.6, free.max())
        off = np.abs(np.remainder(HEADINGS - goal_bearing + math.pi, 2 * math.pi) - math.pi)
        return float(HEADINGS[good][np.argmin(off[good])])

    def command(self, now: float, pose: tuple[float, float, float], moving: float, scan,
                goal_bearing: float, turning: float = 0.0) -> tuple[float, float] | None:
        """The recovery's command at sim time ``now`` (s) with the robot at ``pose`` (x, y, yaw in odom), or None while
        the policy's (shielded) command is to go out. Call once per decision."""
        yaw = pose[2]
        if self.phase == 'turn':
            left = math.remainder(self.target - yaw, math.tau)
            if abs(left) > TURN_TOLERANCE and now - self.phase_since < RECOVERY_TURN_TIME:
                turn = self.shield.filter((0.0, math.copysign(self.turn_rate, left)), scan, moving, turning)
                if turn != (0.0, 0.0):
                    return turn
                self.phase, self.phase_since = 'back', now      # its corners would touch: back up, then turn
            else:
                self.phase, self.phase_since = 'drive', now
        if self.phase == 'back':
            if now - self.phase_since < RECOVERY_BACK_TIME:
                return self.shield.filter((-0.5 * self.speed, 0.0), scan, moving, turning)
            self.phase, self.phase_since = 'turn', now
            return self.command(now, pose, moving, scan, goal_bearing, turning)
        if self.phase == 'drive':
            if now - self.phase_since < RECOVERY_DRIVE_TIME:
                steer = float(np.clip(2.0 * math.remainder(self.target - yaw, math.tau), -self.turn_rate,
                                      self.turn_rate))
                return self.shield.filter((self.speed, steer), scan, moving, turning)
            self.reset()
        if self.anchor is None or math.hypot(pose[0] - self.anchor[1], pose[1] - self.anchor[2]) > STALL_DISTANCE:
            self.anchor = (now, pose[0], pose[1])
            return None
        if now - self.anchor[0] < STALL_TIME:
            return None
        points = self.shield.points(scan.ranges, scan.angle_min, scan.angle_increment, scan.range_min, scan.range_max)
        self.recoveries += 1
        self.phase, self.phase_since = 'turn', now
        self.target = yaw + self.heading(points, goal_bearing)
        return self.command(now, pose, moving, scan, goal_bearing, turning)
