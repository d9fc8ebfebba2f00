/* The STM32F405 registers the netduinoplus2 board port uses (RM0090 addresses and bits). */
#ifndef ROBOTSIM_STM32F405_H
#define ROBOTSIM_STM32F405_H

#include <stdint.h>

#define REG32(address) (*(volatile uint32_t *)(address))

/* Reset and clock control (RM0090 section 7). */
#define RCC_BASE 0x40023800u
#define RCC_CR REG32(RCC_BASE + 0x00u)
#define RCC_PLLCFGR REG32(RCC_BASE + 0x04u)
#define RCC_CFGR REG32(RCC_BASE + 0x08u)
#define RCC_AHB1ENR REG32(RCC_BASE + 0x30u)
#define RCC_APB1ENR REG32(RCC_BASE + 0x40u)
#define RCC_APB2ENR REG32(RCC_BASE + 0x44u)
#define RCC_CR_HSEON (1u << 16)
#define RCC_CR_HSERDY (1u << 17)
#define RCC_CR_PLLON (1u << 24)
#define RCC_CR_PLLRDY (1u << 25)
#define RCC_CFGR_SW_PLL 2u
#define RCC_CFGR_SWS_MASK (3u << 2)
#define RCC_CFGR_SWS_PLL (2u << 2)
#define FLASH_ACR REG32(0x40023C00u)

/* GPIO ports A and B (alternate functions of the USART and timer pins). */
#define GPIOA_BASE 0x40020000u
#define GPIOB_BASE 0x40020400u
#define GPIO_MODER(port) REG32((port) + 0x00u)
#define GPIO_AFRL(port) REG32((port) + 0x20u)
#define GPIO_AFRH(port) REG32((port) + 0x24u)
#define GPIO_BSRR(port) REG32((port) + 0x18u)

/* SPI (RM0090 section 28.5) */
#define SPI2_BASE 0x40003800u
#define SPI_CR1(base) REG32((base) + 0x00u)
#define SPI_SR(base) REG32((base) + 0x08u)
#define SPI_DR(base) REG32((base) + 0x0Cu)
#define SPI_CR1_MSTR (1u << 2)
#define SPI_CR1_BR_DIV64 (5u << 3) /* 42 MHz / 64 = 656 kHz: below the gyro's 1 MHz limit for register writes */
#define SPI_CR1_SPE (1u << 6)
#define SPI_CR1_SSI (1u << 8)
#define SPI_CR1_SSM (1u << 9)
#define SPI_CR1_CPOL_CPHA 3u       /* mode 3 */
#define SPI_SR_RXNE (1u << 0)
#define SPI_SR_TXE (1u << 1)

/* USART1 on APB2 (RM0090 section 30). */
#define USART1_BASE 0x40011000u
#define USART_SR(base) REG32((base) + 0x00u)
#define USART_DR(base) REG32((base) + 0x04u)
#define USART_BRR(base) REG32((base) + 0x08u)
#define USART_CR1(base) REG32((base) + 0x0Cu)
#define USART_SR_RXNE (1u << 5)
#define USART_SR_TXE (1u << 7)
#define USART_SR_ORE (1u << 3)
#define USART_CR1_UE (1u << 13)
#define USART_CR1_TXEIE (1u << 7)
#define USART_CR1_RXNEIE (1u << 5)
#define USART_CR1_TE (1u << 3)
#define USART_CR1_RE (1u << 2)
#define USART1_IRQ 37u

/* General-purpose timers TIM3 and TIM4 on APB1 (RM0090 section 18). */
#define TIM3_BASE 0x40000400u
#define TIM4_BASE 0x40000800u
#define TIM_CR1(base) REG32((base) + 0x00u)
#define TIM_EGR(base) REG32((base) + 0x14u)
#define TIM_CCMR1(base) REG32((base) + 0x18u)
#define TIM_CCMR2(base) REG32((base) + 0x1Cu)
#define TIM_CCER(base) REG32((base) + 0x20u)
#define TIM_PSC(base) REG32((base) + 0x28u)
#define TIM_ARR(base) REG32((base) + 0x2Cu)
#define TIM_CCR(base, n) REG32((base) + 0x34u + 4u * (n)) /* n = 0..3: CCR1..CCR4 */
#define TIM_CR1_CEN 1u
#define TIM_CR1_ARPE (1u << 7)
#define TIM_EGR_UG 1u
#define TIM_CCMR_PWM1_PRELOAD 0x68u /* OCxM = 110 (PWM mode 1), OCxPE = 1: one output channel's byte */

/* Cortex-M4 core peripherals. */
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define NVIC_ISER(n) REG32(0xE000E100u + 4u * (n))
#define SCB_CPACR REG32(0xE000ED88u)

#endif
