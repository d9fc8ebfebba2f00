/* robotsim power board firmware: battery monitor and the motors' supply relay. Portable C99; hardware only
 * through power_hal.h, the bus through hal.h's bus functions.
 *
 * Every loop (1 kHz): hears the bus; opens the motor relay while the base controller is silent (no heartbeat for
 * BUS_PEER_TIMEOUT_MS, or none within POWER_BOOT_GRACE_MS of boot) or the battery is below its cut-off
 * (POWER_CUTOFF_MV, back above POWER_RECOVER_MV), closes it otherwise; every BUS_HEARTBEAT_MS sends its status
 * (battery mV, flags) on the bus. */
#ifndef ROBOTSIM_POWER_BOARD_H
#define ROBOTSIM_POWER_BOARD_H

#include <stdint.h>

#define POWER_LOOP_HZ 1000u
#define POWER_BOOT_GRACE_MS 500u
#define POWER_CUTOFF_MV 10500u   /* a 3-cell lithium pack at 3.5 V a cell */
#define POWER_RECOVER_MV 11000u

void pw_init(void);
void pw_step(void);

#endif
