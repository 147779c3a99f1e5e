//! The part's interrupt vectors. Without a device crate `cortex-m-rt` reserves 240 external
//! interrupts (960 B of flash); QEMU's `mps2-an386` has 32 (its `num-irq`), and a real part's
//! PAC (its `device` feature) gives its own count the same way. None is used here: each one
//! goes to `cortex-m-rt`'s default handler.

/// 32 external interrupts, all to the default handler.
#[unsafe(link_section = ".vector_table.interrupts")]
#[unsafe(no_mangle)]
static __INTERRUPTS: [unsafe extern "C" fn(); 32] = [{
    unsafe extern "C" {
        fn DefaultHandler();
    }
    DefaultHandler
}; 32];
