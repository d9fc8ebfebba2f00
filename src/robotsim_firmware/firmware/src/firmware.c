/* Base-controller firmware. Portable C99; hardware only through hal.h.
 *
 * Every loop: read UART (setpoints, gains, hello), measure wheel speed from encoder counts
 * over a short window, read the gyro (its bias learnt at rest, its yaw rate integrated into a heading while
 * the base moves), close a yaw-rate loop on it that adds a turn to the wheel setpoints (a skid-steer base
 * scrubs its tyres and turns slower than its wheels say), run a PID (+ feedforward) per wheel, write PWM duty;
 * brake all motors
 * when no setpoint arrived within the watchdog time; cut a wheel whose duty is saturated while
 * its encoder does not move (stuck encoder or dead motor) and report the fault. */
#include "firmware.h"

#include <string.h>

#include "bus.h"
#include "hal.h"
#include "protocol.h"

#define TWO_PI 6.28318530718f
#define RAD_PER_DEG 0.0174532925199f
#define FW_MAX_COEFFICIENT 1e3f /* wheel rad/s per base rad/s: far above any wheel and track */
#define FW_MAX_GAIN 1e4f /* far above any useful duty-per-(rad/s) gain; rejects absurd values */

struct gains {
  float kp, ki, kd, kff;
  uint16_t watchdog_ms;
};

static struct {
  struct gains gains;
  struct proto_parser parser;
  float setpoint[HAL_MOTOR_CHANNELS];
  float integral[HAL_MOTOR_CHANNELS];
  float previous_error[HAL_MOTOR_CHANNELS];
  float velocity[HAL_MOTOR_CHANNELS];
  float duty[HAL_MOTOR_CHANNELS];
  int32_t history[FW_VELOCITY_WINDOW][HAL_MOTOR_CHANNELS];
  uint32_t history_index;
  uint32_t stall_loops[HAL_MOTOR_CHANNELS];
  uint64_t last_setpoint_us;
  uint32_t loops;
  uint16_t status;
  uint16_t faults;
  uint8_t tx_sequence;
  uint8_t stalled_channel_mask;
  uint64_t host_rx_us; /* when the last valid host frame arrived (echoed in telemetry for clock mapping) */
  uint8_t host_rx_sequence;
  uint8_t host_rx_type;
  uint8_t peer_heard;   /* the power board has been heard on the bus since boot */
  uint8_t peer_silent;  /* ... and then not for BUS_PEER_TIMEOUT_MS */
  uint8_t peer_flags;   /* its last POWER_FLAG_* */
  uint64_t peer_last_us;
  /* The fleet radio: when each robot was last heard (0: never), which of them are silent now. */
  uint64_t fleet_last_us[RADIO_MAX_PEERS];
  uint16_t fleet_heard, fleet_silent;
  /* The gyro: bias (raw counts), loops at rest in a row, samples averaged into the bias, rate, heading. */
  float gyro_bias;
  uint32_t rest_loops;
  uint32_t bias_samples;
  float yaw_rate;
  int32_t heading_urad;
  float heading_fraction; /* microradians turned and not yet counted in heading_urad */
  /* The yaw loop: gains and each wheel's share of a base turn (SET_YAW_LOOP), the command (SET_VELOCITY). */
  float yaw_kp, yaw_ki, yaw_coefficient[HAL_MOTOR_CHANNELS];
  uint8_t yaw_loop_set;
  uint8_t yaw_command_given;
  float yaw_command;
  float yaw_integral;
} fw;

static void send(const uint8_t *payload, size_t len) {
  uint8_t frame[PROTO_MAX_FRAME];
  size_t frame_len = proto_encode(payload, len, frame, sizeof(frame));
  if (frame_len) hal_uart_write(frame, frame_len);
}

static void send_fault(uint16_t faults, uint8_t channel) {
  uint8_t payload[5] = {MSG_FAULT, fw.tx_sequence++, 0, 0, channel};
  proto_put_u16(payload + 2, faults);
  send(payload, sizeof(payload));
}

static int valid_gain(float gain) { return gain >= 0.0f && gain <= FW_MAX_GAIN; } /* false for NaN */

