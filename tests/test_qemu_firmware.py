"""The MCU image itself in the loop: the firmware built for the Netduino Plus 2 (STM32F405) under
qemu-system-arm, met at register level (robotsim_firmware.qemu_board). ROS-free: the odometry trials'
in-process bridge sends what the motor bridge sends.

What a board port gets wrong shows here and not in the host build: a wrong SysTick divisor (the core clock
the port assumes) runs the control loop at a wrong rate, so the wheels turn at a wrong speed; a wrong USART
divisor leaves the link dead."""

from __future__ import annotations

import math
import os
import shutil
import signal

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.geometry import quat_to_yaw
from robotsim_core.odometry_calibration import Manoeuvre
from robotsim_firmware import protocol
from robotsim_firmware.in_the_loop import FirmwareInTheLoop
from robotsim_firmware.qemu_board import QemuError, QemuFirmware, build_qemu_image
from robotsim_sim.odometry_trials import OdometryTrials

if shutil.which('qemu-system-arm') is None or shutil.which('arm-none-eabi-gcc') is None:
    pytest.fail('qemu-system-arm or arm-none-eabi-gcc missing: scripts/setup.sh installs them for the tests '
                '(requirements/debian-test.txt, requirements/debian.txt)', pytrace=False)

ARC = Manoeuvre(0.3, 0.5, duration=4.0, settle=0.0)
STRAIGHT = Manoeuvre(0.3, 0.0, duration=2.0, settle=0.0)


def drive(manoeuvre: Manoeuvre, build: str, image: str = '') -> list:
    model = load_robot('rover')
    trials = OdometryTrials(model, model.drive.wheel_separation_multiplier, firmware=True, firmware_build=build,
                            firmware_image=image)
    try:
        return list(trials.readings(manoeuvre))
    finally:
        trials.sim.close()


def speed(readings, skip: float = 1.0) -> float:
    """Mean ground speed (m/s) after ``skip`` s (readings at 50 Hz)."""
    start = round(skip * 50)
    path = sum(float(np.hypot(*(b.true_position[:2] - a.true_position[:2])))
               for a, b in zip(readings[start:], readings[start + 1:]))
    return path / ((len(readings) - 1 - start) / 50)


def exchange(mcu, frames: list[bytes], seconds: float) -> list:
    """Send ``frames`` at once, run the MCU ``seconds`` (2 ms ticks), return what it said."""
    parser, said = protocol.FrameParser(), []
    mcu.receive(b''.join(protocol.encode_frame(f) for f in frames))
    for _ in range(round(seconds / 0.002)):
        mcu.advance(2_000_000)
        said += [protocol.decode(p) for p in parser.feed(mcu.transmitted())]
    return said


def test_the_image_boots_and_runs_the_protocol_over_its_usart():
    mcu = QemuFirmware()
    try:
        assert mcu.loop_hz == 1000 and abs(mcu.mcu_baud / 115200 - 1) < 0.001 and mcu.baud_problem is None
        assert mcu.plant.brake == [1, 1, 1, 1], 'the H-bridges brake until the firmware drives them'
        said = exchange(mcu, [protocol.hello(1), protocol.set_gains(2, 0.05, 0.5, 0.0, 0.0, 300),
                              protocol.set_velocity(3, [2.0, -2.0, 0.0, 0.0])], 0.1)
        acks = [m for m in said if isinstance(m, protocol.HelloAck)]
        telemetry = [m for m in said if isinstance(m, protocol.Telemetry)]
        assert len(acks) == 1 and (acks[0].channels, acks[0].loop_hz, acks[0].counts_per_rev) == (4, 1000, 8192)
        # Telemetry every 10 loops: the MCU's own time, stamped by its SysTick-paced loop.
        assert [t.time_ms for t in telemetry][:5] == [0, 10, 20, 30, 40]
        assert telemetry[-1].rx_frames_ok == 3 and telemetry[-1].rx_errors == 0
        # The wheels do not move (the encoders stay): the speed loop drives PWM forward on 0, reverse on 1.
        assert mcu.plant.duty[0] > 0.1 and mcu.plant.duty[1] < -0.1 and mcu.plant.duty[2:] == [0.0, 0.0]
        assert mcu.plant.brake == [0, 0, 0, 0] and abs(mcu.pwm_hz - 20_000) < 1
        # Power-on reset: the image starts over (its clock from 0, braking, FAULT_RESET until the next hello).
        mcu.reset()
        said = exchange(mcu, [], 0.02)
        assert said[0].time_ms == 0 and said[0].faults & protocol.FAULT_RESET and mcu.plant.brake == [1, 1, 1, 1]
    finally:
        mcu.close()


