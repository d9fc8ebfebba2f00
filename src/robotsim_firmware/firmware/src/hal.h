/* Hardware abstraction layer of the base-controller firmware.
 *
 * The firmware reaches hardware only through these functions. A board port (mcu/) implements
 * them with timers, encoder interfaces and a USART; the simulator's host build (host/)
 * implements them against the simulated motors and encoders. Nothing above this header knows
 * which one it runs on. */
#ifndef ROBOTSIM_HAL_H
#define ROBOTSIM_HAL_H

#include <stddef.h>
#include <stdint.h>

/* Number of motor channels the board offers. */
#define HAL_MOTOR_CHANNELS 4

/* Motor PWM duty in [-1, 1]; 0 with brake=1 shorts the windings (active brake). */
void hal_motor_write(uint8_t channel, float duty, uint8_t brake);

/* Quadrature encoder count of a channel (free-running, wraps at 2^32). */
int32_t hal_encoder_read(uint8_t channel);

/* The board's yaw-rate gyro: 1 and its raw z reading (FW_GYRO_LSB_PER_DPS counts per degree per second about
 * the board's z axis, up as REP 103 has it), or 0 when the board has no gyro (the firmware then turns no yaw
 * loop and reports no heading). */
int hal_gyro_read(int16_t *raw);

/* Monotonic microseconds since boot. */
uint64_t hal_time_us(void);

/* Non-blocking UART: read up to max bytes into buf, returns the count (0 when none). */
size_t hal_uart_read(uint8_t *buf, size_t max);

/* Queue bytes for transmission: all of them or, when they do not fit, none (returns 0). A frame is
 * never cut short: a truncated frame would reach the host as a corrupted one. */
size_t hal_uart_write(const uint8_t *buf, size_t len);

/* Optional fault indicator (LED); may do nothing. */
void hal_fault_led(uint8_t on);

/* The board-to-board bus (src/bus.h): queue a frame (1) or not (0: no bus on this board, or its queue full). */
int hal_bus_send(uint16_t id, const uint8_t *data, uint8_t len);

/* The next frame heard on the bus: 1 and the frame (data holds up to 8 bytes), or 0 when none. */
int hal_bus_receive(uint16_t *id, uint8_t *data, uint8_t *len);

/* The fleet radio (src/bus.h), the same way; and this robot's node number on it (0..RADIO_MAX_PEERS-1). A board
 * without a radio sends nothing (0) and hears nothing. */
int hal_radio_send(uint16_t id, const uint8_t *data, uint8_t len);
int hal_radio_receive(uint16_t *id, uint8_t *data, uint8_t *len);
uint8_t hal_radio_node(void);

#endif
