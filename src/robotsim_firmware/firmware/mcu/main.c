/* MCU entry point: board init, then the firmware loop paced by the monotonic clock. */
#include <stdint.h>

#include "board.h"
#include "firmware.h"
#include "hal.h"

int main(void) {
  board_init();
  fw_init();
  const uint64_t period_us = 1000000u / FW_LOOP_HZ;
  uint64_t next = hal_time_us() + period_us;
  for (;;) {
    while (hal_time_us() < next) {
      /* idle until the next loop period (a board may sleep here) */
    }
    next += period_us;
    fw_step();
  }
}
