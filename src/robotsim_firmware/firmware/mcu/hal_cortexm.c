/* Generic Cortex-M HAL of the MCU build.
 *
 * Time comes from the core's SysTick (present on every Cortex-M, 1 kHz here); the UART uses two
 * rings: the board's USART interrupt fills the receive ring and drains the transmit ring. Motor PWM,
 * encoder counts and the USART registers belong to the board file (board_*.c).
 *
 * hal_time_us() is the time of the current control loop (the SysTick tick that started it), not
 * the instant of the call: every call within one loop gives the same value, as in the host build,
 * so how long the loop has run so far cannot change what the firmware computes or sends. */
#include <stdint.h>

#include "board.h"
#include "hal.h"

#ifndef BOARD_CORE_CLOCK_HZ
#define BOARD_CORE_CLOCK_HZ 168000000u
#endif

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static volatile uint32_t ticks;
static uint64_t loop_us;

void SysTick_Handler(void) { ticks++; }

uint32_t hal_ticks(void) { return ticks; }

void hal_loop_time(uint32_t tick) { loop_us = (uint64_t)tick * 1000u; }

uint64_t hal_time_us(void) { return loop_us; }

#define UART_RING 256u /* a power of two */
static volatile uint8_t rx_ring[UART_RING], tx_ring[UART_RING];
static volatile uint32_t rx_head, rx_tail, tx_head, tx_tail;
static volatile uint32_t rx_overflows, rx_total;

uint32_t hal_uart_rx_total(void) { return rx_total; }

void hal_uart_rx_isr(uint8_t byte) {
  rx_total++;
  uint32_t next = (rx_head + 1u) % UART_RING;
  if (next == rx_tail) {
    rx_overflows++; /* the parser sees the gap as a corrupted frame */
    return;
  }
  rx_ring[rx_head] = byte;
  rx_head = next;
}

size_t hal_uart_read(uint8_t *buf, size_t max) {
  size_t n = 0;
  while (n < max && rx_tail != rx_head) {
    buf[n++] = rx_ring[rx_tail];
    rx_tail = (rx_tail + 1u) % UART_RING;
  }
  return n;
}

int hal_uart_tx_next(uint8_t *byte) {
  if (tx_tail == tx_head) return 0;
  *byte = tx_ring[tx_tail];
  tx_tail = (tx_tail + 1u) % UART_RING;
  return 1;
}

size_t hal_uart_write(const uint8_t *buf, size_t len) {
  uint32_t used = (tx_head + UART_RING - tx_tail) % UART_RING;
  if (len > UART_RING - 1u - used) return 0; /* all or nothing: never a truncated frame */
  for (size_t i = 0; i < len; ++i) {
    tx_ring[tx_head] = buf[i];
    tx_head = (tx_head + 1u) % UART_RING;
  }
  board_usart_tx_start();
  return len;
}

void hal_motor_write(uint8_t channel, float duty, uint8_t brake) { board_pwm_write(channel, duty, brake); }
int32_t hal_encoder_read(uint8_t channel) { return board_encoder_count(channel); }
int hal_gyro_read(int16_t *raw) { return board_gyro_read(raw); }
void hal_fault_led(uint8_t on) { board_led(on); }

/* No board-to-board bus on this port yet (the Netduino Plus 2 has no CAN transceiver; QEMU emulates no CAN). */
int hal_bus_send(uint16_t id, const uint8_t *data, uint8_t len) {
  (void)id;
  (void)data;
  (void)len;
  return 0;
}

int hal_bus_receive(uint16_t *id, uint8_t *data, uint8_t *len) {
  (void)id;
  (void)data;
  (void)len;
  return 0;
}

/* No fleet radio on this port either. */
int hal_radio_send(uint16_t id, const uint8_t *data, uint8_t len) { return hal_bus_send(id, data, len); }
int hal_radio_receive(uint16_t *id, uint8_t *data, uint8_t *len) { return hal_bus_receive(id, data, len); }
uint8_t hal_radio_node(void) { return 0; }

void board_init(void) {
  board_peripherals_init();
  SYST_RVR = BOARD_CORE_CLOCK_HZ / 1000u - 1u; /* the control loop's 1 kHz tick */
  SYST_CVR = 0;
  SYST_CSR = 7u; /* core clock, interrupt, enable */
}
