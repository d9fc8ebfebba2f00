"""The serial protocol: the firmware's C parser/encoder and the bridge's Python one agree on
shared vectors, and both survive 10,000 random and corrupted streams."""

import math
import random
import struct

import pytest

from robotsim_firmware import protocol
from robotsim_firmware.host_library import HostFirmware

# Shared vectors: payload -> the exact frame on the wire (checked against both implementations).
VECTORS = [
    (bytes([protocol.HELLO, 0, 1]), None),
    (protocol.set_velocity(7, [1.5, -2.25, 0.0, 3.0]), None),
    (protocol.set_gains(9, 0.3, 2.0, 0.0, 0.05, 300), None),
    (bytes([0x83, 1]) + bytes(range(0, 60)), None),            # zeros and long runs
    (bytes([0x42, 0]) + b'\x00' * 20, None),                  # all zeros
    (bytes([0x42, 0]) + bytes([0xFF] * 94), None),            # a maximal payload without zeros
]


@pytest.fixture(scope='module')
def firmware():
    return HostFirmware()


def test_crc_known_value():
    assert protocol.crc16(b'123456789') == 0x29B1  # CRC-16/CCITT-FALSE check value


def test_the_documented_example_frame():
    # docs/serial_protocol.md, "Example"
    assert protocol.encode_frame(protocol.hello(0)) == bytes.fromhex('02 01 04 03 CF CB 00')


@pytest.mark.parametrize('index', range(len(VECTORS)))
def test_c_and_python_encode_identically_and_decode_each_other(firmware, index):
    payload, _ = VECTORS[index]
    python_frame = protocol.encode_frame(payload)
    c_frame = firmware.encode(payload)
    assert c_frame == python_frame
    assert python_frame.count(0) == 1 and python_frame.endswith(b'\x00')
    firmware.parser_reset()
    frames, errors = firmware.parser_feed(python_frame)
    assert (frames, errors) == (1, 0) and firmware.parser_last() == payload
    parser = protocol.FrameParser()
    assert parser.feed(c_frame) == [payload]


def corrupt_stream(rng: random.Random, frames: list[bytes]) -> bytes:
    """Valid frames mixed with garbage, truncations, bit flips and oversized junk."""
    out = bytearray()
    for frame in frames:
        choice = rng.random()
        if choice < 0.15:
            out += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 40)))      # garbage
        elif choice < 0.25:
            out += frame[:rng.randint(1, len(frame) - 1)] + b'\x00'                 # truncated
            continue
        elif choice < 0.35:
            flipped = bytearray(frame)
            position = rng.randrange(len(flipped) - 1)
            flipped[position] ^= 1 << rng.randrange(8)
            out += flipped                                                          # bit flip
            continue
        elif choice < 0.4:
            out += bytes(rng.randint(1, 255) for _ in range(rng.randint(200, 600)))  # oversized
        out += frame
    return bytes(out)


def test_fuzz_both_parsers_10000_streams(firmware):
    rng = random.Random(1234)
    payloads = [protocol.set_velocity(i, [rng.uniform(-5, 5) for _ in range(4)]) for i in range(8)]
    total_errors_c = total_errors_py = 0
    for stream_index in range(10_000):
        if stream_index % 4 == 0:  # pure noise
            stream = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
        else:
            stream = corrupt_stream(rng, [protocol.encode_frame(p) for p in rng.sample(payloads, 3)])
        firmware.parser_reset()
        _, errors_c = firmware.parser_feed(stream)
        parser = protocol.FrameParser()
        parser.feed(stream)
        total_errors_c += errors_c
        total_errors_py += parser.errors
        # Resynchronisation: whatever came before, the next valid frame is received intact.
        sentinel = protocol.hello(stream_index)
        before_c, _ = firmware.parser_feed(b'\x00')
        frames_c, _ = firmware.parser_feed(protocol.encode_frame(sentinel))
        assert frames_c == before_c + 1 and firmware.parser_last() == sentinel
        assert parser.feed(b'\x00' + protocol.encode_frame(sentinel)) == [sentinel]
        # Both parsers agree on how many frames were valid.
        assert parser.frames_ok == frames_c
    assert total_errors_c > 1000 and total_errors_c == total_errors_py


def test_telemetry_decodes(firmware):
    firmware.reset()
    firmware.plant.encoder[0] = 1234
    start_us = firmware.plant.time_ns // 1000
    firmware.advance(20_000_000)  # 20 ms: two telemetry frames at 100 Hz, from the first loop on
    messages = [protocol.decode(p) for p in protocol.FrameParser().feed(firmware.transmitted())]
    telemetry = [m for m in messages if isinstance(m, protocol.Telemetry)]
    assert len(telemetry) == 2
    # Each frame says when its loop read the encoders, in ms and in µs.
    assert [t.sample_us - start_us for t in telemetry] == [0, 10_000]
    assert telemetry[-1].time_ms == telemetry[-1].sample_us // 1000
    assert telemetry[-1].encoder[0] == 1234 and telemetry[-1].host_rx_type == 0  # nothing received yet
    assert telemetry[-1].faults & protocol.FAULT_RESET
    assert telemetry[-1].status & protocol.STATUS_WATCHDOG_BRAKING  # no setpoint yet: brakes


