//! The no-panic link check: builds a TIAS + best-fit scheduler and drives `handle` with
//! events drawn from a generator the compiler cannot see through (seeded from SysTick).
//! With the `no-panic-check` feature its panic handler calls a symbol that exists nowhere,
//! so the binary links only if no panic path is reachable from construction or `handle`.
//! Without the feature the handler loops, so the same code links and its panic call sites
//! can be counted (`scripts/firmware-check.sh`).
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use gantry_core::wire::{FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
use gantry_core::{
    BestFit, Decision, DurationMs, Event, GpuId, JobId, JobSpec, LinkWeights, Scheduler, Tias,
    TimeMs, Topology,
};

type Sched = Scheduler<Tias, BestFit, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;

/// xorshift64: the events' source.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn event(&mut self) -> Event {
        let job = JobId(self.below(400) as u32);
        match self.below(8) {
            0..=2 => {
                let mut spec = JobSpec::new(job, 1 + self.below(8) as u16);
                if self.below(3) == 0 {
                    spec.deadline = Some(TimeMs(self.next()));
                }
                spec.declared_length = Some(DurationMs(self.below(1 << 30)));
                Event::Submit(spec)
            }
            3 | 4 => Event::Finish(job),
            5 => Event::Cancel(job),
            6 => {
                let gpu = GpuId(self.below(70) as u16);
                if self.below(2) == 0 {
                    Event::GpuDown(gpu)
                } else {
                    Event::GpuUp(gpu)
                }
            }
            _ => Event::Tick,
        }
    }
}

#[entry]
fn main() -> ! {
    let seed = u64::from(cortex_m::peripheral::SYST::get_current()) | 1;
    let mut draw = Draw(seed);
    let shape = (1 + draw.below(3) as u16, 1 + draw.below(4) as u16, 8);
    let topology = match Topology::uniform(shape.0, shape.1, shape.2, LinkWeights::PROXIMITY_DRL) {
        Ok(t) => t,
        Err(_) => semihosting::process::exit(2),
    };
    let mut scheduler: Sched = Scheduler::new(topology, Tias::default(), BestFit);
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    let mut now = 0u64;
    for _ in 0..10_000 {
        now = now.saturating_add(draw.below(600_000));
        out.clear();
        let _ = scheduler.handle(TimeMs(now), draw.event(), &mut out);
    }
    semihosting::process::exit(0)
}

#[cfg(feature = "no-panic-check")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    unsafe extern "C" {
        /// Defined nowhere: referencing it fails the link unless this handler is removed as
        /// unreachable.
        fn gantry_panic_is_reachable() -> !;
    }
    // SAFETY: never executes in a binary that links (the symbol does not exist).
    unsafe { gantry_panic_is_reachable() }
}

#[cfg(not(feature = "no-panic-check"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::process::exit(101)
}
