/* robotsim base-controller firmware: per-wheel PID velocity control, UART protocol, watchdog. */
#ifndef ROBOTSIM_FIRMWARE_H
#define ROBOTSIM_FIRMWARE_H

#include <stdint.h>

#define FW_VERSION_MAJOR 1
#define FW_VERSION_MINOR 1
#define FW_VERSION_PATCH 0
#define FW_LOOP_HZ 1000u            /* control loop rate */
#define FW_TELEMETRY_DIVIDER 10u    /* telemetry every 10 loops: 100 Hz */
#define FW_COUNTS_PER_REV 8192u     /* encoder counts per wheel revolution (after the gearbox) */
#define FW_VELOCITY_WINDOW 10u      /* loops over which wheel speed is measured (10 ms) */
#define FW_DEFAULT_WATCHDOG_MS 300u
#define FW_STALL_MS 300u            /* saturated duty without encoder motion for this long = stall */

/* Reset all state (power-on). */
void fw_init(void);

/* One control-loop iteration; the caller runs it every 1/FW_LOOP_HZ seconds. */
void fw_step(void);

#endif