def test_lockstep_loop_count_over_20_simulated_seconds(firmware):
    firmware.reset()
    start = firmware.plant.loops
    for _ in range(10_000):  # 500 Hz physics ticks: 20 s
        assert firmware.advance(2_000_000) == 2
    assert firmware.plant.loops - start == 20_000
    odd = HostFirmware()
    ran = sum(odd.advance(3_300_000) for _ in range(6061))  # 3.3 ms ticks: carries the remainder
    assert ran == int(6061 * 3.3)  # 20001.3 ms -> 20001 whole loops, never drifting


def test_hello_setpoint_and_watchdog(firmware):
    firmware.reset()
    parser = protocol.FrameParser()
    firmware.receive(protocol.encode_frame(protocol.hello(1)))
    firmware.advance(1_000_000)
    ack = [protocol.decode(p) for p in parser.feed(firmware.transmitted())]
    assert isinstance(ack[0], protocol.HelloAck) and ack[0].counts_per_rev == firmware.counts_per_rev
    firmware.receive(protocol.encode_frame(protocol.set_velocity(2, [5.0, 5.0, 5.0, 5.0])))
    firmware.advance(50_000_000)
    early = firmware.plant.duty[0]
    firmware.advance(100_000_000)
    assert firmware.plant.duty[0] > early > 0.2  # no wheel motion reported: the integral pushes harder
    firmware.advance(400_000_000)  # no new setpoint for > 300 ms
    assert all(firmware.plant.duty[i] == 0.0 for i in range(4)) and firmware.plant.brake[0] == 1
    telemetry = [m for m in map(protocol.decode, parser.feed(firmware.transmitted())) if isinstance(m, protocol.Telemetry)]
    assert telemetry[-1].status & protocol.STATUS_WATCHDOG_BRAKING


def test_nan_setpoint_stops_the_wheel(firmware):
    firmware.reset()
    payload = bytes([protocol.SET_VELOCITY, 0]) + struct.pack('<4f', float('nan'), float('inf'), 1.0, 0.0)
    firmware.receive(protocol.encode_frame(payload))
    firmware.advance(5_000_000)
    assert firmware.plant.duty[0] == 0.0 and firmware.plant.duty[1] == 0.0 and firmware.plant.duty[2] > 0


def test_telemetry_echoes_when_the_last_host_frame_arrived(firmware):
    """The host maps MCU time onto its clock from this echo (robotsim_firmware/mcu_clock.py)."""
    firmware.reset()
    firmware.advance(7_000_000)
    arrival_us = firmware.plant.time_ns // 1000  # the next loop reads the UART
    firmware.receive(protocol.encode_frame(protocol.hello(42)))
    firmware.advance(30_000_000)
    parser = protocol.FrameParser()
    telemetry = [m for m in map(protocol.decode, parser.feed(firmware.transmitted())) if isinstance(m, protocol.Telemetry)]
    echoes = {(t.host_rx_type, t.host_rx_sequence, t.host_rx_sample_us) for t in telemetry if t.sample_us > arrival_us}
    assert echoes == {(protocol.HELLO, 42, arrival_us)}
    assert all(t.host_rx_type == 0 for t in telemetry if t.sample_us < arrival_us)


def test_a_full_transmit_buffer_drops_whole_frames_only(firmware):
    """Nobody drains the MCU's transmit ring for 2 s: frames that do not fit are dropped whole, so
    the stream stays valid once it is drained again."""
    firmware.reset()
    firmware.transmitted()
    firmware.advance(2_000_000_000)  # 200 telemetry frames, far more than the ring holds
    assert firmware.plant.tx_dropped > 0
    stream = firmware.transmitted()
    firmware.advance(100_000_000)
    stream += firmware.transmitted()
    parser = protocol.FrameParser()
    parser.feed(stream)
    assert parser.errors == 0 and parser.frames_ok > 60


def test_the_mcu_channel_count_is_one_value_for_c_and_python(workspace):
    """HAL_MOTOR_CHANNELS (C) and robotsim_core.drive.MCU_MOTOR_CHANNELS (the protocol, the host library's
    state struct, the bringup's firmware choice) must agree, or frames and structs are misread."""
    import re
    from robotsim_core.drive import MCU_MOTOR_CHANNELS
    hal = (workspace / 'src' / 'robotsim_firmware' / 'firmware' / 'src' / 'hal.h').read_text()
    assert int(re.search(r'#define HAL_MOTOR_CHANNELS (\d+)', hal).group(1)) == MCU_MOTOR_CHANNELS


