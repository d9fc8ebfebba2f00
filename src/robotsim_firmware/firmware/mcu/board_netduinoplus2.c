/* Board port: Netduino Plus 2 (STM32F405RG, 168 MHz), the board Debian's qemu-system-arm emulates as
 * `-M netduinoplus2`.
 *
 * Wiring:
 *   USART1 (PA9 TX, PA10 RX, AF7) at 115200 8N1: the link to the host (interrupt driven both ways).
 *   TIM3 CH1..CH4 (PA6, PA7, PB0, PB1, AF2) and TIM4 CH1..CH4 (PB6..PB9, AF2): 20 kHz PWM into two
 *     DRV8833-style H-bridges, two inputs per motor: motor m drives IN1 = channel 2m, IN2 = 2m + 1 of
 *     TIM3 (m = 0, 1) and TIM4 (m = 2, 3). Forward: IN1 = duty, IN2 = 0; reverse: IN1 = 0, IN2 = duty;
 *     brake: both inputs high (slow decay); coast: both low.
 *   Encoders: TIM2, TIM5, TIM1 and TIM8 in encoder mode (TI1/TI2 quadrature, x4), read as counters.
 *   Gyro: an ICM-20602 (MPU-6000 register map) on SPI2 (PB13 SCK, PB14 MISO, PB15 MOSI, AF5; PB12 chip select),
 *     +-500 deg/s full scale; GYRO_ZOUT read every loop.
 *
 * Clocks: HSE 8 MHz -> PLL -> SYSCLK 168 MHz, APB1 42 MHz (timers x2 = 84 MHz), APB2 84 MHz.
 *
 * Under QEMU 7.2 (Debian 12): RCC, GPIO and the flash interface are not emulated (writes ignored, reads
 * 0), so every wait on a ready flag is bounded; SYSCLK is fixed at 168 MHz, which is what this port
 * sets up anyway. The USART does not raise its TXE interrupt (its transmit is synchronous and TXE
 * always set), so each loop also drains the transmit ring by polling TXE. Timers have no output
 * pins: the simulator reads the duty from CCRx / (ARR + 1) and checks the PWM frequency against
 * PSC and ARR. No timer counts encoder edges (TIM1 and TIM8 are missing, TIM2..TIM5 count their clock
 * whatever their mode), so the image built for QEMU (BOARD_QEMU=1, `make qemu`) reads the counts from
 * board_inputs.encoder, which the simulator writes through QEMU's gdb stub at the start of every loop (its
 * address is in board_debug_info). No gyro is attached to QEMU's SPI2 either: that image reads the gyro's raw
 * z from board_inputs.gyro, written with the encoders. Those are the only differences from the image for the
 * real board. */
#include <stdint.h>

#include "board.h"
#include "hal.h"
#include "stm32f405.h"

#ifndef BOARD_CORE_CLOCK_HZ
#define BOARD_CORE_CLOCK_HZ 168000000u
#endif
#define BOARD_APB1_TIMER_HZ 84000000u
#define BOARD_APB2_HZ 84000000u
#define BOARD_BAUD 115200u
#define BOARD_PWM_HZ 20000u
#define BOARD_READY_POLLS 100000u /* bound of every wait on a clock's ready flag */

/* USART divisor (oversampling by 16): BRR = f_PCLK / baud, mantissa and fraction in one number. */
#ifndef BOARD_USART_BRR
#define BOARD_USART_BRR ((BOARD_APB2_HZ + BOARD_BAUD / 2u) / BOARD_BAUD)
#endif
/* PWM: TIMx_CLK / (PSC + 1) / (ARR + 1) = BOARD_PWM_HZ. */
#ifndef BOARD_PWM_PSC
#define BOARD_PWM_PSC 0u
#endif
#define BOARD_PWM_ARR (BOARD_APB1_TIMER_HZ / (BOARD_PWM_PSC + 1u) / BOARD_PWM_HZ - 1u)

/* The board's sensor readings: encoder counts as the quadrature decoders report them, the gyro's raw z (with
 * BOARD_QEMU=1 both are written by the simulator, in one write). */
volatile struct {
  int32_t encoder[HAL_MOTOR_CHANNELS];
  int32_t gyro;
} board_inputs;
static volatile uint8_t fault_led;

/* Bytes a simulator has put on the USART's receive line by the time it resumes a loop (it writes this word
 * through the debugger); the loop then waits for all of them before the firmware runs, so what a loop receives
 * does not depend on when the emulator's I/O thread delivered them. NO_SIMULATOR on a real board: no wait. */
