//! The no-panic link check: builds a scheduler for every order × placer pair this build
//! enables (`--features tias,best-fit`, …) and drives `handle` with events drawn from a
//! generator the compiler cannot see through (seeded from SysTick). With the
//! `no-panic-check` feature its panic handler calls a symbol that exists nowhere, so the
//! binary links only if no panic path is reachable from construction or `handle`. Without
//! the feature the handler exits, so the same code links and its panic call sites can be
//! counted (`scripts/firmware-check.sh` builds it once per pair).
#![no_std]
#![no_main]

#[path = "../vectors.rs"]
mod vectors;

use cortex_m_rt::entry;
use gantry_core::wire::{FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
use gantry_core::{
    Decision, DurationMs, Event, GpuId, JobId, JobOrder, JobSpec, LinkWeights, Placer,
    PreemptionClass, Scheduler, SchedulerConfig, TimeMs, Topology,
};

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
                if self.below(4) == 0 {
                    spec.preemption = PreemptionClass::Never;
                }
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

/// Builds a scheduler of the pair on a drawn topology and feeds it 10,000 drawn events.
fn drive<O: JobOrder, P: Placer<FIRMWARE_GPUS>>(draw: &mut Draw, order: O, placer: P) {
    let shape = (1 + draw.below(3) as u16, 1 + draw.below(4) as u16, 8);
    let topology = match Topology::uniform(shape.0, shape.1, shape.2, LinkWeights::PROXIMITY_DRL) {
        Ok(t) => t,
        Err(_) => semihosting::process::exit(2),
    };
    let min_run = DurationMs(draw.next());
    let config = SchedulerConfig::for_order(&order).with_min_run(min_run);
    let mut scheduler: Scheduler<O, P, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG> =
        Scheduler::with_config(topology, order, placer, config);
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    let mut now = 0u64;
    for _ in 0..10_000 {
        now = now.saturating_add(draw.below(600_000));
        out.clear();
        let _ = scheduler.handle(TimeMs(now), draw.event(), &mut out);
    }
}

/// Drives every placer this build enables under `$order` (an expression built anew per
/// placer).
macro_rules! placers {
    ($draw:expr, $order:expr) => {{
        #[cfg(feature = "first-fit")]
        drive($draw, $order, gantry_core::FirstFit);
        #[cfg(feature = "best-fit")]
        drive($draw, $order, gantry_core::BestFit);
        #[cfg(feature = "random")]
        {
            let seed = $draw.next();
            drive($draw, $order, gantry_core::RandomPlacer::new(seed));
        }
        #[cfg(feature = "load-balance")]
        drive($draw, $order, gantry_core::LoadBalance);
        #[cfg(feature = "greedy")]
        drive($draw, $order, gantry_core::ProximityGreedy);
        #[cfg(feature = "optimal")]
        drive(
            $draw,
            $order,
            gantry_core::ExactOptimal::<FIRMWARE_GPUS>::default(),
        );
    }};
}

#[entry]
fn main() -> ! {
    let seed = u64::from(cortex_m::peripheral::SYST::get_current()) | 1;
    let draw = &mut Draw(seed);
    #[cfg(feature = "tias")]
    placers!(draw, gantry_core::Tias::default());
    #[cfg(feature = "las")]
    placers!(
        draw,
        gantry_core::Las::new(gantry_core::LasConfig::default())
    );
    #[cfg(feature = "fifo")]
    placers!(draw, gantry_core::Fifo);
    let _ = draw;
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
