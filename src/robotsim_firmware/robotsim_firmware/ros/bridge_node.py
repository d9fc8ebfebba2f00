"""Motor bridge node: the Jetson's side of the base MCU, identical in simulation and on the robot.

/cmd_vel -> drive inverse kinematics -> wheel speed setpoints (and the yaw rate, for the MCU's gyro yaw loop) ->
serial frames. Telemetry -> wheel /joint_states, encoder /odom (its turns from the MCU's gyro heading) and its
odom -> base_footprint transform, and /diagnostics (link health, firmware version, fault flags). It opens its
serial device like any USB CDC port (termios raw, baud) and reconnects when the device disappears and comes back.

This node does the ROS and device I/O. What telemetry means (MCU resets, receive counters,
encoder unwrapping and glitches, which samples are published at which stamps) is decided by the
ROS-free :class:`~robotsim_firmware.telemetry.EncoderTelemetry`; the /odom and /tf messages are
built by robotsim_core.ros.odometry, as the simulator builds its own.

Stamps: telemetry carries the MCU's own sample time; :class:`~.mcu_clock.McuClock` maps it onto
ROS time with bounds that stay valid when /clock lags, so a stamp says when the wheels were where
the message says, on a loaded machine too. Stamps only ever increase; telemetry older than
``telemetry_timeout`` by that mapping is discarded (counted in /diagnostics), never published.

A pseudo-terminal is opened only while a live simulator owns it (virtual_serial.unowned_pty_reason):
a link left behind by a killed simulator may point at someone's terminal by now.

Only the device path differs between the worlds: in simulation it is the simulator's pty link,
on the robot /dev/ttyACM0. This module imports no simulator code (tests/test_firmware_in_the_loop.py checks it).
"""

from __future__ import annotations

import math
import os
import sys
import termios

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from robotsim_core.ros import common as convert
from robotsim_core.contract import RELIABLE_QOS, TF_QOS
from robotsim_core.description import load_robot
from robotsim_core.drive import WheelOdometry
from robotsim_core.errors import DescriptionError
from robotsim_core.ros.common import JointStateEncoder
from robotsim_core.odometry_uncertainty import GYRO_HEADING, ENCODER_HEADING
from robotsim_core.ros.odometry import OdometryEncoder

from .. import protocol
from ..base_commands import SETPOINT_PERIOD, BaseCommands
from ..telemetry import EncoderTelemetry
from ..virtual_serial import unowned_pty_reason

PUBLISH_PERIOD_MS = 20  # joint states, odometry and TF at 50 Hz (telemetry arrives at 100 Hz)
TRACKING_FRAMES = 50  # 0.5 s of telemetry: a wheel off its setpoint this long is not following
SETPOINT_PERIOD_NS = round(SETPOINT_PERIOD * 1e9)
TX_BACKLOG_MAX = 512  # bytes: frames the device could not take yet wait here; newer ones are dropped beyond
BAUD_RATES = sorted(int(name[1:]) for name in dir(termios) if name[:1] == 'B' and name[1:].isdigit() and int(name[1:]))