#define NO_SIMULATOR 0xFFFFFFFFu
#define RX_WAIT_POLLS 1000000u /* bound of that wait (about 30 ms of core time) */
volatile uint32_t board_rx_expected = NO_SIMULATOR;

/* A simulator that needs the core stopped only every n-th loop (its physics step spans n loops) writes n here. */
volatile uint32_t board_sync_stride = 1u;

/* Where a debugger finds what it needs, at a fixed address right after the vector table (see the
 * linker script): a magic word, the version of this layout, the addresses of the two per-loop stopping
 * points (board_sync_even, board_sync_odd), of board_inputs, of the loop counter and of
 * board_rx_expected, the core clock the image was built for, the address of board_boot (a stop
 * before the firmware's start reads its encoders) and that of board_sync_stride. */
volatile uint32_t board_loop;
void board_sync_even(uint32_t loop);
void board_sync_odd(uint32_t loop);
__attribute__((section(".board_debug_info"), used)) const uint32_t board_debug_info[10] = {
    0x52534D31u, /* "RSM1" */
    6u,
    (uint32_t)&board_sync_even,
    (uint32_t)&board_sync_odd,
    (uint32_t)&board_inputs,
    (uint32_t)&board_loop,
    (uint32_t)&board_rx_expected,
    BOARD_CORE_CLOCK_HZ,
    (uint32_t)&board_boot,
    (uint32_t)&board_sync_stride,
};

static void encoder_timers_init(void);
static void gyro_init(void);

static void wait_flag(volatile uint32_t *reg, uint32_t mask, uint32_t value) {
  for (uint32_t n = 0; n < BOARD_READY_POLLS && (*reg & mask) != value; ++n) {
  }
}

static void clocks_init(void) {
  SCB_CPACR |= 0xFu << 20; /* the FPU (CP10, CP11) */
  FLASH_ACR = (1u << 9) | (1u << 10) | 5u; /* caches on, 5 wait states for 168 MHz */
  RCC_CR |= RCC_CR_HSEON;
  wait_flag(&RCC_CR, RCC_CR_HSERDY, RCC_CR_HSERDY);
  /* PLL: 8 MHz / M 8 * N 336 / P 2 = 168 MHz, Q 7 (48 MHz USB), source HSE. */
  RCC_PLLCFGR = 8u | (336u << 6) | (0u << 16) | (1u << 22) | (7u << 24);
  RCC_CR |= RCC_CR_PLLON;
  wait_flag(&RCC_CR, RCC_CR_PLLRDY, RCC_CR_PLLRDY);
  RCC_CFGR = (5u << 10) | (4u << 13) | RCC_CFGR_SW_PLL; /* APB1 /4, APB2 /2, SYSCLK = PLL */
  wait_flag(&RCC_CFGR, RCC_CFGR_SWS_MASK, RCC_CFGR_SWS_PLL);
  RCC_AHB1ENR |= 3u;             /* GPIOA, GPIOB */
  RCC_APB1ENR |= 0xFu;           /* TIM2..TIM5 */
  RCC_APB2ENR |= 3u | (1u << 4); /* TIM1, TIM8, USART1 */
}

static void pin_alternate(uint32_t port, uint32_t pin, uint32_t function) {
  GPIO_MODER(port) = (GPIO_MODER(port) & ~(3u << (2u * pin))) | (2u << (2u * pin));
  volatile uint32_t *afr = pin < 8u ? &GPIO_AFRL(port) : &GPIO_AFRH(port);
  uint32_t shift = 4u * (pin % 8u);
  *afr = (*afr & ~(0xFu << shift)) | (function << shift);
}

static void pwm_timer_init(uint32_t timer) {
  TIM_PSC(timer) = BOARD_PWM_PSC;
  TIM_ARR(timer) = BOARD_PWM_ARR;
  for (uint32_t n = 0; n < 4u; ++n) TIM_CCR(timer, n) = BOARD_PWM_ARR + 1u; /* brake until the firmware runs */
  TIM_CCMR1(timer) = TIM_CCMR_PWM1_PRELOAD | (TIM_CCMR_PWM1_PRELOAD << 8);
  TIM_CCMR2(timer) = TIM_CCMR_PWM1_PRELOAD | (TIM_CCMR_PWM1_PRELOAD << 8);
  TIM_CCER(timer) = 0x1111u; /* CC1E..CC4E */
  TIM_EGR(timer) = TIM_EGR_UG;
  TIM_CR1(timer) = TIM_CR1_ARPE | TIM_CR1_CEN;
}

