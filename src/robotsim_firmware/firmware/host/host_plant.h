/* Host build for firmware-in-the-loop: the simulator's side of the HAL.
 * The simulator reads and writes this struct directly (ctypes maps it) once per physics tick,
 * then calls fw_host_advance() to run the firmware for that much sim time. */
#ifndef ROBOTSIM_HOST_PLANT_H
#define ROBOTSIM_HOST_PLANT_H

#include <stdint.h>

#include "hal.h"
#include "host_bus.h"

#define HOST_UART_BUFFER 4096

struct host_plant {
  int32_t encoder[HAL_MOTOR_CHANNELS];    /* written by the sim: counts the encoders would report */
  float duty[HAL_MOTOR_CHANNELS];         /* written by the firmware */
  uint8_t brake[HAL_MOTOR_CHANNELS];      /* written by the firmware */
  uint8_t fault_led;
  uint8_t gyro_present;                   /* written by the sim: the board has a gyro */
  int16_t gyro;                           /* written by the sim: its raw z reading (hal_gyro_read) */
  uint64_t time_ns;                       /* firmware clock: the sim time of the next loop (hal_time_us in a loop) */
  uint64_t loops;                         /* loop iterations run since reset */
  uint64_t remainder_ns;                  /* sim time not yet covered by a whole loop period */
  uint32_t rx_head, rx_tail;              /* sim -> firmware bytes (ring) */
  uint32_t tx_head, tx_tail;              /* firmware -> sim bytes (ring) */
  uint32_t tx_dropped;
  uint8_t rx[HOST_UART_BUFFER];
  uint8_t tx[HOST_UART_BUFFER];
  struct host_bus bus;                    /* the board-to-board bus port */
  struct host_bus radio;                  /* the fleet radio's port */
  uint8_t radio_node;                     /* written by the sim: this robot's node on the fleet radio */
};

#endif
