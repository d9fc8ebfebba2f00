"""IMU from MuJoCo's gyro, accelerometer and framequat sensors plus seeded noise and bias (REP 145).

MuJoCo's accelerometer measures specific force (it reads +g on z at rest), which is what a real
IMU reports. The orientation is the IMU frame in the world (ENU, z up) frame.
"""

from __future__ import annotations

import mujoco
import numpy as np
import transforms3d.quaternions as t3q

from robotsim_core.description.spec import ImuSpec

from .readings import ImuReading


class Imu:
    def __init__(self, model: mujoco.MjModel, prefix: str, spec: ImuSpec):
        self.spec = spec

        def address(suffix: str) -> int:
            return int(model.sensor_adr[model.sensor(f'{prefix}{spec.name}_{suffix}').id])

        self.gyro, self.accel, self.quat = address('gyro'), address('accelerometer'), address('orientation')
        self.gyro_bias = np.zeros(3)
        self.accel_bias = np.zeros(3)

    def draw_biases(self, rng: np.random.Generator) -> None:
        """Per-episode constant biases (called at every reset, from the sensor's own stream)."""
        self.gyro_bias = rng.normal(0.0, self.spec.gyro_bias_stddev, 3)
        self.accel_bias = rng.normal(0.0, self.spec.accel_bias_stddev, 3)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> ImuReading:
        s = self.spec
        gyro = data.sensordata[self.gyro:self.gyro + 3] + self.gyro_bias + rng.normal(0.0, s.gyro_noise_stddev, 3)
        accel = data.sensordata[self.accel:self.accel + 3] + self.accel_bias + rng.normal(0.0, s.accel_noise_stddev, 3)
        quat = np.array(data.sensordata[self.quat:self.quat + 4])
        if s.orientation_noise_stddev > 0:
            tilt = rng.normal(0.0, s.orientation_noise_stddev, 3)
            angle = float(np.linalg.norm(tilt))
            if angle > 0:
                quat = t3q.qmult(quat, t3q.axangle2quat(tilt / angle, angle))
        return ImuReading(stamp, quat / np.linalg.norm(quat), gyro, accel,
                          s.orientation_noise_stddev ** 2, (s.gyro_noise_stddev ** 2 + s.gyro_bias_stddev ** 2),
                          (s.accel_noise_stddev ** 2 + s.accel_bias_stddev ** 2))