void board_peripherals_init(void) {
  clocks_init();
  pin_alternate(GPIOA_BASE, 9u, 7u);
  pin_alternate(GPIOA_BASE, 10u, 7u);
  pin_alternate(GPIOA_BASE, 6u, 2u);
  pin_alternate(GPIOA_BASE, 7u, 2u);
  pin_alternate(GPIOB_BASE, 0u, 2u);
  pin_alternate(GPIOB_BASE, 1u, 2u);
  for (uint32_t pin = 6u; pin <= 9u; ++pin) pin_alternate(GPIOB_BASE, pin, 2u);
  pwm_timer_init(TIM3_BASE);
  pwm_timer_init(TIM4_BASE);
  encoder_timers_init();
  gyro_init();
  USART_BRR(USART1_BASE) = BOARD_USART_BRR;
  USART_CR1(USART1_BASE) = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE | USART_CR1_RXNEIE;
  NVIC_ISER(USART1_IRQ / 32u) = 1u << (USART1_IRQ % 32u);
}

/* Sends while the data register is free; with interrupts off (the USART interrupt sends too). */
static void usart_send_pending(void) {
  uint8_t byte;
  __asm__ volatile("cpsid i" ::: "memory");
  while ((USART_SR(USART1_BASE) & USART_SR_TXE) && hal_uart_tx_next(&byte)) USART_DR(USART1_BASE) = byte;
  __asm__ volatile("cpsie i" ::: "memory");
}

void USART1_IRQHandler(void) {
  uint32_t status = USART_SR(USART1_BASE);
  if (status & (USART_SR_RXNE | USART_SR_ORE)) hal_uart_rx_isr((uint8_t)USART_DR(USART1_BASE));
  if ((USART_CR1(USART1_BASE) & USART_CR1_TXEIE) && (status & USART_SR_TXE)) {
    uint8_t byte;
    if (hal_uart_tx_next(&byte)) {
      USART_DR(USART1_BASE) = byte;
    } else {
      USART_CR1(USART1_BASE) &= ~USART_CR1_TXEIE; /* ring empty: stop the TXE interrupt */
    }
  }
}

void board_usart_tx_start(void) {
  __asm__ volatile("cpsid i" ::: "memory");
  USART_CR1(USART1_BASE) |= USART_CR1_TXEIE;
  __asm__ volatile("cpsie i" ::: "memory");
  usart_send_pending(); /* QEMU 7.2 raises no TXE interrupt: send what the register takes now */
}

void board_pwm_write(uint8_t channel, float duty, uint8_t brake) {
  if (channel >= HAL_MOTOR_CHANNELS) return;
  uint32_t timer = channel < 2u ? TIM3_BASE : TIM4_BASE;
  uint32_t in1 = 2u * (channel % 2u), in2 = in1 + 1u;
  uint32_t full = BOARD_PWM_ARR + 1u;
  if (brake) {
    TIM_CCR(timer, in1) = full;
    TIM_CCR(timer, in2) = full;
    return;
  }
  float magnitude = duty < 0.0f ? -duty : duty;
  uint32_t compare = (uint32_t)(magnitude * (float)full + 0.5f);
  if (compare > full) compare = full;
  TIM_CCR(timer, in1) = duty >= 0.0f ? compare : 0u;
  TIM_CCR(timer, in2) = duty >= 0.0f ? 0u : compare;
}

/* Encoder mode 3 (both inputs, x4) on the four encoder timers; the 16-bit counters are extended to 32
 * bits in software (read every loop: far below 32768 counts a millisecond). */
static const uint32_t encoder_timers[HAL_MOTOR_CHANNELS] = {0x40000000u, 0x40000C00u, 0x40010000u, 0x40010400u};

static void encoder_timers_init(void) {
  for (uint32_t n = 0; n < HAL_MOTOR_CHANNELS; ++n) {
    uint32_t timer = encoder_timers[n];
    REG32(timer + 0x08u) = 3u;                     /* SMCR: encoder mode 3 */
    TIM_CCMR1(timer) = 1u | (1u << 8);             /* CC1S = TI1, CC2S = TI2 */
    TIM_ARR(timer) = 0xFFFFu;
    TIM_CR1(timer) = TIM_CR1_CEN;
  }
}

#if BOARD_QEMU
int32_t board_encoder_count(uint8_t channel) { return channel < HAL_MOTOR_CHANNELS ? board_inputs.encoder[channel] : 0; }

int board_gyro_read(int16_t *raw) {
  *raw = (int16_t)board_inputs.gyro;
  return 1;
}