static void on_message(const uint8_t *payload, size_t len, void *user) {
  (void)user;
  if (len < 2) return;
  uint8_t type = payload[0];
  fw.host_rx_us = hal_time_us();
  fw.host_rx_sequence = payload[1];
  fw.host_rx_type = type;
  const uint8_t *body = payload + 2;
  size_t body_len = len - 2;
  if (type == MSG_HELLO && body_len >= 1) {
    uint8_t ack[13] = {MSG_HELLO_ACK, fw.tx_sequence++, PROTOCOL_VERSION, FW_VERSION_MAJOR, FW_VERSION_MINOR,
                       FW_VERSION_PATCH, HAL_MOTOR_CHANNELS};
    proto_put_u16(ack + 7, FW_LOOP_HZ);
    proto_put_u32(ack + 9, FW_COUNTS_PER_REV);
    send(ack, sizeof(ack));
    if (body[0] == PROTOCOL_VERSION) {
      fw.status |= STATUS_HELLO_DONE;
      fw.faults = 0; /* a new session acknowledges earlier faults */
      fw.stalled_channel_mask = 0;
    }
  } else if (type == MSG_SET_VELOCITY && body_len >= 4 * HAL_MOTOR_CHANNELS) {
    for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) {
      float value = proto_get_f32(body + 4 * i);
      fw.setpoint[i] = (value == value && value < 1e4f && value > -1e4f) ? value : 0.0f; /* NaN/Inf -> stop */
    }
    fw.yaw_command_given = 0; /* without a yaw rate (a protocol-2 host) or a garbage one: no yaw loop */
    if (body_len >= 4 * HAL_MOTOR_CHANNELS + 4) {
      float yaw = proto_get_f32(body + 4 * HAL_MOTOR_CHANNELS);
      if (yaw == yaw && yaw < 1e3f && yaw > -1e3f) {
        fw.yaw_command = yaw;
        fw.yaw_command_given = 1;
      }
    }
    fw.last_setpoint_us = hal_time_us();
    fw.status |= STATUS_SETPOINT_ACTIVE;
  } else if (type == MSG_SET_GAINS && body_len >= 18) {
    float kp = proto_get_f32(body), ki = proto_get_f32(body + 4), kd = proto_get_f32(body + 8),
          kff = proto_get_f32(body + 12);
    /* A NaN, infinite, negative or absurd gain would drive the motors with garbage: keep the old set. */
    if (valid_gain(kp) && valid_gain(ki) && valid_gain(kd) && valid_gain(kff)) {
      fw.gains.kp = kp;
      fw.gains.ki = ki;
      fw.gains.kd = kd;
      fw.gains.kff = kff;
      fw.gains.watchdog_ms = proto_get_u16(body + 16);
    }
  } else if (type == MSG_SET_YAW_LOOP && body_len >= 8 + 4 * HAL_MOTOR_CHANNELS) {
    float kp = proto_get_f32(body), ki = proto_get_f32(body + 4), coefficient[HAL_MOTOR_CHANNELS];
    int valid = valid_gain(kp) && valid_gain(ki);
    for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) {
      coefficient[i] = proto_get_f32(body + 8 + 4 * i);
      valid = valid && coefficient[i] >= -FW_MAX_COEFFICIENT && coefficient[i] <= FW_MAX_COEFFICIENT; /* NaN: no */
    }
    if (valid) {
      fw.yaw_kp = kp;
      fw.yaw_ki = ki;
      memcpy(fw.yaw_coefficient, coefficient, sizeof(coefficient));
      fw.yaw_loop_set = 1;
      fw.yaw_integral = 0.0f;
    }
  }
}

void fw_init(void) {
  memset(&fw, 0, sizeof(fw));
  proto_parser_init(&fw.parser);
  fw.gains.kp = 0.05f;
  fw.gains.ki = 0.5f;
  fw.gains.kd = 0.0f;
  fw.gains.kff = 0.0f;
  fw.gains.watchdog_ms = FW_DEFAULT_WATCHDOG_MS;
  fw.faults = FAULT_RESET;
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) {
    int32_t count = hal_encoder_read((uint8_t)i);
    for (uint32_t k = 0; k < FW_VELOCITY_WINDOW; ++k) fw.history[k][i] = count;
    hal_motor_write((uint8_t)i, 0.0f, 1);
  }
}

