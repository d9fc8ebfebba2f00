/* robotsim base-controller serial protocol (see docs/serial_protocol.md).
 * Frames: COBS(payload || CRC-16/CCITT-FALSE little-endian) followed by a 0x00 delimiter.
 * Payload: type (u8), sequence (u8), body (little-endian fields). */
#ifndef ROBOTSIM_PROTOCOL_H
#define ROBOTSIM_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/* 2: TELEMETRY carries the MCU's microsecond clock and when the last host frame arrived.
 * 3: SET_VELOCITY may carry the commanded yaw rate, SET_YAW_LOOP, TELEMETRY carries the gyro's yaw rate and heading. */
#define PROTOCOL_VERSION 3
#define PROTO_MAX_PAYLOAD 96
/* COBS adds one byte per 254 plus one; plus CRC and delimiter. */
#define PROTO_MAX_FRAME (PROTO_MAX_PAYLOAD + 2 + (PROTO_MAX_PAYLOAD + 2) / 254 + 2)

enum proto_type {
  MSG_HELLO = 0x01,          /* host -> mcu: u8 protocol version */
  MSG_SET_VELOCITY = 0x02,   /* host -> mcu: f32 wheel speed [4] (rad/s) [, f32 yaw rate the base should turn at (rad/s)] */
  MSG_SET_GAINS = 0x03,      /* host -> mcu: f32 kp, ki, kd, kff, u16 watchdog_ms */
  MSG_SET_YAW_LOOP = 0x04,   /* host -> mcu: f32 kp, ki, f32 wheel speed per base yaw rate [4] (rad/s per rad/s) */
  MSG_HELLO_ACK = 0x81,      /* mcu -> host: u8 protocol, u8 major, minor, patch, u8 wheels, u16 loop_hz, u32 counts_per_rev */
  MSG_TELEMETRY = 0x83,      /* mcu -> host: see struct proto_telemetry */
  MSG_FAULT = 0x84,          /* mcu -> host: u16 fault flags, u8 channel */
};

enum proto_status {
  STATUS_HELLO_DONE = 1u << 0,
  STATUS_WATCHDOG_BRAKING = 1u << 1,
  STATUS_SETPOINT_ACTIVE = 1u << 2,
  STATUS_GYRO_READY = 1u << 3,     /* the gyro's bias is known: its yaw rate and heading are valid */
  STATUS_YAW_LOOP = 1u << 4,       /* the yaw loop closes on the gyro this loop */
};

enum proto_fault {
  FAULT_ENCODER_STALL = 1u << 0,   /* high duty, no encoder motion (stuck encoder or dead motor) */
  FAULT_RESET = 1u << 1,           /* the MCU has (re)booted since the last hello */
  FAULT_PEER_SILENT = 1u << 2,     /* a board heard on the bus before has been silent for BUS_PEER_TIMEOUT_MS */
  FAULT_FLEET_SILENT = 1u << 3,    /* a robot heard on the fleet radio before has been silent for RADIO_PEER_TIMEOUT_MS */
};

struct proto_telemetry {
  uint32_t time_ms;
  int32_t encoder[4];
  float velocity[4];   /* rad/s measured from the encoders */
  int16_t duty[4];     /* duty * 32767 */
  uint16_t status;
  uint16_t faults;
  uint16_t rx_frames_ok;
  uint16_t rx_errors;  /* CRC, COBS and length errors */
  uint32_t time_us;    /* the same sample instant as time_ms, in microseconds (low 32 bits) */
  uint32_t host_rx_us; /* when the last valid host frame was received (microseconds, low 32 bits) */
  uint8_t host_rx_sequence; /* that frame's sequence number */
  uint8_t host_rx_type;     /* that frame's type; 0 = none since reset */
  float yaw_rate;           /* rad/s about the board's z from the gyro, bias removed (0 until STATUS_GYRO_READY) */
  int32_t heading_urad;     /* the gyro's integrated yaw (microradians since boot, wraps at 2^32) */
};
/* The host maps MCU time onto its own clock from host_rx_*: a frame cannot arrive before it was
 * sent, so (host send time - MCU receive time) is a lower bound of the clock offset. */
#define TELEMETRY_BODY_SIZE (4 + 16 + 16 + 8 + 2 + 2 + 2 + 2 + 4 + 4 + 1 + 1 + 4 + 4)

uint16_t proto_crc16(const uint8_t *data, size_t len);

/* Encode payload into a delimited frame; returns the frame length or 0 if it does not fit. */
size_t proto_encode(const uint8_t *payload, size_t len, uint8_t *frame, size_t frame_max);

/* Streaming parser: feed bytes; complete valid payloads are delivered through the callback. */
typedef void (*proto_handler)(const uint8_t *payload, size_t len, void *user);

struct proto_parser {
  uint8_t buf[PROTO_MAX_FRAME];
  size_t len;
  uint8_t overflow;
  uint32_t frames_ok;
  uint32_t errors;
};

void proto_parser_init(struct proto_parser *parser);
void proto_parser_feed(struct proto_parser *parser, const uint8_t *data, size_t len, proto_handler handler,
                       void *user);

/* Little-endian field helpers. */
void proto_put_u16(uint8_t *p, uint16_t v);
void proto_put_u32(uint8_t *p, uint32_t v);
void proto_put_f32(uint8_t *p, float v);
uint16_t proto_get_u16(const uint8_t *p);
uint32_t proto_get_u32(const uint8_t *p);
float proto_get_f32(const uint8_t *p);

#endif