static void gyro_init(void) {}
#else
static uint16_t encoder_last[HAL_MOTOR_CHANNELS];
int32_t board_encoder_count(uint8_t channel) {
  if (channel >= HAL_MOTOR_CHANNELS) return 0;
  uint16_t now = (uint16_t)REG32(encoder_timers[channel] + 0x24u); /* TIMx_CNT */
  board_inputs.encoder[channel] += (int16_t)(uint16_t)(now - encoder_last[channel]);
  encoder_last[channel] = now;
  return board_inputs.encoder[channel];
}

/* One SPI transfer of a byte; every wait bounded (a missing gyro must not hang the loop). */
static int spi_transfer(uint8_t out, uint8_t *in) {
  uint32_t n = 0;
  while (!(SPI_SR(SPI2_BASE) & SPI_SR_TXE) && ++n < BOARD_READY_POLLS) {
  }
  SPI_DR(SPI2_BASE) = out;
  for (n = 0; !(SPI_SR(SPI2_BASE) & SPI_SR_RXNE); ++n) {
    if (n >= BOARD_READY_POLLS) return 0;
  }
  *in = (uint8_t)SPI_DR(SPI2_BASE);
  return 1;
}

/* A register access: chip select low, address (bit 7 set: read), data bytes, chip select high. */
static int gyro_transfer(uint8_t address, uint8_t *data, uint32_t len) {
  uint8_t ignored;
  GPIO_BSRR(GPIOB_BASE) = 1u << (12u + 16u);
  int ok = spi_transfer(address, &ignored);
  for (uint32_t i = 0; ok && i < len; ++i) ok = spi_transfer(address & 0x80u ? 0u : data[i], &data[i]);
  GPIO_BSRR(GPIOB_BASE) = 1u << 12u;
  return ok;
}

static uint8_t gyro_alive;

static void gyro_init(void) {
  RCC_APB1ENR |= 1u << 14; /* SPI2 */
  GPIO_MODER(GPIOB_BASE) = (GPIO_MODER(GPIOB_BASE) & ~(3u << 24)) | (1u << 24); /* PB12: output */
  GPIO_BSRR(GPIOB_BASE) = 1u << 12u;
  for (uint32_t pin = 13u; pin <= 15u; ++pin) pin_alternate(GPIOB_BASE, pin, 5u);
  SPI_CR1(SPI2_BASE) = SPI_CR1_MSTR | SPI_CR1_BR_DIV64 | SPI_CR1_SSM | SPI_CR1_SSI | SPI_CR1_CPOL_CPHA | SPI_CR1_SPE;
  uint8_t who = 0, wake = 0x01u, scale = 0x08u; /* clock from the gyro's PLL; FS_SEL 1: +-500 deg/s */
  gyro_alive = gyro_transfer(0x80u | 0x75u, &who, 1u) && who == 0x12u /* WHO_AM_I of the ICM-20602 */
               && gyro_transfer(0x6Bu, &wake, 1u) && gyro_transfer(0x1Bu, &scale, 1u);
}

int board_gyro_read(int16_t *raw) {
  uint8_t z[2] = {0, 0};
  if (!gyro_alive || !gyro_transfer(0x80u | 0x47u, z, 2u)) return 0; /* GYRO_ZOUT_H, GYRO_ZOUT_L */
  *raw = (int16_t)(uint16_t)((z[0] << 8) | z[1]);
  return 1;
}
#endif

void board_led(uint8_t on) { fault_led = on; }

/* After board_init, before fw_init takes its speed baseline from the encoders. Does nothing. */
__attribute__((noinline)) void board_boot(void) { __asm__ volatile("" ::: "memory"); }

/* Two stopping points, called alternately at every board_sync_stride-th loop (a debugger tells consecutive stops
 * apart by where the core stopped). They do nothing. */
__attribute__((noinline)) void board_sync_even(uint32_t loop) { __asm__ volatile("" : : "r"(loop) : "memory"); }
__attribute__((noinline)) void board_sync_odd(uint32_t loop) { __asm__ volatile("" : : "r"(loop) : "memory"); }

void board_loop_start(uint32_t loop) {
  board_loop = loop;
  usart_send_pending();
  uint32_t stride = board_sync_stride ? board_sync_stride : 1u;
  if (loop % stride == 0u) {
    if ((loop / stride) & 1u) {
      board_sync_odd(loop);
    } else {
      board_sync_even(loop);
    }
  }
  uint32_t expected = board_rx_expected;
  for (uint32_t n = 0; expected != NO_SIMULATOR && hal_uart_rx_total() != expected && n < RX_WAIT_POLLS; ++n) {
  }
}
