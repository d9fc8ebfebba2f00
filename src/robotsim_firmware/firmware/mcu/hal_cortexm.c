/* Generic Cortex-M HAL of the MCU build.
 *
 * Time comes from the core's SysTick (present on every Cortex-M); the UART uses small rings fed
 * by the board's USART interrupt. Motor PWM, encoder counters and the USART register access are
 * board specific: they are the weak functions at the end, which a board file overrides with its
 * timer and USART drivers. As shipped they drive nothing (an honest placeholder for a board port,
 * not simulator code: the simulator uses host/host_hal.c). */
#include <stdint.h>

#include "board.h"
#include "hal.h"

#ifndef BOARD_CORE_CLOCK_HZ
#define BOARD_CORE_CLOCK_HZ 168000000u
#endif

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static volatile uint64_t millis;

void SysTick_Handler(void) { millis++; }

uint64_t hal_time_us(void) {
  uint64_t ms;
  uint32_t ticks;
  do { /* re-read if the millisecond rolled over meanwhile */
    ms = millis;
    ticks = SYST_CVR;
  } while (ms != millis);
  uint32_t per_ms = BOARD_CORE_CLOCK_HZ / 1000u;
  return ms * 1000u + (uint64_t)(per_ms - 1u - ticks) * 1000u / per_ms;
}

#define UART_RING 256
static volatile uint8_t rx_ring[UART_RING];
static volatile uint32_t rx_head, rx_tail;

/* Called by the board's USART receive interrupt. */
void hal_uart_rx_isr(uint8_t byte) {
  uint32_t next = (rx_head + 1u) % UART_RING;
  if (next != rx_tail) {
    rx_ring[rx_head] = byte;
    rx_head = next;
  }
}

size_t hal_uart_read(uint8_t *buf, size_t max) {
  size_t n = 0;
  while (n < max && rx_tail != rx_head) {
    buf[n++] = rx_ring[rx_tail];
    rx_tail = (rx_tail + 1u) % UART_RING;
  }
  return n;
}

__attribute__((weak)) void board_usart_send(uint8_t byte) { (void)byte; }
__attribute__((weak)) void board_pwm_write(uint8_t channel, float duty, uint8_t brake) {
  (void)channel;
  (void)duty;
  (void)brake;
}
__attribute__((weak)) int32_t board_encoder_count(uint8_t channel) {
  (void)channel;
  return 0;
}
__attribute__((weak)) void board_led(uint8_t on) { (void)on; }
__attribute__((weak)) void board_peripherals_init(void) {}

size_t hal_uart_write(const uint8_t *buf, size_t len) {
  for (size_t i = 0; i < len; ++i) board_usart_send(buf[i]);
  return len;
}

void hal_motor_write(uint8_t channel, float duty, uint8_t brake) { board_pwm_write(channel, duty, brake); }
int32_t hal_encoder_read(uint8_t channel) { return board_encoder_count(channel); }
void hal_fault_led(uint8_t on) { board_led(on); }

void board_init(void) {
  SYST_RVR = BOARD_CORE_CLOCK_HZ / 1000u - 1u; /* 1 kHz tick */
  SYST_CVR = 0;
  SYST_CSR = 7u; /* core clock, interrupt, enable */
  board_peripherals_init();
}
