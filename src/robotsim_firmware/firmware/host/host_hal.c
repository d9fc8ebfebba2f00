/* HAL implemented against the simulated plant (host build only). */
#include <string.h>

#include "firmware.h"
#include "hal.h"
#include "host_clock.h"
#include "host_plant.h"
#include "protocol.h"

static struct host_plant plant;

void hal_motor_write(uint8_t channel, float duty, uint8_t brake) {
  if (channel < HAL_MOTOR_CHANNELS) {
    plant.duty[channel] = duty;
    plant.brake[channel] = brake;
  }
}

int32_t hal_encoder_read(uint8_t channel) { return channel < HAL_MOTOR_CHANNELS ? plant.encoder[channel] : 0; }

int hal_gyro_read(int16_t *raw) {
  *raw = plant.gyro;
  return plant.gyro_present;
}

uint64_t hal_time_us(void) { return plant.time_ns / 1000u; }

size_t hal_uart_read(uint8_t *buf, size_t max) {
  size_t n = 0;
  while (n < max && plant.rx_tail != plant.rx_head) {
    buf[n++] = plant.rx[plant.rx_tail];
    plant.rx_tail = (plant.rx_tail + 1) % HOST_UART_BUFFER;
  }
  return n;
}

size_t hal_uart_write(const uint8_t *buf, size_t len) {
  uint32_t used = (plant.tx_head + HOST_UART_BUFFER - plant.tx_tail) % HOST_UART_BUFFER;
  if (len > HOST_UART_BUFFER - 1u - used) { /* all or nothing: never a truncated frame */
    plant.tx_dropped += (uint32_t)len;
    return 0;
  }
  for (size_t n = 0; n < len; ++n) {
    plant.tx[plant.tx_head] = buf[n];
    plant.tx_head = (plant.tx_head + 1) % HOST_UART_BUFFER;
  }
  return len;
}

void hal_fault_led(uint8_t on) { plant.fault_led = on; }

int hal_bus_send(uint16_t id, const uint8_t *data, uint8_t len) { return host_bus_send(&plant.bus, id, data, len); }

int hal_bus_receive(uint16_t *id, uint8_t *data, uint8_t *len) { return host_bus_receive(&plant.bus, id, data, len); }

int hal_radio_send(uint16_t id, const uint8_t *data, uint8_t len) {
  return host_bus_send(&plant.radio, id, data, len);
}

int hal_radio_receive(uint16_t *id, uint8_t *data, uint8_t *len) {
  return host_bus_receive(&plant.radio, id, data, len);
}

uint8_t hal_radio_node(void) { return plant.radio_node; }

/* ---- simulator API ---- */

struct host_plant *fw_host_plant(void) { return &plant; }

/* Power-on reset of the MCU: clears the plant's firmware side and runs fw_init. */
void fw_host_reset(void) {
  int32_t encoder[HAL_MOTOR_CHANNELS];
  uint64_t time_ns = plant.time_ns;
  uint8_t gyro_present = plant.gyro_present;
  int16_t gyro = plant.gyro;
  uint8_t radio_node = plant.radio_node;
  memcpy(encoder, plant.encoder, sizeof(encoder));
  memset(&plant, 0, sizeof(plant));
  memcpy(plant.encoder, encoder, sizeof(encoder));
  plant.time_ns = time_ns;
  plant.gyro_present = gyro_present; /* the sensors are the plant's: a reboot does not change them */
  plant.gyro = gyro;
  plant.radio_node = radio_node;
  fw_init();
}

/* Run the firmware for dt_ns of sim time in whole loop periods (host_clock.h). */
uint32_t fw_host_advance(uint64_t dt_ns) {
  return host_clock_advance(&plant.time_ns, &plant.loops, &plant.remainder_ns, dt_ns, FW_LOOP_HZ, fw_step);
}

uint32_t fw_host_loop_hz(void) { return FW_LOOP_HZ; }
uint32_t fw_host_counts_per_rev(void) { return FW_COUNTS_PER_REV; }

/* A parser instance of its own, for protocol tests and fuzzing from the host. */
static struct proto_parser test_parser;
static uint8_t last_payload[PROTO_MAX_PAYLOAD];
static size_t last_payload_len;

static void keep_payload(const uint8_t *payload, size_t len, void *user) {
  (void)user;
  memcpy(last_payload, payload, len);
  last_payload_len = len;
}

void fw_host_parser_reset(void) {
  proto_parser_init(&test_parser);
  last_payload_len = 0;
}

/* Feed bytes; returns the number of valid frames so far; errors through *errors. */
uint32_t fw_host_parser_feed(const uint8_t *data, size_t len, uint32_t *errors) {
  proto_parser_feed(&test_parser, data, len, keep_payload, 0);
  *errors = test_parser.errors;
  return test_parser.frames_ok;
}

size_t fw_host_parser_last(uint8_t *out, size_t max) {
  size_t n = last_payload_len < max ? last_payload_len : max;
  memcpy(out, last_payload, n);
  return n;
}

size_t fw_host_encode(const uint8_t *payload, size_t len, uint8_t *frame, size_t max) {
  return proto_encode(payload, len, frame, max);
}
