/* Vector table for the mps2-an386 (Cortex-M4F): the reset vector enters newlib's rdimon
 * crt0 (`_start`: stack, .bss, semihosting argv, main, exit). The FPU is enabled first,
 * since the gantry library is built for thumbv7em-none-eabihf. */
#include <stdint.h>

extern void _start(void);
extern uint32_t __stack_top;

void Reset_Handler(void) {
    /* CPACR: full access to CP10 and CP11 (the FPU). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n isb");
    _start();
    for (;;) {
    }
}

static void Default_Handler(void) {
    for (;;) {
    }
}

__attribute__((section(".isr_vector"), used)) const void *const vectors[16] = {
    &__stack_top,     Reset_Handler,   Default_Handler, Default_Handler,
    Default_Handler,  Default_Handler, Default_Handler, 0,
    0,                0,               0,               Default_Handler,
    Default_Handler,  0,               Default_Handler, Default_Handler,
};

/* newlib's __libc_init_array/__libc_fini_array call these; -nostartfiles leaves out the crti
 * objects that define them, and this firmware needs nothing there. */
void _init(void) {}
void _fini(void) {}
