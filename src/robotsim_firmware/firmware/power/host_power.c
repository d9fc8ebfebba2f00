/* Host build of the power board for the simulator: its HAL against the simulated battery and relay. */
#include <string.h>

#include "hal.h"
#include "host_bus.h"
#include "host_clock.h"
#include "power_board.h"
#include "power_hal.h"

struct power_plant {
  uint32_t battery_mv;   /* written by the sim */
  uint8_t relay_closed;  /* written by the firmware */
  uint64_t time_ns;      /* the firmware clock: the sim time of the next loop */
  uint64_t loops;
  uint64_t remainder_ns;
  struct host_bus bus;
};

static struct power_plant plant;

uint32_t hal_battery_mv(void) { return plant.battery_mv; }
void hal_motor_relay(uint8_t closed) { plant.relay_closed = closed; }
uint64_t hal_time_us(void) { return plant.time_ns / 1000u; }
int hal_bus_send(uint16_t id, const uint8_t *data, uint8_t len) { return host_bus_send(&plant.bus, id, data, len); }
int hal_bus_receive(uint16_t *id, uint8_t *data, uint8_t *len) { return host_bus_receive(&plant.bus, id, data, len); }

/* The power board has no UART, motors or encoders: hal.h's other functions are not linked. */

struct power_plant *pw_host_plant(void) { return &plant; }

void pw_host_reset(void) {
  uint32_t battery = plant.battery_mv;
  uint64_t time_ns = plant.time_ns;
  memset(&plant, 0, sizeof(plant));
  plant.battery_mv = battery;
  plant.time_ns = time_ns;
  pw_init();
}

uint32_t pw_host_advance(uint64_t dt_ns) {
  return host_clock_advance(&plant.time_ns, &plant.loops, &plant.remainder_ns, dt_ns, POWER_LOOP_HZ, pw_step);
}
