"""The fleet radio (ROS-free): the base controllers of a fleet's robots, each its real C firmware (host build),
hear each other's heartbeats with one physics step of latency (robotsim_firmware.board_bus on the simulation's
scale). Cutting one robot's radio link makes every other robot's firmware report it silent, and the cut robot
report the others; dropped frames are counted; a single robot has no radio to fault."""

from __future__ import annotations

from robotsim_core.description import load_robot
from robotsim_core.description.world_spec import SpawnSpec
from robotsim_firmware import protocol
from robotsim_sim.odometry_trials import open_floor
from robotsim_sim.scene import RobotPlacement
from robotsim_sim.simulation import SimOptions, Simulation


class Listener:
    """Stands in for a robot's serial link and its motor bridge: keeps what the MCU says, says nothing."""

    def __init__(self, link):
        self.link, self.down, self.drop_every = link, False, 0
        self.parser = protocol.FrameParser()
        self.telemetry: list[protocol.Telemetry] = []
        self.faults: list[protocol.Fault] = []

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        for message in map(protocol.decode, self.parser.feed(to_host)):
            if isinstance(message, protocol.Telemetry):
                self.telemetry.append(message)
            elif isinstance(message, protocol.Fault):
                self.faults.append(message)
        return b''

    def close(self) -> None:
        self.link.close()


def fleet(count: int) -> tuple[Simulation, list[Listener]]:
    rover = load_robot('rover')
    placements = [RobotPlacement(rover, f'robot{n}', SpawnSpec((2.0 * n, 0.0, 0.0))) for n in range(count)]
    sim = Simulation(open_floor(), placements, SimOptions(cameras=False, firmware=True))
    listeners = []
    for robot in sim.robots:
        robot.firmware.link = Listener(robot.firmware.link)
        listeners.append(robot.firmware.link)
    return sim, listeners


def run(sim: Simulation, seconds: float) -> None:
    for _ in range(round(seconds / sim.model.opt.timestep)):
        sim.step()


def silent(listener: Listener) -> bool:
    return bool(listener.telemetry[-1].faults & protocol.FAULT_FLEET_SILENT)


def test_a_cut_radio_link_is_noticed_by_every_robot_and_counted():
    sim, (zero, one, two) = fleet(3)
    try:
        radio = sim.fleet_radio
        assert list(radio.links) == ['robot0', 'robot1', 'robot2']
        run(sim, 1.0)
        assert not any(silent(listener) for listener in (zero, one, two))
        heard = radio.links['robot0'].counters
        assert heard.sent >= 9 and heard.delivered == 2 * heard.sent  # every heartbeat reached both others

        assert sim.robots[1].firmware.inject('radio_down') is None
        run(sim, 0.4)
        assert not silent(zero)  # 0.4 s of silence is within the 0.5 s timeout
        run(sim, 0.3)
        assert silent(zero) and silent(two) and silent(one)  # robot 1 is cut off: it hears nobody either
        assert {f.channel for f in zero.faults if f.faults & protocol.FAULT_FLEET_SILENT} == {0x81}
        assert {f.channel for f in one.faults if f.faults & protocol.FAULT_FLEET_SILENT} == {0x80, 0x82}
        assert radio.links['robot1'].counters.lost_link_down > 0

        assert sim.robots[1].firmware.inject('clear') is None
        run(sim, 0.3)
        assert not any(silent(listener) for listener in (zero, one, two))

        assert sim.robots[2].firmware.inject('radio_drop', value=2) is None  # every other heartbeat: 200 ms gaps
        run(sim, 1.5)
        assert not silent(zero) and radio.links['robot2'].counters.lost_dropped >= 6
        assert sim.robots[2].firmware.inject('radio_drop', value=1) is not None  # 1 would drop everything
    finally:
        sim.close()


def test_a_single_robot_has_no_radio_to_fault():
    sim, _ = fleet(1)
    try:
        assert sim.fleet_radio is None
        refusal = sim.robots[0].firmware.inject('radio_down')
        assert refusal is not None and 'no fleet radio' in refusal
    finally:
        sim.close()
