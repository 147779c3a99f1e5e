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

/// Paints `bytes` of free stack starting [`GUARD_BYTES`] below this function's own frame
/// (never below the end of the static data: a probe deeper than the free RAM is cut there).
#[inline(never)]
pub fn paint(bytes: usize) -> Painted {
    let top = (stack_pointer() - GUARD_BYTES) & !3;
    let bottom = top.saturating_sub(bytes).max(static_end()).min(top);
    let mut addr = bottom;
    while addr < top {
        // SAFETY: [bottom, top) lies below this function's stack pointer and guard and above
        // the static data (cortex-m-rt's `__sheap`), in the RAM region reserved for the
        // stack; nothing live is stored below the stack pointer and no interrupt runs.
        unsafe { core::ptr::write_volatile(addr as *mut u32, PAINT) };
        addr += 4;
    }
    Painted { bottom, top }
}

unsafe extern "C" {
    /// cortex-m-rt's link.x: the end of `.data`, `.bss` and `.uninit` (where a heap would start).
    static __sheap: u32;
    /// cortex-m-rt's link.x: the initial stack pointer, the top of RAM (memory.x).
    static _stack_start: u32;
}

/// The first byte after the static data.
fn static_end() -> usize {
    (&raw const __sheap) as usize
}

/// The top of the stack (the end of RAM).
fn stack_top() -> usize {
    (&raw const _stack_start) as usize
}

/// The start of RAM (`memory.x`): the static data starts there.
const RAM_ORIGIN: usize = 0x2000_0000;

/// Bytes of stack in use at `sp` (from the top of RAM).
pub fn stack_depth(sp: usize) -> usize {
    stack_top().saturating_sub(sp)
}

/// Paints all free RAM between the static data and this function's frame: at the end of the
/// run, the deepest changed word is the deepest the stack ever went (unless a later probe
/// painted over it, which is why every measured call also records its own depth).
#[inline(never)]
pub fn paint_free_ram() -> Painted {
    let top = (stack_pointer() - GUARD_BYTES) & !3;
    paint(top.saturating_sub(static_end()))
}

impl Painted {
    /// Bytes from the top of RAM down to the deepest changed word of this painted stretch
    /// (the whole stretch changed: the stack reached the static data).
    pub fn deepest_use(&self) -> usize {
        let mut addr = self.bottom;
        while addr < self.top {
            // SAFETY: as in `paint`: the painted stretch is free stack, word aligned.
            let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
            if word != PAINT {
                return stack_top().saturating_sub(addr);
            }
            addr += 4;
        }
        stack_top().saturating_sub(self.top)
    }

    /// Bytes of RAM before the painted stretch's bottom that hold static data.
    pub fn static_bytes(&self) -> usize {
        static_end().saturating_sub(RAM_ORIGIN)
    }

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
