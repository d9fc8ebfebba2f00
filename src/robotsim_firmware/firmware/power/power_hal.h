/* Hardware of the power board (besides time and the bus, in hal.h). */
#ifndef ROBOTSIM_POWER_HAL_H
#define ROBOTSIM_POWER_HAL_H

#include <stdint.h>

/* Battery voltage (mV) from the board's ADC divider. */
uint32_t hal_battery_mv(void);

/* The motors' supply relay: 1 closed (motors powered), 0 open. */
void hal_motor_relay(uint8_t closed);

#endif
