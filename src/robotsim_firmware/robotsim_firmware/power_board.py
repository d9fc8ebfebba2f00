"""The power board in the loop (ROS-free): the real C firmware of a robot's second board (firmware/power/), host
build, against a simulated battery and the motors' supply relay, on the robot's board-to-board bus
(robotsim_firmware.board_bus) beside the base controller.

The battery: a 3-cell pack at 12.6 V whose voltage sags with the motors' load, 0.4 V per unit of summed absolute
duty (an internal-resistance sag, not a discharge model: its charge does not run down)."""

from __future__ import annotations

import ctypes

from .host_library import HostBus, build_host_library, load_private_copy

BATTERY_FULL_MV = 12_600
SAG_MV_PER_DUTY = 400


class PowerPlant(ctypes.Structure):
    """Mirror of struct power_plant (firmware/power/host_power.c)."""

    _fields_ = [('battery_mv', ctypes.c_uint32), ('relay_closed', ctypes.c_uint8), ('time_ns', ctypes.c_uint64),
                ('loops', ctypes.c_uint64), ('remainder_ns', ctypes.c_uint64), ('bus', HostBus)]


class PowerBoard:
    """One power board running its firmware; the simulator drives its clock, its battery and reads its relay."""

    def __init__(self):
        self._lib = load_private_copy(build_host_library(board='power'))
        self._lib.pw_host_plant.restype = ctypes.POINTER(PowerPlant)
        self._lib.pw_host_advance.restype = ctypes.c_uint32
        self._lib.pw_host_advance.argtypes = [ctypes.c_uint64]
        self.plant = self._lib.pw_host_plant().contents
        self.plant.battery_mv = BATTERY_FULL_MV
        self.reset()

    @property
    def bus(self) -> HostBus:
        return self.plant.bus

    @property
    def relay_closed(self) -> bool:
        """The motors have their supply."""
        return bool(self.plant.relay_closed)

    def reset(self) -> None:
        """Power-on reset (its clock keeps the sim's time): the relay opens until the base is heard."""
        self._lib.pw_host_reset()

    def advance(self, dt_ns: int, load: float) -> int:
        """Run ``dt_ns`` of its loops with the battery under ``load`` (the motors' summed absolute duty)."""
        self.plant.battery_mv = max(0, round(BATTERY_FULL_MV - SAG_MV_PER_DUTY * load))
        return self._lib.pw_host_advance(dt_ns)
