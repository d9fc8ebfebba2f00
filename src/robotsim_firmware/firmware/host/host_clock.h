/* The sim-time clock of a host build's board (host builds only). */
#ifndef ROBOTSIM_HOST_CLOCK_H
#define ROBOTSIM_HOST_CLOCK_H

#include <stdint.h>

struct host_clock {
  uint64_t time_ns;       /* the board's clock: the sim time of its next loop (hal_time_us within a loop) */
  uint64_t loops;         /* loops run since reset */
  uint64_t remainder_ns;  /* sim time not yet covered by a whole loop period */
};

/* Run ``step`` for dt_ns of sim time in whole loop periods of a ``loop_hz`` loop, carrying the remainder, so the
 * loop count never drifts from sim time. Returns the loops run. A loop runs at the time it reads: the first loop
 * of a physics tick sees its inputs at the tick's own time. */
static inline uint32_t host_clock_advance(uint64_t *time_ns, uint64_t *loops, uint64_t *remainder_ns, uint64_t dt_ns,
                                          uint32_t loop_hz, void (*step)(void)) {
  const uint64_t period_ns = 1000000000ull / loop_hz;
  uint32_t ran = 0;
  *remainder_ns += dt_ns;
  while (*remainder_ns >= period_ns) {
    *remainder_ns -= period_ns;
    step();
    *time_ns += period_ns;
    (*loops)++;
    ran++;
  }
  return ran;
}

#endif
