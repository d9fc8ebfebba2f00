/* Board support for the MCU build: what the generic Cortex-M HAL (hal_cortexm.c) needs of a board file. */
#ifndef ROBOTSIM_BOARD_H
#define ROBOTSIM_BOARD_H

#include <stdint.h>

/* Clocks, pins, the USART and the PWM timers; then the 1 kHz SysTick. */
void board_init(void);

/* The board's peripheral drivers (board_*.c). */
void board_peripherals_init(void);
void board_usart_tx_start(void);  /* bytes wait in the HAL's transmit ring: start (or keep) sending */
void board_pwm_write(uint8_t channel, float duty, uint8_t brake);
int32_t board_encoder_count(uint8_t channel);
int board_gyro_read(int16_t *raw); /* 1 and the gyro's raw z reading, or 0: no gyro answered */
void board_led(uint8_t on);

/* The HAL's side for the board's USART interrupt. */
void hal_uart_rx_isr(uint8_t byte);
int hal_uart_tx_next(uint8_t *byte); /* 1 and the next byte to send, or 0 when the ring is empty */
uint32_t hal_uart_rx_total(void);    /* bytes received since boot (wraps) */

/* Called once after board_init, before the firmware starts (a simulator may stop the core here). */
void board_boot(void);

/* Called once per control loop before the firmware runs (a simulator may stop the core here). */
void board_loop_start(uint32_t loop);

#endif
