/* robotsim power board firmware (see power_board.h). */
#include "power_board.h"

#include <string.h>

#include "bus.h"
#include "hal.h"
#include "power_hal.h"
#include "protocol.h"

static struct {
  uint32_t loops;
  uint64_t boot_us;
  uint8_t base_heard;
  uint64_t base_last_us;
  uint8_t undervoltage;
  uint8_t flags;
} pw;

void pw_init(void) {
  memset(&pw, 0, sizeof(pw));
  pw.boot_us = hal_time_us();
  hal_motor_relay(0); /* open until the base is heard */
}

void pw_step(void) {
  uint64_t now = hal_time_us();
  uint16_t id;
  uint8_t data[BUS_MAX_DATA], len;
  while (hal_bus_receive(&id, data, &len)) {
    if (id == BUS_ID_BASE_HEARTBEAT && len >= 6) {
      pw.base_heard = 1;
      pw.base_last_us = now;
    }
  }
  uint8_t silent = pw.base_heard ? now - pw.base_last_us > (uint64_t)BUS_PEER_TIMEOUT_MS * 1000u
                                 : now - pw.boot_us > (uint64_t)POWER_BOOT_GRACE_MS * 1000u;
  uint32_t mv = hal_battery_mv();
  if (mv < POWER_CUTOFF_MV) pw.undervoltage = 1;
  if (mv > POWER_RECOVER_MV) pw.undervoltage = 0;
  uint8_t closed = pw.base_heard && !silent && !pw.undervoltage;
  hal_motor_relay(closed);
  pw.flags = (uint8_t)((closed ? POWER_FLAG_RELAY_CLOSED : 0u) | (pw.undervoltage ? POWER_FLAG_UNDERVOLTAGE : 0u) |
                       (silent ? POWER_FLAG_BASE_SILENT : 0u));
  if (pw.loops++ % (BUS_HEARTBEAT_MS * POWER_LOOP_HZ / 1000u) == 0) {
    uint8_t status[3];
    proto_put_u16(status, (uint16_t)(mv > 0xFFFFu ? 0xFFFFu : mv));
    status[2] = pw.flags;
    hal_bus_send(BUS_ID_POWER_STATUS, status, sizeof(status));
  }
}
