/* COBS framing + CRC-16/CCITT-FALSE for the base-controller link. Portable C99, no allocation. */
#include "protocol.h"

#include <string.h>

uint16_t proto_crc16(const uint8_t *data, size_t len) {
  uint16_t crc = 0xFFFF;
  for (size_t i = 0; i < len; ++i) {
    crc ^= (uint16_t)data[i] << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
  }
  return crc;
}

size_t proto_encode(const uint8_t *payload, size_t len, uint8_t *frame, size_t frame_max) {
  uint8_t raw[PROTO_MAX_PAYLOAD + 2];
  if (len > PROTO_MAX_PAYLOAD) return 0;
  memcpy(raw, payload, len);
  proto_put_u16(raw + len, proto_crc16(payload, len));
  size_t raw_len = len + 2;
  /* COBS: each block starts with the distance to the next zero (or block end). */
  size_t out = 1, code_at = 0;
  uint8_t code = 1;
  if (frame_max < raw_len + raw_len / 254 + 2) return 0;
  for (size_t i = 0; i < raw_len; ++i) {
    if (raw[i] == 0) {
      frame[code_at] = code;
      code_at = out++;
      code = 1;
    } else {
      frame[out++] = raw[i];
      if (++code == 0xFF) {
        frame[code_at] = code;
        code_at = out++;
        code = 1;
      }
    }
  }
  frame[code_at] = code;
  frame[out++] = 0x00;
  return out;
}

void proto_parser_init(struct proto_parser *parser) { memset(parser, 0, sizeof(*parser)); }

static void finish_frame(struct proto_parser *parser, proto_handler handler, void *user) {
  uint8_t decoded[PROTO_MAX_FRAME];
  size_t in = 0, out = 0;
  if (parser->overflow) {
    parser->errors++;
    return;
  }
  if (parser->len == 0) return; /* back-to-back delimiters: idle line, not an error */
  while (in < parser->len) {
    uint8_t code = parser->buf[in++];
    if (code == 0 || in + code - 1 > parser->len) {
      parser->errors++;
      return;
    }
    for (uint8_t i = 1; i < code; ++i) decoded[out++] = parser->buf[in++];
    if (code != 0xFF && in < parser->len) decoded[out++] = 0;
  }
  if (out < 4 || out - 2 > PROTO_MAX_PAYLOAD) {
    parser->errors++;
    return;
  }
  if (proto_crc16(decoded, out - 2) != proto_get_u16(decoded + out - 2)) {
    parser->errors++;
    return;
  }
  parser->frames_ok++;
  handler(decoded, out - 2, user);
}

void proto_parser_feed(struct proto_parser *parser, const uint8_t *data, size_t len, proto_handler handler,
                       void *user) {
  for (size_t i = 0; i < len; ++i) {
    if (data[i] == 0x00) {
      finish_frame(parser, handler, user);
      parser->len = 0;
      parser->overflow = 0;
    } else if (parser->len < sizeof(parser->buf)) {
      parser->buf[parser->len++] = data[i];
    } else {
      parser->overflow = 1; /* keep discarding until the next delimiter: that is the resync point */
    }
  }
}

void proto_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
void proto_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
void proto_put_f32(uint8_t *p, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  proto_put_u32(p, bits);
}
uint16_t proto_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
uint32_t proto_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
float proto_get_f32(const uint8_t *p) {
  uint32_t bits = proto_get_u32(p);
  float v;
  memcpy(&v, &bits, 4);
  return v;
}
