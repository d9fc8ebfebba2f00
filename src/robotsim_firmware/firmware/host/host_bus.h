/* The simulator's side of a board's bus port (host builds only): frames the board sent this step, frames the
 * bus delivered to it for this step. The simulator (robotsim_firmware.board_bus) empties the one and fills the
 * other between physics steps. */
#ifndef ROBOTSIM_HOST_BUS_H
#define ROBOTSIM_HOST_BUS_H

#include <stdint.h>
#include <string.h>

#include "bus.h"

#define HOST_BUS_QUEUE 32u

struct host_bus_frame {
  uint16_t id;
  uint8_t len;
  uint8_t data[BUS_MAX_DATA];
};

struct host_bus {
  uint32_t tx_count;                          /* frames sent since the simulator last emptied tx */
  uint32_t tx_overflows;                      /* frames the board could not queue (tx full) */
  uint32_t rx_count, rx_read;                 /* frames delivered for this step, and read of them */
  struct host_bus_frame tx[HOST_BUS_QUEUE];
  struct host_bus_frame rx[HOST_BUS_QUEUE];
};

static inline int host_bus_send(struct host_bus *bus, uint16_t id, const uint8_t *data, uint8_t len) {
  if (bus->tx_count >= HOST_BUS_QUEUE || len > BUS_MAX_DATA) {
    bus->tx_overflows++;
    return 0;
  }
  struct host_bus_frame *frame = &bus->tx[bus->tx_count++];
  frame->id = id;
  frame->len = len;
  memcpy(frame->data, data, len);
  return 1;
}

static inline int host_bus_receive(struct host_bus *bus, uint16_t *id, uint8_t *data, uint8_t *len) {
  if (bus->rx_read >= bus->rx_count || bus->rx_read >= HOST_BUS_QUEUE) return 0;
  const struct host_bus_frame *frame = &bus->rx[bus->rx_read++];
  *id = frame->id;
  *len = frame->len <= BUS_MAX_DATA ? frame->len : BUS_MAX_DATA;
  memcpy(data, frame->data, *len);
  return 1;
}

#endif