static float clamp(float value, float low, float high) { return value < low ? low : (value > high ? high : value); }

/* sample_us: when this loop read the encoders, the instant the telemetry describes. */
static void send_telemetry(uint64_t sample_us) {
  uint8_t payload[2 + TELEMETRY_BODY_SIZE] = {MSG_TELEMETRY, fw.tx_sequence++};
  uint8_t *p = payload + 2;
  uint32_t newest = (fw.history_index + FW_VELOCITY_WINDOW - 1) % FW_VELOCITY_WINDOW;
  proto_put_u32(p, (uint32_t)(sample_us / 1000u));
  p += 4;
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i, p += 4) proto_put_u32(p, (uint32_t)fw.history[newest][i]);
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i, p += 4) proto_put_f32(p, fw.velocity[i]);
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i, p += 2) proto_put_u16(p, (uint16_t)(int16_t)(fw.duty[i] * 32767.0f));
  proto_put_u16(p, fw.status);
  proto_put_u16(p + 2, fw.faults);
  proto_put_u16(p + 4, (uint16_t)fw.parser.frames_ok);
  proto_put_u16(p + 6, (uint16_t)fw.parser.errors);
  proto_put_u32(p + 8, (uint32_t)sample_us);
  proto_put_u32(p + 12, (uint32_t)fw.host_rx_us);
  p[16] = fw.host_rx_sequence;
  p[17] = fw.host_rx_type;
  proto_put_f32(p + 18, fw.yaw_rate);
  proto_put_u32(p + 22, (uint32_t)fw.heading_urad);
  send(payload, sizeof(payload));
}

/* The bus: hear the power board, say the base is alive. A peer heard once and then silent is a fault (a cut
 * bus, a dead board); a board never heard is not expected (a robot without one). */
static void bus_step(uint64_t now) {
  uint16_t id;
  uint8_t data[BUS_MAX_DATA], len;
  while (hal_bus_receive(&id, data, &len)) {
    if (id == BUS_ID_POWER_STATUS && len >= 3) {
      fw.peer_heard = 1;
      fw.peer_last_us = now;
      fw.peer_flags = data[2];
    }
  }
  uint8_t silent = fw.peer_heard && now - fw.peer_last_us > (uint64_t)BUS_PEER_TIMEOUT_MS * 1000u;
  if (silent) {
    fw.faults |= FAULT_PEER_SILENT;
    if (!fw.peer_silent) send_fault(fw.faults, 0xFF);
  } else {
    fw.faults &= (uint16_t)~FAULT_PEER_SILENT;
  }
  fw.peer_silent = silent;
  if (fw.loops % (BUS_HEARTBEAT_MS * FW_LOOP_HZ / 1000u) == 0) {
    uint8_t beat[6];
    proto_put_u32(beat, fw.loops);
    proto_put_u16(beat + 4, fw.faults);
    hal_bus_send(BUS_ID_BASE_HEARTBEAT, beat, sizeof(beat));
  }
}

/* The gyro, once a loop: learn its bias while the base stands still (nothing commanded, no wheel moving), then
 * integrate its yaw rate into the heading while the base may move; and the yaw loop: while driving with a yaw
 * rate commanded, the turn (rad/s) to add to the commanded one so that the gyro's rate meets it. Returns that
 * turn (0: no loop). A board without a gyro: no heading, no loop. */
