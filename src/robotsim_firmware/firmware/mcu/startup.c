/* Cortex-M4 startup for the STM32F405: vector table (16 core + 82 device interrupts), .data copy,
 * .bss clear, then main(). Every handler a board file does not define is Default_Handler. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

void Reset_Handler(void) {
  uint32_t *src = &_sidata;
  for (uint32_t *dst = &_sdata; dst < &_edata;) *dst++ = *src++;
  for (uint32_t *dst = &_sbss; dst < &_ebss;) *dst++ = 0;
  main();
  for (;;) {
  }
}

void Default_Handler(void) {
  for (;;) {
  }
}

#define WEAK_HANDLER __attribute__((weak, alias("Default_Handler")))
void NMI_Handler(void) WEAK_HANDLER;
void HardFault_Handler(void) WEAK_HANDLER;
void SysTick_Handler(void) WEAK_HANDLER;
void USART1_IRQHandler(void) WEAK_HANDLER;

#define DEVICE_IRQS 82
#define USART1_IRQ 37

typedef void (*vector)(void);
__attribute__((section(".isr_vector"), used)) const vector vector_table[16 + DEVICE_IRQS] = {
    [0] = (vector)(&_estack),
    [1] = Reset_Handler,
    [2] = NMI_Handler,
    [3] = HardFault_Handler,
    [4] = Default_Handler, /* MemManage */
    [5] = Default_Handler, /* BusFault */
    [6] = Default_Handler, /* UsageFault */
    [11] = Default_Handler, /* SVCall */
    [12] = Default_Handler, /* DebugMon */
    [14] = Default_Handler, /* PendSV */
    [15] = SysTick_Handler,
    [16 + USART1_IRQ] = USART1_IRQHandler,
};
