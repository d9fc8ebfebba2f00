"""The honest-encoder table: what the firmware's encoders say versus what the body did.

Runs the real C firmware in the loop (the host build, then the MCU image under QEMU) against the rover in
MuJoCo, speaking the serial protocol over the simulator's pty exactly as the motor bridge does (protocol.py,
same frames), without ROS. Every number is measured by this script; `make bench` writes the table into the
documentation (docs/firmware.md).
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import tty
from pathlib import Path

import yaml

from robotsim_core.description import load_robot
from robotsim_core.drive import forward_kinematics, inverse_kinematics
from robotsim_firmware import protocol
from robotsim_firmware.base_commands import BaseCommands
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation

WORKSPACE = Path(__file__).resolve().parents[1]


class Host:
    """The bridge's serial behaviour, minus ROS: hello, the yaw loop and gains (robotsim_firmware.base_commands, as
    the bridge sends them), setpoints with the yaw rate (0: every scenario drives straight), telemetry. The base
    stands 0.6 s after the handshake, as a robot does after power-on: the gyro learns its bias."""

    def __init__(self, sim: Simulation, device: str):
        self.sim = sim
        self.fd = os.open(device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)
        self.parser = protocol.FrameParser()
        self.telemetry: protocol.Telemetry | None = None
        self.faults = 0
        drive = sim.robots[0].model.drive
        self.drive, self.wheels = drive, list(drive.driven_wheels)
        commands = BaseCommands(drive, [w.joint for w in self.wheels])
        self.send(protocol.hello(0))
        self.run(0.05, [0.0] * 4)
        self.send(commands.yaw_loop(1))
        self.send(commands.gains(2))
        self.run(0.6, [0.0] * 4)

    def send(self, payload: bytes) -> None:
        os.write(self.fd, protocol.encode_frame(payload))

    def run(self, seconds: float, speeds: list[float], until=None) -> float:
        """Step the sim, sending setpoints every 20 ms, reading telemetry; returns sim seconds run."""
        steps = round(seconds / self.sim.model.opt.timestep)
        for step in range(steps):
            if step % 10 == 0:
                self.send(protocol.set_velocity(step & 0xFF, speeds, 0.0))
            self.sim.step()
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                data = b''
            for payload in self.parser.feed(data):
                message = protocol.decode(payload)
                if isinstance(message, protocol.Telemetry):
                    self.telemetry = message
                    self.faults |= message.faults & ~protocol.FAULT_RESET
            if until is not None and until():
                return (step + 1) * self.sim.model.opt.timestep
        return seconds

    def encoder_distance(self, start: tuple[int, ...]) -> float:
        """Forward distance the encoders report since ``start`` (what the robot believes)."""
        counts = self.telemetry.encoder
        travel = {w.joint: (counts[i] - start[i]) * 2 * math.pi / 8192 * w.radius for i, w in enumerate(self.wheels)}
        return forward_kinematics(self.drive, travel)[0]

    def close(self) -> None:
        os.close(self.fd)


def world_file(folder: str, name: str, friction: float, wall_x: float | None) -> str:
    data = {'name': name, 'floor': {'size': [20, 20], 'friction': friction}}
    if wall_x is not None:
        data['walls'] = [{'start': [wall_x, -3.0], 'end': [wall_x, 3.0], 'height': 0.6}]
    path = os.path.join(folder, f'{name}.yaml')
    with open(path, 'w') as stream:
        yaml.safe_dump(data, stream)
    return path


def scenario(folder: str, name: str, build: str, friction: float = 1.0, wall_x: float | None = None,
             tyre_friction=None):
    link = os.path.join(folder, f'tty-{name}')
    sim = Simulation(load_world(world_file(folder, name, friction, wall_x)), [RobotPlacement(load_robot('rover'))],
                     SimOptions(seed=0, cameras=False, firmware=True, serial_links=[link], firmware_build=build))
    if tyre_friction is not None:
        for geom in range(sim.model.ngeom):
            body = sim.model.body(sim.model.geom_bodyid[geom]).name
            if 'wheel' in body:
                sim.model.geom_friction[geom, 0] = tyre_friction
    return sim, Host(sim, link)


def forward_speeds(host: Host, linear: float) -> list[float]:
    targets = inverse_kinematics(host.drive, linear, 0.0)
    return [targets.wheel_speeds[w.joint] for w in host.wheels]


BUILDS = {'host': 'host build', 'qemu': 'MCU image (QEMU)'}


def measure(build: str) -> list[tuple[str, str, float, float, str]]:
    rows = []
    name = BUILDS[build]
    with tempfile.TemporaryDirectory() as folder:
        for label, friction in (('grippy floor (friction 1.0)', 1.0), ('icy floor (friction 0.02)', 0.02)):
            sim, host = scenario(folder, f'target_{friction}', build, friction=friction, tyre_friction=friction)
            start, x0 = host.telemetry.encoder, sim.ground_truth_pose()[0][0]
            host.run(20.0, forward_speeds(host, 0.5), until=lambda: host.encoder_distance(start) >= 1.0)
            host.run(1.0, [0.0] * 4)
            believed, actual = host.encoder_distance(start), sim.ground_truth_pose()[0][0] - x0
            rows.append((f'drive to 1.0 m of encoder distance at 0.5 m/s, {label}', name, believed, actual, ''))
            host.close()
            sim.close()
        sim, host = scenario(folder, 'wall', build, wall_x=0.8)
        start, x0 = host.telemetry.encoder, sim.ground_truth_pose()[0][0]
        host.run(4.0, forward_speeds(host, 0.3))
        believed, actual = host.encoder_distance(start), sim.ground_truth_pose()[0][0] - x0
        rows.append(('0.3 m/s for 4 s into a wall 0.6 m ahead of the bumper', name, believed, actual,
                     'wheels spin against the wall'))
        host.close()
        sim.close()
        sim, host = scenario(folder, 'stuck', build)
        host.run(1.0, forward_speeds(host, 0.2))
        start, x0 = host.telemetry.encoder, sim.ground_truth_pose()[0][0]
        sim.robots[0].firmware.inject('encoder_stuck', 0)
        detected = host.run(3.0, forward_speeds(host, 0.2), until=lambda: host.faults & protocol.FAULT_ENCODER_STALL)
        wheel_speed = abs(sim.data.qvel[sim.robots[0].wheel_dofs[0]])
        host.run(1.0, forward_speeds(host, 0.2))
        _, yaw = sim.ground_truth_pose()
        believed, actual = host.encoder_distance(start), sim.ground_truth_pose()[0][0] - x0
        rows.append(('encoder of front_left stuck while driving at 0.2 m/s', name, believed, actual,
                     f'runaway: that wheel reached {wheel_speed:.1f} rad/s (setpoint 4.4); firmware stall fault after '
                     f'{detected:.2f} s, wheel braked; heading error {math.degrees(yaw):.1f} deg'))
        host.close()
        sim.close()
    return rows


def main() -> int:
    rows = sorted(measure('host') + measure('qemu'), key=lambda row: row[0])  # each scenario's two builds together
    lines = ['| scenario | firmware | encoders say (m) | ground truth (m) | note |', '|---|---|---|---|---|']
    lines += [f'| {s} | {f} | {b:.3f} | {a:.3f} | {n} |' for s, f, b, a, n in rows]
    table = '\n'.join(lines)
    print(table)
    if '--write-readme' in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from readme_block import replace_block
        print(f'{replace_block(WORKSPACE / "README.md", "encoders", table)} updated')
    return 0


if __name__ == '__main__':
    sys.exit(main())
