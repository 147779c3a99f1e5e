//! What the firmware measures about itself: instructions (QEMU `-icount shift=0` makes one
//! instruction one nanosecond of virtual time, and SysTick on mps2-an386 counts at 25 MHz,
//! so one tick is 40 instructions) and stack depth (paint the free stack below the caller
//! with a pattern, run, find the deepest word that changed).
//!
//! The only `unsafe` here is writing and reading the free stack below the stack pointer,
//! which no live value occupies (the firmware takes no interrupts).

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;

/// Guest instructions per SysTick tick under `-icount shift=0` on mps2-an386.
pub const INSTRUCTIONS_PER_TICK: u64 = 40;
const RELOAD: u32 = 0x00FF_FFFF;
const PAINT: u32 = 0x5AA5_C33C;
/// Left unpainted under the painter's own stack pointer (its frame and the calls it makes).
const GUARD_BYTES: usize = 512;

/// A free-running SysTick: the instruction clock.
pub struct Clock {
    syst: SYST,
}

impl Clock {
    /// Starts SysTick from the core clock, counting down from 2^24 − 1 and wrapping.
    pub fn start(mut syst: SYST) -> Self {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_counter();
        Self { syst }
    }

    /// The current count (down-counting, 24 bits).
    pub fn now(&self) -> u32 {
        let _ = &self.syst;
        SYST::get_current()
    }

    /// Instructions from `start` to `end` (at most one wrap: 671 M instructions).
    pub fn instructions(start: u32, end: u32) -> u64 {
        u64::from(start.wrapping_sub(end) & RELOAD) * INSTRUCTIONS_PER_TICK
    }
}

/// The stack pointer now.
#[inline(always)]
pub fn stack_pointer() -> usize {
    cortex_m::register::msp::read() as usize
}

/// A painted stretch of free stack: `[bottom, top)`, below the caller's frame.
#[derive(Clone, Copy)]
pub struct Painted {
    bottom: usize,
    top: usize,
}

/// Paints `bytes` of free stack starting [`GUARD_BYTES`] below this function's own frame.
#[inline(never)]
pub fn paint(bytes: usize) -> Painted {
    let top = (stack_pointer() - GUARD_BYTES) & !3;
    let bottom = top - bytes;
    let mut addr = bottom;
    while addr < top {
        // SAFETY: [bottom, top) lies below this function's stack pointer and guard, in the
        // RAM region reserved for the stack (memory.x: 4 MiB, the static data is at its
        // start); nothing live is stored below the stack pointer and no interrupt runs.
        unsafe { core::ptr::write_volatile(addr as *mut u32, PAINT) };
        addr += 4;
    }
    Painted { bottom, top }
}

impl Painted {
    /// Bytes of stack used below `sp` (the stack pointer where the measured call was made)
    /// since painting: down to the deepest changed word. If nothing changed, the call used
    /// at most `sp − top`, which is returned. Saturates at the painted depth (then the probe
    /// was too shallow: the figure is a lower bound).
    pub fn used_below(&self, sp: usize) -> usize {
        let mut addr = self.bottom;
        while addr < self.top {
            // SAFETY: as in `paint`: the painted stretch is free stack, word aligned.
            let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
            if word != PAINT {
                return sp.saturating_sub(addr);
            }
            addr += 4;
        }
        sp.saturating_sub(self.top)
    }
}