def _telemetry(firmware, parser) -> list:
    return [m for m in map(protocol.decode, parser.feed(firmware.transmitted())) if isinstance(m, protocol.Telemetry)]


def test_the_gyro_bias_heading_and_yaw_loop(firmware):
    """The firmware's gyro (host build, raw counts written as the simulator writes them): its bias is learnt in 0.5 s
    at rest; then a commanded turn integrates the gyro's rate into the heading, and the yaw loop, with a gyro that
    sees no turn, adds at most FW_YAW_CORRECTION_MAX (1 rad/s) of turn to the wheels, each by its share. A yaw loop
    with a NaN or absurd share is refused (no loop); a setpoint without a yaw rate runs none either."""
    firmware.reset()
    parser = protocol.FrameParser()
    plant = firmware.plant
    plant.gyro_present, plant.gyro = 1, 40  # a zero-rate offset of 0.6 deg/s
    firmware.receive(protocol.encode_frame(protocol.hello(1)))
    firmware.advance(400_000_000)
    assert not _telemetry(firmware, parser)[-1].status & protocol.STATUS_GYRO_READY
    firmware.advance(200_000_000)
    rest = _telemetry(firmware, parser)[-1]
    assert rest.status & protocol.STATUS_GYRO_READY and abs(rest.yaw_rate) < 1e-4 and rest.heading_urad == 0

    shares = [-2.0, 2.0, -2.0, 2.0]  # left wheels back, right wheels forward for a left turn
    bad = protocol.set_yaw_loop(2, 1.0, 4.0, shares)[:-4] + struct.pack('<f', float('nan'))
    firmware.receive(protocol.encode_frame(bad))
    firmware.receive(protocol.encode_frame(protocol.set_velocity(3, [0.0] * 4, 1.0)))
    firmware.advance(100_000_000)
    assert not _telemetry(firmware, parser)[-1].status & protocol.STATUS_YAW_LOOP  # the bad yaw loop was refused

    firmware.receive(protocol.encode_frame(protocol.set_yaw_loop(4, 1.0, 4.0, shares)))
    plant.gyro = 40 + round(math.degrees(0.5) * protocol.GYRO_LSB_PER_DPS)  # turning at 0.5 rad/s
    said = []
    for sequence in range(5, 55):  # 1 s of setpoints asking for 1 rad/s
        firmware.receive(protocol.encode_frame(protocol.set_velocity(sequence, [0.0] * 4, 1.0)))
        firmware.advance(20_000_000)
        said += _telemetry(firmware, parser)  # (read as the bridge does: the MCU's transmit ring holds 0.5 s)
    turning = said[-1]
    assert turning.status & protocol.STATUS_YAW_LOOP
    assert turning.yaw_rate == pytest.approx(0.5, abs=0.002)
    assert turning.heading_urad * 1e-6 == pytest.approx(0.5, abs=0.01)  # 1 s at 0.5 rad/s (the last frame up to 10 ms before)
    # Error 0.5 rad/s: kp x 0.5 plus the integral's 4 x 0.5 x t, clamped at 1 rad/s of turn: wheels at 2 x 1 rad/s.
    assert plant.duty[1] > 0 > plant.duty[0] and plant.duty[3] > 0 > plant.duty[2]

    firmware.receive(protocol.encode_frame(protocol.set_velocity(60, [1.0] * 4)))  # (a protocol-2 host's setpoint)
    firmware.advance(20_000_000)
    assert not _telemetry(firmware, parser)[-1].status & protocol.STATUS_YAW_LOOP


def test_a_receiver_joining_a_stream_keeps_a_whole_first_frame_and_drops_a_fragment_silently():
    """A host that opened the port before the device sent anything gets the device's first frame (the answer
    to its HELLO, when the device sends nothing else first); one that joined mid-frame drops that fragment
    without counting an error, even when it comes in pieces."""
    ack = protocol.encode_frame(bytes([protocol.HELLO_ACK, 1]) + bytes(11))
    velocity = protocol.set_velocity(7, [0.5, -0.5, 0.25, 0.0])
    second = protocol.encode_frame(velocity)
    parser = protocol.FrameParser(synchronised=False)
    assert parser.feed(ack[:5]) == [] and parser.feed(ack[5:] + second) == [parser_payload(ack), velocity]
    assert (parser.frames_ok, parser.errors) == (2, 0)
    parser = protocol.FrameParser(synchronised=False)
    assert parser.feed(ack[3:6]) == [] and parser.feed(ack[6:] + second) == [velocity]
    assert (parser.frames_ok, parser.errors) == (1, 0)
    parser = protocol.FrameParser(synchronised=False)  # a fragment longer than any frame: dropped, no error
    assert parser.feed(b'\x01' * 600) == [] and parser.feed(b'\x02' * 10 + b'\x00' + second) == [velocity]
    assert parser.errors == 0


def parser_payload(frame: bytes) -> bytes:
    return protocol.FrameParser().feed(frame)[0]
