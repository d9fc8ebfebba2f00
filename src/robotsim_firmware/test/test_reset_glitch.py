"""A world reset reboots the MCU with the wheels where the reset put them: the real firmware (the host build, and the
MCU image under QEMU, which stops before its firmware starts so that the encoders read the wheels then) in
the loop, its telemetry read by the bridge's own reader, shows the reboot and no encoder glitch. Rebooted
while its encoders still read the angles from before the reset, it did show one (the jump back looked like a
wheel spinning faster than any motor can)."""

from __future__ import annotations


import numpy as np

from robotsim_firmware import protocol
from robotsim_firmware.in_the_loop import FirmwareInTheLoop
from robotsim_firmware.telemetry import EncoderTelemetry

STEP_NS = 2_000_000  # the worlds' 2 ms physics step


class Captured:
    """Stands in for the pty: keeps what the MCU sends; sends it what the bridge would, a HELLO (which
    acknowledges the reset flag of the MCU's boot) at the start and after each reboot."""

    def __init__(self, link):
        self.link, self.bytes = link, bytearray()
        self.down, self.drop_every = False, 0
        self.pending = protocol.encode_frame(protocol.hello(0))

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        self.bytes += to_host
        sent, self.pending = self.pending, b''
        return sent

    def close(self) -> None:
        self.link.close()


def _glitches_after_a_reset(pass_the_angles: bool, build: str = 'host', reset_angle: float = 0.0) -> EncoderTelemetry:
    fil = FirmwareInTheLoop(2, build=build)
    fil.link = Captured(fil.link)
    reader = EncoderTelemetry(2, max_wheel_acceleration=200.0, telemetry_timeout=0.5, publish_period_us=20_000)
    try:
        angles = np.zeros(2)
        for step in range(1000):  # 2 s of the wheels speeding up to 10 rad/s, as a motor can (50 rad/s²)
            angles += min(10.0, 50.0 * step * STEP_NS * 1e-9) * STEP_NS * 1e-9
            fil.step(angles, STEP_NS)
        angles = np.full(2, reset_angle)  # where the world's reset put the wheels
        fil.reset(0, angles if pass_the_angles else None)
        for step in range(50):  # the bridge notices the reboot at the next telemetry and says hello again
            fil.step(angles, STEP_NS)
        fil.link.pending = protocol.encode_frame(protocol.hello(1))
        for step in range(500):
            fil.step(angles, STEP_NS)
        parser = protocol.FrameParser()
        for payload in parser.feed(bytes(fil.link.bytes)):
            message = protocol.decode(payload)
            if isinstance(message, protocol.Telemetry):  # (the HELLO_ACKs aside)
                reader.feed(message, fil.mcu.counts_per_rev, 0)
    finally:
        fil.close()
    return reader


def test_a_reset_with_the_wheels_angles_raises_no_glitch():
    reader = _glitches_after_a_reset(pass_the_angles=True)
    assert reader.mcu_resets == 1 and reader.encoder_glitches == 0, (reader.mcu_resets, reader.encoder_glitches)


def test_the_check_sees_the_glitch_of_a_reboot_on_stale_counts():
    reader = _glitches_after_a_reset(pass_the_angles=False)
    assert reader.mcu_resets == 1 and reader.encoder_glitches >= 1, (reader.mcu_resets, reader.encoder_glitches)


def test_the_mcu_image_rebooted_with_the_wheels_angles_raises_no_glitch():
    """Under QEMU the image's memory is cleared at a reboot: the simulator writes the wheels' counts before the
    firmware starts (at board_boot), here with the wheels left 7 rad from zero."""
    reader = _glitches_after_a_reset(pass_the_angles=True, build='qemu', reset_angle=7.0)
    assert reader.mcu_resets == 1 and reader.encoder_glitches == 0, (reader.mcu_resets, reader.encoder_glitches)
    stale = _glitches_after_a_reset(pass_the_angles=False, build='qemu', reset_angle=7.0)
    assert stale.mcu_resets == 1 and stale.encoder_glitches >= 1, (stale.mcu_resets, stale.encoder_glitches)