class MotorBridge(Node):
    def __init__(self):
        super().__init__('motor_bridge')
        # Every parameter is checked here, at start: a bad one is one line and exit 2, not a crash later.
        parameter = lambda *args: convert.checked_parameter(self, *args)  # noqa: E731
        self.device = parameter('device', '/dev/ttyACM0')
        if not self.device:
            raise ValueError("parameter 'device': expected a device path, got ''")
        self.baud = parameter('baud', 115200, 1)
        if self.baud not in BAUD_RATES:
            raise ValueError(f"parameter 'baud': expected a serial rate ({', '.join(map(str, BAUD_RATES))}), "
                             f'got {self.baud}')
        robot = parameter('robot', 'rover')
        self.command_timeout = parameter('command_timeout', 0.5, 0.001, 3600.0)
        self.watchdog_ms = parameter('watchdog_ms', 300, 1, protocol.MAX_WATCHDOG_MS)  # a u16 on the wire
        self.telemetry_timeout = parameter('telemetry_timeout', 0.5, 0.01, 3600.0)
        self.frame_prefix = parameter('frame_prefix', '')
        stamped = parameter('cmd_vel_stamped', False)
        reconnect_period = parameter('reconnect_period', 1.0, 0.01, 3600.0)

        self.model = load_robot(robot)
        if self.model.drive is None or self.model.drive.type != 'differential':
            raise DescriptionError(self.model.source, 'drive.type', 'the motor bridge drives differential bases')
        self.drive = self.model.drive
        self.wheels = list(self.drive.driven_wheels)  # channel i drives wheels[i]
        # Twice what a motor's stall torque can do to its rotor inertia alone: faster changes of
        # measured wheel speed are encoder glitches, not motion.
        self.encoder_telemetry = EncoderTelemetry(
            len(self.wheels), 2.0 * self.drive.wheel_max_torque / self.drive.wheel_armature, self.telemetry_timeout,
            PUBLISH_PERIOD_MS * 1000, on_mcu_reset=self.on_mcu_reset)
        self.odometry = WheelOdometry(self.drive)
        self.commands = BaseCommands(self.drive, [w.joint for w in self.wheels], self.watchdog_ms)
        """The gains and setpoint frames sent to the MCU (robotsim_firmware.base_commands)."""
        self.parser = protocol.FrameParser()
        self.fd: int | None = None
        self.tx_backlog = bytearray()
        self.refusal: str | None = None  # why the device was not opened (a stale pty link)
        self.sequence = 0
        self.firmware_version = 'unknown'
        self.counts_per_rev = 0
        self.reported_stale = 0
        self.hello_sent = None
        self.last_telemetry_time = None
        self.link_timeouts = 0
        self.link_was_alive = False
        self.faults = 0
        self.reported_faults = 0
        self.rejected_commands = 0
        self.accepted_commands = 0   # cmd_vel messages taken (in /diagnostics: a test can wait for its command)
        self.reported_lost = 0       # counters at the previous diagnostics message
        self.published = 0           # messages sent on each of joint_states, odom and tf (reported at exit)
        self.reported_glitches = 0
        self.setpoints = [0.0] * len(self.wheels)
        self.off_setpoint = [0] * len(self.wheels)
        self.not_tracking: set[int] = set()
        self.command = (0.0, 0.0)
        self.command_time = None
        self.last_setpoint_period: int | None = None
        """The setpoint period (ROS time // SETPOINT_PERIOD) of the last SET_VELOCITY, or of the handshake: at most one
        setpoint per period, none in the period the MCU answered HELLO. A timer callback that runs late (its /clock
        processed after the MCU's answer) then sends nothing, so a simulator running the link in lockstep gets
        exactly one setpoint per period, each in answer to that period's /clock."""

        self.joint_states = JointStateEncoder([w.joint for w in self.wheels])
        self.odometry_encoder = OdometryEncoder(self.frame('odom'), self.frame(self.model.footprint_link))
        self.joint_pub = self.create_publisher(JointState, 'joint_states', convert.qos_profile(RELIABLE_QOS))
        self.odom_pub = self.create_publisher(Odometry, 'odom', convert.qos_profile(RELIABLE_QOS))
        self.tf_pub = self.create_publisher(TFMessage, 'tf', convert.qos_profile(TF_QOS))
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(TwistStamped if stamped else Twist, 'cmd_vel',
                                 lambda msg: self.on_cmd_vel(msg.twist if stamped else msg), 10)
        # Reading the device, looking for it and reporting on it go on in wall time (the device's
        # own pace): with use_sim_time they must not wait for a /clock that a missing simulator
        # never sends. Setpoints follow ROS time, as the firmware's watchdog follows the MCU's.
        wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(0.005, self.poll_serial, clock=wall)
        self.create_timer(SETPOINT_PERIOD, self.send_setpoints)
        self.create_timer(1.0, self.publish_diagnostics, clock=wall)
        self.create_timer(reconnect_period, self.ensure_connected, clock=wall)
        self.ensure_connected()

    # ------------------------------------------------------------------ serial device
    def frame(self, name: str) -> str:
        return f'{self.frame_prefix}{name}'

    def ensure_connected(self) -> None:
        if self.fd is not None:
            return
        refusal = unowned_pty_reason(self.device)
        if refusal:
            if refusal != self.refusal:
                self.get_logger().error(f'{refusal}; waiting for a simulator to own {self.device}')
            self.refusal = refusal
            return
        self.refusal = None
        try:
            fd = os.open(self.device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as error:
            self.get_logger().warning(f'cannot open {self.device}: {error.strerror}; retrying',
                                   throttle_duration_sec=10.0)
            return
        try:
            attributes = termios.tcgetattr(fd)
            # Raw 8N1 (what tty.setraw sets), applied at once: TCSAFLUSH would discard input at
            # some arbitrary byte; the flush below does that explicitly instead.
            attributes[0] &= ~(termios.BRKINT | termios.ICRNL | termios.INPCK | termios.ISTRIP | termios.IXON)
            attributes[1] &= ~termios.OPOST
            attributes[2] = (attributes[2] & ~(termios.CSIZE | termios.PARENB)) | termios.CS8
            attributes[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
            attributes[6][termios.VMIN], attributes[6][termios.VTIME] = 1, 0
            attributes[4] = attributes[5] = getattr(termios, f'B{self.baud}')
            termios.tcsetattr(fd, termios.TCSANOW, attributes)
            # Whatever the device sent before we opened it is old: drop it. The stream then starts
            # inside some frame, which the parser skips without calling it an error.
            termios.tcflush(fd, termios.TCIOFLUSH)
        except (termios.error, OSError) as error:
            os.close(fd)
            self.get_logger().error(f'{self.device} is not a serial device: {error}')
            return
        self.fd = fd
        self.start_session()
        self.get_logger().info(f'connected to {self.device} at {self.baud} baud; saying hello')
        self.say_hello()

    def start_session(self) -> None:
        """A new connection: nothing is known about the MCU until it answers HELLO."""
        self.parser = protocol.FrameParser(synchronised=False)
        self.tx_backlog.clear()
        self.counts_per_rev = 0
        self.encoder_telemetry.start_session()

    def say_hello(self) -> None:
        self.write(protocol.hello(self.next_sequence()))
        self.hello_sent = self.get_clock().now()

    def disconnect(self, reason: str) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = None
        self.get_logger().warning(f'serial device {self.device} lost ({reason}); reconnecting')

    def next_sequence(self) -> int:
        self.sequence = (self.sequence + 1) & 0xFF
        return self.sequence

    def write(self, payload: bytes) -> None:
        """Queue a frame whole (or, when the backlog is full, not at all) and send what the device takes.

        A partial write keeps the rest of its frame for the next call: a frame cut short would
        reach the MCU as a corrupted one."""
        if self.fd is None:
            return
        frame = protocol.encode_frame(payload)
        if len(self.tx_backlog) + len(frame) <= TX_BACKLOG_MAX:
            self.tx_backlog += frame
            # Its send time for the clock mapping: now or earlier is a valid lower bound.
            self.encoder_telemetry.sent(payload[1], payload[0], self.get_clock().now().nanoseconds)
        self.flush_backlog()

    def flush_backlog(self) -> None:
        if self.fd is None or not self.tx_backlog:
            return
        try:
            written = os.write(self.fd, self.tx_backlog)
        except BlockingIOError:
            return  # the device's buffer is full: the backlog waits
        except OSError as error:
            self.disconnect(error.strerror or str(error))
            return
        del self.tx_backlog[:written]

    def poll_serial(self) -> None:
        if self.fd is None:
            return
        self.flush_backlog()
        if self.fd is None:
            return
        chunks = []
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                break
            except OSError as error:
                self.disconnect(error.strerror or str(error))
                return
            if not chunk:
                break
            chunks.append(chunk)
        for payload in self.parser.feed(b''.join(chunks)):
            message = protocol.decode(payload)
            if isinstance(message, protocol.HelloAck):
                self.on_hello(message)
            elif isinstance(message, protocol.Telemetry):
                self.on_telemetry(message)
            elif isinstance(message, protocol.Fault):
                self.on_faults(message.faults, message.channel)

    # ------------------------------------------------------------------ messages
    def on_hello(self, ack: protocol.HelloAck) -> None:
        self.firmware_version, self.counts_per_rev = ack.version, ack.counts_per_rev
        if ack.protocol != protocol.PROTOCOL_VERSION:
            self.get_logger().error(f'firmware speaks protocol {ack.protocol}, bridge {protocol.PROTOCOL_VERSION}')
            return
        # Speed-loop gains from the robot description: feedforward through the motor's no-load speed.
        # The yaw loop first: SET_GAINS ends the handshake (a simulator's link in lockstep waits through it).
        self.write(self.commands.yaw_loop(self.next_sequence()))
        self.write(self.commands.gains(self.next_sequence()))
        self.last_setpoint_period = self.get_clock().now().nanoseconds // SETPOINT_PERIOD_NS
        self.get_logger().info(f'firmware {ack.version}, {ack.channels} channels, {ack.loop_hz} Hz loop, '
                               f'{ack.counts_per_rev} counts/rev')

    def on_telemetry(self, telemetry: protocol.Telemetry) -> None:
        now = self.get_clock().now()
        if self.counts_per_rev == 0:
            # Telemetry but no answer to our hello yet: ask again, at most twice a second.
            if self.hello_sent is None or (now - self.hello_sent).nanoseconds > 500_000_000:
                self.write(protocol.hello(self.next_sequence()))
                self.hello_sent = now
            return
        sample = self.encoder_telemetry.feed(telemetry, self.counts_per_rev, now.nanoseconds)
        if sample.encoder_glitch:
            self.get_logger().warning('implausible wheel acceleration: encoder glitch', throttle_duration_sec=5.0)
        self.on_faults(telemetry.faults, None)
        self.check_tracking(telemetry)
        self.last_telemetry_time = now
        self.link_was_alive = True
        names = [w.joint for w in self.wheels]
        if sample.mcu_reset:  # its encoders restarted their count: the jump back is no motion
            self.odometry.rebase()
        # Odometry integrates every frame on the MCU's clock (its samples are evenly spaced there).
        # Its turns from the MCU's gyro heading when it has one ready (a skid-steer base's encoders overstate every
        # turn by its tyres' scrub), else from the encoders.
        self.odometry.update(telemetry.sample_us * 1e-6, dict(zip(names, sample.positions)),
                             measured_turn=sample.gyro_turn)
        self.odometry_encoder.uncertainty = GYRO_HEADING if sample.gyro_turn is not None else ENCODER_HEADING
        if sample.stale_age_ns is not None:
            self.get_logger().warning(f'discarding telemetry {sample.stale_age_ns * 1e-9:.3f} s old',
                                      throttle_duration_sec=5.0)
        if sample.stamp_ns is None:
            return  # no clock mapping yet, not this publish period's sample (50 Hz), or stale
        self.joint_pub.publish(self.joint_states.encode(
            sample.positions, sample.velocities,
            [d * self.drive.wheel_max_torque for d in telemetry.duty[:len(self.wheels)]], sample.stamp_ns))
        odom = self.odometry
        odometry, tf = self.odometry_encoder.encode(odom.x, odom.y, odom.yaw, odom.linear, odom.angular, sample.stamp_ns,
                                                    odom.travelled, odom.turned)
        self.odom_pub.publish(odometry)
        self.tf_pub.publish(tf)
        self.published += 1  # one message on each of joint_states, odom and tf

    def on_mcu_reset(self) -> None:
        self.get_logger().warning('the MCU has reset; saying hello again')
        self.say_hello()

    def check_tracking(self, telemetry: protocol.Telemetry) -> None:
        """A driven wheel far from its setpoint for TRACKING_FRAMES in a row is not following it: a
        dead motor dragged along, a stalled wheel, or a wheel spinning on ice."""
        braking = telemetry.status & protocol.STATUS_WATCHDOG_BRAKING
        for channel, wheel in enumerate(self.wheels):
            setpoint, measured = self.setpoints[channel], telemetry.velocity[channel]
            off = not braking and abs(measured - setpoint) > 0.25 * abs(setpoint) + 0.5
            # Leaky count: a dragged wheel that touches its setpoint now and then is still flagged.
            self.off_setpoint[channel] = max(0, self.off_setpoint[channel] + (1 if off else -1))
            if self.off_setpoint[channel] >= TRACKING_FRAMES and channel not in self.not_tracking:
                self.not_tracking.add(channel)
                self.get_logger().error(f'wheel {wheel.joint} (channel {channel}) is not following its setpoint: '
                                        f'{measured:.2f} rad/s for {setpoint:.2f} rad/s')
            elif self.off_setpoint[channel] == 0:
                self.not_tracking.discard(channel)

    def on_faults(self, faults: int, channel: int | None) -> None:
        self.faults = faults
        new = faults & ~self.reported_faults & ~protocol.FAULT_RESET
        for bit, name in protocol.FAULT_NAMES.items():
            if new & bit:
                where = f' on channel {channel} ({self.wheels[channel].joint})' if channel is not None \
                    and channel < len(self.wheels) else ''
                if bit == protocol.FAULT_FLEET_SILENT and channel is not None and 0x80 <= channel < 0xFF:
                    where = f' (radio node {channel - 0x80})'
                self.get_logger().error(f'firmware fault: {name}{where}')
        self.reported_faults = faults

    def on_cmd_vel(self, twist) -> None:
        linear, angular = twist.linear.x, twist.angular.z
        if not (math.isfinite(linear) and math.isfinite(angular)):
            self.rejected_commands += 1
            self.get_logger().warning(f'rejected non-finite cmd_vel; {self.rejected_commands} rejected so far',
                                   throttle_duration_sec=2.0)
            return
        d = self.drive
        self.command = (max(-d.max_linear_speed, min(d.max_linear_speed, linear)),
                        max(-d.max_yaw_rate, min(d.max_yaw_rate, angular)))
        self.command_time = self.get_clock().now()
        self.accepted_commands += 1

    def send_setpoints(self) -> None:
        if self.fd is None or self.counts_per_rev == 0:
            return
        now = self.get_clock().now()
        period = now.nanoseconds // SETPOINT_PERIOD_NS
        if self.last_setpoint_period is not None and period <= self.last_setpoint_period:
            return  # this period's setpoint is out (or the handshake was in it)
        self.last_setpoint_period = period
        fresh = self.command_time is not None and (now - self.command_time).nanoseconds * 1e-9 <= self.command_timeout
        # Its sequence byte: the period's number, which a simulator's link in lockstep checks (a setpoint sent
        # late for the period before is dropped there, not taken as this period's).
        self.write(self.commands.velocity(period & 0xFF, *(self.command if fresh else (0.0, 0.0))))
        self.setpoints = self.commands.setpoints

    # ------------------------------------------------------------------ diagnostics
    def publish_diagnostics(self) -> None:
        now = self.get_clock().now()
        alive = self.last_telemetry_time is not None and \
            (now - self.last_telemetry_time).nanoseconds * 1e-9 <= self.telemetry_timeout
        if self.link_was_alive and not alive:
            self.link_timeouts += 1
            self.link_was_alive = False
            self.get_logger().error(f'no telemetry from the MCU for more than {self.telemetry_timeout} s')
        reader = self.encoder_telemetry
        telemetry = reader.last
        offset = reader.clock_offset_ns()
        frames_lost = reader.frames_lost()
        new_lost = max(0, frames_lost - self.reported_lost)
        new_glitches = reader.encoder_glitches - self.reported_glitches
        new_stale = reader.stale_discarded - self.reported_stale
        self.reported_lost, self.reported_glitches = frames_lost, reader.encoder_glitches
        self.reported_stale = reader.stale_discarded
        if self.fd is None:
            level, message = DiagnosticStatus.ERROR, f'serial device {self.device} not connected' + (
                f': {self.refusal}' if self.refusal else '')
        elif not alive:
            level, message = DiagnosticStatus.ERROR, 'link down: no telemetry'
        elif self.faults & ~protocol.FAULT_RESET:
            level = DiagnosticStatus.ERROR
            message = 'firmware fault: ' + ', '.join(n for b, n in protocol.FAULT_NAMES.items() if self.faults & b)
        elif self.not_tracking:
            level = DiagnosticStatus.ERROR
            message = 'wheels not following their setpoints: ' + ', '.join(
                self.wheels[c].joint for c in sorted(self.not_tracking))
        elif new_glitches or new_lost > 5 or new_stale:
            level = DiagnosticStatus.WARN
            message = (f'link or encoder degraded in the last second: {new_lost} frames lost, '
                       f'{new_glitches} encoder glitches, {new_stale} stale telemetry frames discarded')
        elif telemetry is not None and telemetry.status & protocol.STATUS_WATCHDOG_BRAKING:
            level, message = DiagnosticStatus.OK, 'idle: firmware watchdog braking'
        else:
            level, message = DiagnosticStatus.OK, 'ok'
        values = {
            'device': self.device, 'firmware_version': self.firmware_version,
            'frames_ok': self.parser.frames_ok, 'crc_errors': self.parser.errors,
            'mcu_rx_frames_ok': telemetry.rx_frames_ok if telemetry else 0,
            'mcu_rx_errors': telemetry.rx_errors if telemetry else 0,
            'link_timeouts': self.link_timeouts, 'fault_flags': f'0x{self.faults:04x}',
            'status_flags': f'0x{telemetry.status:04x}' if telemetry else 'n/a',
            'rejected_commands': self.rejected_commands, 'accepted_commands': self.accepted_commands,
            'frames_sent': reader.frames_sent,
            'frames_lost': frames_lost, 'mcu_resets': reader.mcu_resets, 'encoder_glitches': reader.encoder_glitches,
            'stale_telemetry_discarded': reader.stale_discarded,
            'mcu_clock_offset_ms': 'unknown' if offset is None else f'{offset * 1e-6:.3f}',
        }
        status = DiagnosticStatus(level=level, name=f'{self.get_name()}: base MCU link', message=message,
                                  hardware_id=self.device,
                                  values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = now.to_msg()
        self.diagnostics_pub.publish(array)


    def report(self) -> None:
        """At exit, what a recording of this bridge must hold (as the simulator reports its own)."""
        topics = (self.joint_pub.topic_name, self.odom_pub.topic_name, self.tf_pub.topic_name)
        print(f'[{self.get_name()}] published messages: {", ".join(f"{t} {self.published}" for t in topics)}', flush=True)


def main(args=None) -> int:
    return convert.run_node('motor_bridge', MotorBridge, (DescriptionError, ValueError), args,  # ValueError: parameters
                            finish=MotorBridge.report)


if __name__ == '__main__':
    sys.exit(main())