def test_the_image_drives_the_rover_along_the_host_builds_path_and_repeats_it_exactly():
    """Same firmware source, two builds: the paths agree within 2 cm and 2 degrees over a 4 s arc (not exactly: the
    image's PWM has 4200 steps, the host build's duty is a float). Two runs of the image are identical: the core's
    time is instruction counted, each loop starts where the simulator stopped it, and each loop waits for the host
    bytes the simulator sent before it, whenever QEMU's I/O thread delivered them."""
    host, qemu, again = drive(ARC, 'host'), drive(ARC, 'qemu'), drive(ARC, 'qemu')
    assert len(host) == len(qemu) == len(again) >= 200  # 4 s at 50 Hz
    gap = float(np.hypot(*(host[-1].true_position[:2] - qemu[-1].true_position[:2])))
    turn = abs(math.remainder(quat_to_yaw(*host[-1].true_quaternion) - quat_to_yaw(*qemu[-1].true_quaternion),
                              math.tau))
    travelled = float(np.hypot(*host[-1].true_position[:2]))
    print(f'arc v 0.3 w 0.5 for 4 s: host build ends {travelled:.3f} m from the start; the QEMU image {gap * 100:.1f} '
          f'cm and {math.degrees(turn):.2f} deg from it')
    assert travelled > 0.9
    assert gap < 0.02 and math.degrees(turn) < 2.0
    assert all(a.true_position.tobytes() == b.true_position.tobytes() and a.odom_pose == b.odom_pose
               for a, b in zip(qemu, again)), 'two runs of the image differ'


def test_a_wrong_core_clock_in_the_board_file_shows_as_a_wrong_wheel_speed():
    """The port computes SysTick's reload from BOARD_CORE_CLOCK_HZ; 84 MHz on a 168 MHz core makes a 2 kHz loop
    that measures wheel speed over half the time it assumes, so it drives the wheels about twice too fast.
    The host build has no SysTick: it cannot see this."""
    wrong = str(build_qemu_image('-DBOARD_CORE_CLOCK_HZ=84000000'))
    host, right, fast = (speed(drive(STRAIGHT, build, image)) for build, image in
                         (('host', ''), ('qemu', ''), ('qemu', wrong)))
    print(f'0.3 m/s commanded: host build {host:.3f}, image {right:.3f}, image with an 84 MHz core clock {fast:.3f} m/s')
    assert abs(host - 0.3) < 0.03 and abs(right - host) < 0.02
    assert fast > 1.5 * right


def test_a_wrong_baud_divisor_in_the_board_file_is_a_dead_link():
    """BRR for 57600 baud against a 115200 baud link: nothing intelligible crosses (QEMU ignores BRR; the wire
    model reads it at boot), so the firmware never hears the hello and never answers."""
    mcu = QemuFirmware(build_qemu_image('-DBOARD_USART_BRR=1458'))
    try:
        assert mcu.baud_problem and 'baud rate mismatch' in mcu.baud_problem and '57613 baud' in mcu.baud_problem
        said = exchange(mcu, [protocol.hello(1), protocol.set_velocity(2, [2.0, 2.0, 2.0, 2.0])], 0.1)
        assert said == [] and mcu.plant.brake == [1, 1, 1, 1]
    finally:
        mcu.close()


def test_bad_images_and_a_missing_qemu_are_one_line_each(tmp_path):
    with pytest.raises(QemuError, match='qemu-system-nonexistent not found'):
        QemuFirmware(qemu='qemu-system-nonexistent')
    with pytest.raises(QemuError, match='no such MCU image'):
        QemuFirmware(tmp_path / 'missing.elf')
    garbage = tmp_path / 'garbage.elf'
    garbage.write_bytes(b'\x7fELF' + bytes(range(256)) * 8)
    with pytest.raises(QemuError, match='garbage.elf: (QEMU exited|no robotsim debug descriptor)') as error:
        QemuFirmware(garbage)
    assert '\n' not in str(error.value)
    # An image that never reaches its control loop: its reset vector points at a hole (a lockup at boot).
    image = bytearray(build_qemu_image().read_bytes())
    vectors = image.find(b'\x00\x00\x02\x20')  # the initial stack pointer 0x20020000, then the reset vector
    image[vectors + 4:vectors + 8] = (0x0007_0001).to_bytes(4, 'little')
    broken = tmp_path / 'no_boot.elf'
    broken.write_bytes(bytes(image))
    with pytest.raises(QemuError, match='did not reach its next control loop within 3 s'):
        QemuFirmware(broken, start_timeout=3.0)


def test_an_mcu_that_stops_answering_leaves_the_simulation_running():
    """QEMU frozen (SIGSTOP) mid-run: one line, the wheels coast, the simulation goes on; no orphan QEMU."""
    firmware = FirmwareInTheLoop(2, seed=0, build='qemu')
    try:
        firmware.mcu.stop_timeout = firmware.mcu.gdb.timeout = 2.0
        angles = np.zeros(2)
        assert firmware.step(angles, 2_000_000) is not None and firmware.failure is None
        process = firmware.mcu._process
        os.kill(process.pid, signal.SIGSTOP)
        duties = firmware.step(angles, 2_000_000)
        assert firmware.failure and 'within 2 s of wall time' in firmware.failure
        assert list(duties) == [0.0, 0.0] and list(firmware.step(angles, 2_000_000)) == [0.0, 0.0]
    finally:
        firmware.close()
    assert process.poll() is not None, 'QEMU ended with its simulation'