static float gyro_step(int at_rest, int driving, int drive_allowed, float dt) {
  int16_t raw;
  if (!hal_gyro_read(&raw)) {
    fw.status &= (uint16_t)~(STATUS_GYRO_READY | STATUS_YAW_LOOP);
    return 0.0f;
  }
  if (at_rest) {
    /* The mean of the samples so far, then an exponential average over FW_GYRO_BIAS_TAU_MS. */
    uint32_t tau = FW_GYRO_BIAS_TAU_MS * FW_LOOP_HZ / 1000u;
    fw.bias_samples += fw.bias_samples < tau;
    fw.gyro_bias += ((float)raw - fw.gyro_bias) / (float)fw.bias_samples;
    if (++fw.rest_loops >= FW_GYRO_REST_MS * FW_LOOP_HZ / 1000u) fw.status |= STATUS_GYRO_READY;
  } else {
    fw.rest_loops = 0;
  }
  if (!(fw.status & STATUS_GYRO_READY)) {
    fw.yaw_rate = 0.0f;
    fw.status &= (uint16_t)~STATUS_YAW_LOOP;
    return 0.0f;
  }
  fw.yaw_rate = ((float)raw - fw.gyro_bias) * (RAD_PER_DEG / FW_GYRO_LSB_PER_DPS);
  if (!at_rest) { /* standing still it does not turn: integrating the noise would only drift */
    fw.heading_fraction += fw.yaw_rate * dt * 1e6f;
    int32_t whole = (int32_t)fw.heading_fraction;
    fw.heading_urad = (int32_t)((uint32_t)fw.heading_urad + (uint32_t)whole); /* wraps */
    fw.heading_fraction -= (float)whole;
  }
  /* A wheel at full duty (a stuck encoder's runaway, a blocked wheel) cannot follow a correction: the loop holds
   * still (its integral kept) rather than pull the other wheels, or hide the stall, on a gyro that sees it. */
  int saturated = 0;
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) saturated = saturated || fw.duty[i] > 0.95f || fw.duty[i] < -0.95f;
  if (saturated && driving && drive_allowed) {
    fw.status &= (uint16_t)~STATUS_YAW_LOOP;
    return 0.0f;
  }
  if (!(driving && drive_allowed && fw.yaw_loop_set && fw.yaw_command_given)) {
    fw.yaw_integral = 0.0f;
    fw.status &= (uint16_t)~STATUS_YAW_LOOP;
    return 0.0f;
  }
  fw.status |= STATUS_YAW_LOOP;
  float error = fw.yaw_command - fw.yaw_rate;
  fw.yaw_integral = clamp(fw.yaw_integral + fw.yaw_ki * error * dt, -FW_YAW_CORRECTION_MAX, FW_YAW_CORRECTION_MAX);
  return clamp(fw.yaw_kp * error + fw.yaw_integral, -FW_YAW_CORRECTION_MAX, FW_YAW_CORRECTION_MAX);
}

/* The fleet radio: hear the other robots' base controllers, say this one is alive. A robot heard once and then
 * silent is a fault (its radio link cut, the robot off); one FAULT frame when it goes silent, channel 0x80 + its
 * node. */
static void radio_step(uint64_t now) {
  uint16_t id;
  uint8_t data[BUS_MAX_DATA], len;
  while (hal_radio_receive(&id, data, &len)) {
    if (id == RADIO_ID_HEARTBEAT && len >= 1 && data[0] < RADIO_MAX_PEERS) {
      fw.fleet_heard |= (uint16_t)(1u << data[0]);
      fw.fleet_last_us[data[0]] = now;
    }
  }
  uint16_t silent = 0;
  for (uint8_t node = 0; node < RADIO_MAX_PEERS; ++node) {
    uint16_t bit = (uint16_t)(1u << node);
    if ((fw.fleet_heard & bit) && now - fw.fleet_last_us[node] > (uint64_t)RADIO_PEER_TIMEOUT_MS * 1000u) {
      silent |= bit;
      if (!(fw.fleet_silent & bit)) {
        fw.faults |= FAULT_FLEET_SILENT;
        send_fault(fw.faults, (uint8_t)(0x80u | node));
      }
    }
  }
  fw.fleet_silent = silent;
  if (silent) {
    fw.faults |= FAULT_FLEET_SILENT;
  } else {
    fw.faults &= (uint16_t)~FAULT_FLEET_SILENT;
  }
  if (fw.loops % (RADIO_HEARTBEAT_MS * FW_LOOP_HZ / 1000u) == 0) {
    uint8_t beat[7] = {hal_radio_node()};
    proto_put_u32(beat + 1, fw.loops);
    proto_put_u16(beat + 5, fw.faults);
    hal_radio_send(RADIO_ID_HEARTBEAT, beat, sizeof(beat));
  }
}

