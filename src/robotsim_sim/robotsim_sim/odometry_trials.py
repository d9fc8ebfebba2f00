"""Odometry against ground truth in the headless simulation core (no ROS): drives calibration
manoeuvres on an open floor and fits ``drive.wheel_separation_multiplier``
(:mod:`robotsim_core.odometry_calibration` has the method and the fit).

With ``firmware=True`` the wheels are driven by the C firmware in the loop, and an in-process host
(:class:`InProcessBridge`) sends it what the motor bridge sends (robotsim_firmware.base_commands: the speed
loop's gains, wheel speed setpoints at 50 Hz of sim time) instead of the serial link's host: the
measurement of the firmware-driven base, without a bridge process or a ROS graph."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from robotsim_core.description.model import RobotModel
from robotsim_core.geometry import quat_to_yaw
from robotsim_core.odometry_calibration import (CALIBRATION_MANOEUVRES, Manoeuvre, YawComparison, fit_multiplier,
                                                require_differential)

from robotsim_core.drive import WheelOdometry
from robotsim_firmware import protocol
from robotsim_firmware.base_commands import SETPOINT_PERIOD, BaseCommands
from robotsim_firmware.telemetry import EncoderTelemetry

from .scene import RobotPlacement
from .simulation import SimOptions, Simulation
from robotsim_core.description.world_spec import FloorSpec, WorldSpec


BOOT_REST = 0.6
"""Seconds the base stands still after the MCU boots before a manoeuvre (with the firmware): its gyro's bias is
learnt in the first 0.5 s at rest (firmware.h FW_GYRO_REST_MS), as a robot stands after power-on."""


def open_floor(friction: float = 1.0, timestep: float = 0.002) -> WorldSpec:
    """A floor without walls or obstacles, large enough for every manoeuvre."""
    return WorldSpec(name='calibration_floor', timestep=timestep, floor=FloorSpec(size=(40.0, 40.0), friction=friction))


def _relative(pose_xy: np.ndarray, origin_xy: np.ndarray, origin_yaw: float) -> np.ndarray:
    c, s = math.cos(origin_yaw), math.sin(origin_yaw)
    dx, dy = pose_xy - origin_xy
    return np.array([c * dx + s * dy, -s * dx + c * dy])


class InProcessBridge:
    """Stands in for the firmware's serial link and the motor bridge behind it: hands the MCU the bridge's frames
    (hello, yaw loop and gains after every reboot, a setpoint every SETPOINT_PERIOD of sim time) and reads its
    telemetry into the odometry the bridge publishes (:attr:`odometry`: encoder travel, gyro turns)."""

    def __init__(self, link, model: RobotModel):
        self.link = link
        """The pty link it replaces (closed with it)."""
        self.down, self.drop_every = False, 0  # what FirmwareInTheLoop sets on its link
        self.commands = BaseCommands(model.drive, [w.joint for w in model.drive.driven_wheels])
        self.command = (0.0, 0.0)
        """The twist the bridge was last sent (linear m/s, angular rad/s)."""
        self.wheel_joints = [w.joint for w in model.drive.driven_wheels]
        self.start()

    def start(self) -> None:
        """The MCU (re)booted: say hello, set the gains, start the setpoints from rest."""
        self.commands = BaseCommands(self.commands.drive, self.commands.wheel_joints)
        self._sequence = 0
        self._outgoing = (self._frame(protocol.hello) + self._frame(self.commands.yaw_loop)
                          + self._frame(self.commands.gains))
        self._since_setpoint = SETPOINT_PERIOD
        self._parser = protocol.FrameParser()
        self._telemetry = EncoderTelemetry(len(self.wheel_joints), 1e9, 3600.0, 20_000)
        self._counts_per_rev = 0
        self.odometry = WheelOdometry(self.commands.drive)
        """The bridge's odometry from the MCU's telemetry, as ros/bridge_node.py integrates it."""

    def _frame(self, make) -> bytes:
        self._sequence += 1
        return protocol.encode_frame(make(self._sequence))

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        for payload in self._parser.feed(to_host):
            message = protocol.decode(payload)
            if isinstance(message, protocol.HelloAck):
                self._counts_per_rev = message.counts_per_rev
            elif isinstance(message, protocol.Telemetry) and self._counts_per_rev:
                sample = self._telemetry.feed(message, self._counts_per_rev, 0)
                self.odometry.update(message.sample_us * 1e-6, dict(zip(self.wheel_joints, sample.positions)),
                                     measured_turn=sample.gyro_turn)
        self._since_setpoint += dt
        if self._since_setpoint >= SETPOINT_PERIOD - 1e-9:
            self._since_setpoint -= SETPOINT_PERIOD
            self._outgoing += self._frame(lambda sequence: self.commands.velocity(sequence, *self.command))
        sent, self._outgoing = self._outgoing, b''
        return sent

    def close(self) -> None:
        self.link.close()


class OdometryTrials:
    """One simulation of ``model`` with a given multiplier; :meth:`drive` runs one manoeuvre from rest, with the
    built-in base controller or (``firmware``) the firmware in the loop driven as the motor bridge drives it."""

    def __init__(self, model: RobotModel, multiplier: float, world: WorldSpec | None = None, seed: int = 0,
                 firmware: bool = False, firmware_build: str = 'host', firmware_image: str = ''):
        require_differential(model)
        self.multiplier = multiplier
        self.model = replace(model, drive=replace(model.drive, wheel_separation_multiplier=multiplier))
        self.sim = Simulation(world or open_floor(), [RobotPlacement(self.model)],
                              SimOptions(seed=seed, cameras=False, firmware=firmware, firmware_build=firmware_build,
                                         firmware_image=firmware_image))
        self.bridge = None
        """The in-process bridge of the firmware in the loop (None: the built-in controller drives)."""
        if firmware:
            robot = self.sim.robots[0]
            self.bridge = robot.firmware.link = InProcessBridge(robot.firmware.link, self.model)

    def readings(self, manoeuvre: Manoeuvre):
        """Drive ``manoeuvre`` from rest (the command held, by the built-in controller or the firmware) and yield
        the base-state readings (50 Hz) from the end of its ``settle`` s on."""
        sim = self.sim
        sim.reset()
        if self.bridge is not None:
            self.bridge.start()  # the reset rebooted the MCU
            self.bridge.command = (0.0, 0.0)
            for _ in range(round(BOOT_REST / sim.model.opt.timestep)):  # its gyro learns its bias at rest
                sim.step()
            self.bridge.command = (manoeuvre.linear, manoeuvre.angular)
        steps = round((manoeuvre.settle + manoeuvre.duration) / sim.model.opt.timestep)
        start_step = round(manoeuvre.settle / sim.model.opt.timestep)
        for step in range(steps):
            if self.bridge is None:
                sim.command_base(0, manoeuvre.linear, manoeuvre.angular)
            for event in sim.step():
                if event.channel == 'base_state' and step >= start_step:
                    yield event.reading

    def drive_bridge(self, manoeuvre: Manoeuvre) -> YawComparison:
        """With the firmware: compare the motor bridge's odometry (from the MCU's telemetry, turns by its gyro) with
        ground truth over the stretch after ``settle`` s (its ``encoder_yaw`` is the bridge's yaw x multiplier, so
        that ``yaw_error(multiplier)`` is the bridge's error)."""
        if self.bridge is None:
            raise ValueError('drive_bridge: the odometry trials run without the firmware')
        first = previous = None
        bridge_yaw = true_yaw = path = 0.0
        for reading in self.readings(manoeuvre):
            odometry = self.bridge.odometry
            if first is None:
                first = previous = (reading, odometry.yaw, (odometry.x, odometry.y))
                continue
            bridge_yaw += math.remainder(odometry.yaw - previous[1], math.tau)
            true_yaw += math.remainder(quat_to_yaw(*reading.true_quaternion)
                                       - quat_to_yaw(*previous[0].true_quaternion), math.tau)
            path += float(np.hypot(*(reading.true_position[:2] - previous[0].true_position[:2])))
            previous = (reading, odometry.yaw, (odometry.x, odometry.y))
        odom_xy = _relative(np.array(previous[2]), np.array(first[2]), first[1])
        true_xy = _relative(previous[0].true_position[:2], first[0].true_position[:2],
                            quat_to_yaw(*first[0].true_quaternion))
        return YawComparison(manoeuvre.label, bridge_yaw * self.multiplier, true_yaw, path,
                             float(np.linalg.norm(odom_xy - true_xy)))

    def drive(self, manoeuvre: Manoeuvre) -> YawComparison:
        """Hold the command; compare odometry and ground truth over the stretch after ``settle`` s."""
        first = previous = None
        odom_yaw = true_yaw = path = 0.0
        for reading in self.readings(manoeuvre):
            if first is None:
                first = previous = reading
                continue
            # Unwrapped sums of the 50 Hz increments: a manoeuvre turns several times.
            odom_yaw += math.remainder(reading.odom_pose[2] - previous.odom_pose[2], math.tau)
            true_yaw += math.remainder(quat_to_yaw(*reading.true_quaternion)
                                       - quat_to_yaw(*previous.true_quaternion), math.tau)
            path += float(np.hypot(*(reading.true_position[:2] - previous.true_position[:2])))
            previous = reading
        odom_xy = _relative(np.array(previous.odom_pose[:2]), np.array(first.odom_pose[:2]), first.odom_pose[2])
        true_xy = _relative(previous.true_position[:2], first.true_position[:2], quat_to_yaw(*first.true_quaternion))
        return YawComparison(manoeuvre.label, odom_yaw * self.multiplier, true_yaw, path,
                             float(np.linalg.norm(odom_xy - true_xy)))


def calibrate_in_simulation(model: RobotModel, manoeuvres=CALIBRATION_MANOEUVRES, world: WorldSpec | None = None,
                            seed: int = 0, start: float | None = None, iterations: int = 6,
                            tolerance: float = 0.005, report=None, firmware: bool = False
                            ) -> tuple[float, list[YawComparison]]:
    """Fixed point of drive-and-fit: the multiplier changes the wheel speeds a command asks for,
    and scrub depends a little on them, so the manoeuvres are driven again with each new estimate
    until it moves by less than ``tolerance`` (relative). Returns the multiplier and the last
    manoeuvres' comparisons (driven with a multiplier within ``tolerance`` of it). ``firmware``: the wheels
    driven by the firmware in the loop (:class:`InProcessBridge`) instead of the built-in base controller."""
    multiplier = start if start is not None else model.drive.wheel_separation_multiplier
    for iteration in range(iterations):
        trials = OdometryTrials(model, multiplier, world, seed, firmware)
        try:
            comparisons = [trials.drive(manoeuvre) for manoeuvre in manoeuvres]
        finally:
            trials.sim.close()
        fitted = fit_multiplier(comparisons)
        if report is not None:
            report(iteration, multiplier, fitted)
        converged = abs(fitted - multiplier) <= tolerance * multiplier
        multiplier = fitted
        if converged:
            break
    return multiplier, comparisons
