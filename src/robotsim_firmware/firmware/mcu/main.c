/* MCU entry point: board init, then one firmware loop per SysTick tick (1 kHz); loop k runs at k ms. */
#include <stdint.h>

#include "board.h"
#include "firmware.h"
#include "hal.h"

uint32_t hal_ticks(void);
void hal_loop_time(uint32_t tick);

int main(void) {
  board_init();
  board_boot();
  hal_loop_time(0);
  fw_init();
  for (uint32_t loop = 0;; ++loop) {
    while (hal_ticks() < loop) {
      __asm__ volatile("wfi"); /* sleep until an interrupt: the tick, or a USART byte */
    }
    hal_loop_time(loop);
    board_loop_start(loop);
    fw_step();
  }
}