void fw_step(void) {
  uint8_t rx[64];
  size_t n;
  while ((n = hal_uart_read(rx, sizeof(rx))) > 0) proto_parser_feed(&fw.parser, rx, n, on_message, 0);

  const float dt = 1.0f / (float)FW_LOOP_HZ;
  uint64_t now = hal_time_us();
  bus_step(now);
  radio_step(now);
  uint32_t oldest = fw.history_index;  /* the slot about to be overwritten holds the count WINDOW loops ago */
  int watchdog = !(fw.status & STATUS_SETPOINT_ACTIVE) ||
                 now - fw.last_setpoint_us > (uint64_t)fw.gains.watchdog_ms * 1000u;
  if (watchdog) {
    fw.status = (uint16_t)((fw.status | STATUS_WATCHDOG_BRAKING) & ~STATUS_SETPOINT_ACTIVE);
  } else {
    fw.status &= (uint16_t)~STATUS_WATCHDOG_BRAKING;
  }
  /* Motors without supply (the power board's relay open, or the power board silent: it opens the relay then) are
   * not driven: no integral wind-up, and no stall, since a wheel without power cannot follow. */
  int unpowered = fw.peer_heard && (fw.peer_silent || !(fw.peer_flags & POWER_FLAG_RELAY_CLOSED));
  int32_t moved[HAL_MOTOR_CHANNELS];
  int wheels_still = 1, commanded = 0;
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) {
    int32_t count = hal_encoder_read((uint8_t)i);
    moved[i] = (int32_t)((uint32_t)count - (uint32_t)fw.history[oldest][i]); /* wrap-safe */
    fw.history[oldest][i] = count;
    fw.velocity[i] = (float)moved[i] * TWO_PI / (float)FW_COUNTS_PER_REV / (dt * FW_VELOCITY_WINDOW);
    wheels_still = wheels_still && moved[i] == 0;
    commanded = commanded || fw.setpoint[i] != 0.0f;
  }
  commanded = !watchdog && !unpowered && (commanded || (fw.yaw_command_given && fw.yaw_command != 0.0f));
  float turn = gyro_step(wheels_still && !commanded, commanded, !watchdog && !unpowered, dt);
  for (int i = 0; i < HAL_MOTOR_CHANNELS; ++i) {
    uint8_t stalled = (fw.stalled_channel_mask >> i) & 1u;
    if (watchdog || stalled || unpowered) {
      fw.integral[i] = 0.0f;
      fw.previous_error[i] = 0.0f;
      fw.stall_loops[i] = 0;
      fw.duty[i] = 0.0f;
      hal_motor_write((uint8_t)i, 0.0f, 1);
      continue;
    }
    float target = fw.setpoint[i] + fw.yaw_coefficient[i] * turn;
    float error = target - fw.velocity[i];
    fw.integral[i] = clamp(fw.integral[i] + fw.gains.ki * error * dt, -0.5f, 0.5f);
    float derivative = (error - fw.previous_error[i]) / dt;
    fw.previous_error[i] = error;
    fw.duty[i] = clamp(fw.gains.kff * target + fw.gains.kp * error + fw.integral[i] + fw.gains.kd * derivative,
                       -1.0f, 1.0f);
    /* Stall: saturated drive but the encoder does not move. */
    int saturated = fw.duty[i] > 0.95f || fw.duty[i] < -0.95f;
    fw.stall_loops[i] = (saturated && moved[i] == 0) ? fw.stall_loops[i] + 1 : 0;
    if (fw.stall_loops[i] >= FW_STALL_MS * FW_LOOP_HZ / 1000u) {
      fw.stalled_channel_mask |= (uint8_t)(1u << i);
      fw.faults |= FAULT_ENCODER_STALL;
      fw.duty[i] = 0.0f;
      send_fault(fw.faults, (uint8_t)i);
    }
    hal_motor_write((uint8_t)i, fw.duty[i], 0);
  }
  fw.history_index = (fw.history_index + 1) % FW_VELOCITY_WINDOW;
  hal_fault_led(fw.faults != 0);
  /* Telemetry on the first loop after boot and every tenth after it. */
  if (fw.loops++ % FW_TELEMETRY_DIVIDER == 0) send_telemetry(now);
}
