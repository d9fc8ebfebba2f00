/* robotsim base-controller firmware: per-wheel PID velocity control, a gyro yaw-rate loop and heading, UART
 * protocol, watchdog. */
#ifndef ROBOTSIM_FIRMWARE_H
#define ROBOTSIM_FIRMWARE_H

#include <stdint.h>

#define FW_VERSION_MAJOR 1
#define FW_VERSION_MINOR 2
#define FW_VERSION_PATCH 0
#define FW_LOOP_HZ 1000u            /* control loop rate */
#define FW_TELEMETRY_DIVIDER 10u    /* telemetry every 10 loops: 100 Hz */
#define FW_COUNTS_PER_REV 8192u     /* encoder counts per wheel revolution (after the gearbox) */
#define FW_VELOCITY_WINDOW 10u      /* loops over which wheel speed is measured (10 ms) */
#define FW_DEFAULT_WATCHDOG_MS 300u
#define FW_STALL_MS 300u            /* saturated duty without encoder motion for this long = stall */
#define FW_GYRO_LSB_PER_DPS 65.5f   /* gyro counts per deg/s: +-500 deg/s full scale (ICM-20602, MPU-6000 class) */
#define FW_GYRO_REST_MS 500u        /* at rest this long after boot: the gyro's bias is known, heading and yaw loop on */
#define FW_GYRO_BIAS_TAU_MS 2000u   /* at rest after that, the bias estimate follows with this time constant */
#define FW_YAW_CORRECTION_MAX 1.0f  /* rad/s: most the yaw loop may add to the commanded yaw rate, either way */

/* Reset all state (power-on). */
void fw_init(void);

/* One control-loop iteration; the caller runs it every 1/FW_LOOP_HZ seconds. */
void fw_step(void);

#endif
