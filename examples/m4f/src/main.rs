//! gantry-sched-core on a Cortex-M4F: the scheduler lives in a `static` (built in place, no
//! stack copy of its 32 KB), events go in with the time in milliseconds, decisions come out
//! over semihosting. It submits three jobs on a 1 × 2 × 4-GPU cluster, fails a GPU, follows
//! the order's review times with ticks, checkpoints and restores the scheduler as after a
//! power cycle, and goes on. The same scenario as `examples/c-hosted`, so the firmware
//! check compares the two outputs line for line (after the first).
//!
//! ```text
//! cargo run --release     # under qemu-system-arm (see .cargo/config.toml)
//! ```
#![no_std]
#![no_main]

use core::mem::MaybeUninit;
use cortex_m_rt::entry;
use gantry_core::wire::{FIRMWARE_GPUS, FIRMWARE_JOBS};
use gantry_core::{
    BestFit, Decision, Error, Event, FirmwareDecisions, FirmwareScheduler, GpuId, JobId, JobOrder,
    JobSpec, LinkWeights, MAX_SNAPSHOT_BYTES, Placer, SNAPSHOT_VERSION, SchedulerConfig, Tias,
    TimeMs, Topology,
};
use semihosting::{print, println};

/// The reference firmware's capacities: 64 GPUs, 256 live jobs, gangs of up to 8 GPUs.
type Sched = FirmwareScheduler<Tias, BestFit>;

/// The scheduler's storage, the restore target's and the checkpoint buffer: statics (in
/// `.bss`), handed out once each as `&'static mut` without `unsafe` in this crate.
fn storage() -> Option<(
    &'static mut MaybeUninit<Sched>,
    &'static mut MaybeUninit<Sched>,
    &'static mut [u8; MAX_SNAPSHOT_BYTES],
)> {
    Some((
        cortex_m::singleton!(SCHEDULER: MaybeUninit<Sched> = MaybeUninit::uninit())?,
        cortex_m::singleton!(SCRATCH: MaybeUninit<Sched> = MaybeUninit::uninit())?,
        cortex_m::singleton!(SNAPSHOT: [u8; MAX_SNAPSHOT_BYTES] = [0; MAX_SNAPSHOT_BYTES])?,
    ))
}

/// Builds the scheduler in `slot`: TIAS and best-fit on 1 rack × 2 machines × 4 GPUs.
fn init(slot: &mut MaybeUninit<Sched>) -> Result<&mut Sched, Error> {
    let topology = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL)?;
    let order = Tias::default();
    let config = SchedulerConfig::for_order(&order);
    Ok(Sched::init_in_place(slot, topology, order, BestFit, config))
}

/// Hands one event to the scheduler at `now` and prints its decisions.
fn handle(s: &mut Sched, now: u64, event: Event) -> Result<(), Error> {
    let mut out = FirmwareDecisions::new();
    s.handle(TimeMs(now), event, &mut out)?;
    for d in &out {
        match d {
            Decision::Start { job, gpus } => {
                print!("{now} ms: start job {} on", job.0);
                for g in gpus.as_slice() {
                    print!(" {}", g.0);
                }
                println!();
            }
            Decision::Preempt { job, .. } => println!("{now} ms: preempt job {}", job.0),
            Decision::Reject { job, .. } => println!("{now} ms: reject job {}", job.0),
        }
    }
    Ok(())
}

fn run(
    slot: &mut MaybeUninit<Sched>,
    scratch_slot: &mut MaybeUninit<Sched>,
    snapshot: &mut [u8],
) -> Result<(), Error> {
    let s = init(slot)?;
    println!(
        "gantry-sched-core: {} + {}, {} GPUs, {} jobs, snapshot v{}",
        s.order().name(),
        Placer::<FIRMWARE_GPUS>::name(s.placer()),
        FIRMWARE_GPUS,
        FIRMWARE_JOBS,
        SNAPSHOT_VERSION
    );

    // Three jobs: 4, 2 and 4 GPUs on 8; the third waits.
    for id in 1..=3 {
        let gpus = if id == 2 { 2 } else { 4 };
        handle(s, 0, Event::Submit(JobSpec::new(JobId(id), gpus)))?;
    }
    // GPU 0 fails under job 1.
    let mut now = 60_000;
    handle(s, now, Event::GpuDown(GpuId(0)))?;
    // Follow the order's review times for a while: the core never reads a clock.
    for _ in 0..5 {
        let Some(review) = s.next_review() else { break };
        now = review.0;
        handle(s, now, Event::Tick)?;
    }

    // Checkpoint, then restore as after a power cycle: a fresh scheduler in the same
    // storage, the snapshot decoded into the scratch one and swapped in once checked.
    let frame = s.snapshot(snapshot)?;
    let len = frame.len();
    let s = init(slot)?;
    let scratch = init(scratch_slot)?;
    s.restore_in_place(frame, scratch)?;
    println!("restored {len} bytes at {} ms", s.now().0);

    // After the restore: job 2 finishes and GPU 0 is repaired, so the waiting job starts.
    handle(s, now + 1000, Event::Finish(JobId(2)))?;
    handle(s, now + 2000, Event::GpuUp(GpuId(0)))
}

#[entry]
fn main() -> ! {
    let Some((slot, scratch, snapshot)) = storage() else {
        semihosting::process::exit(2)
    };
    match run(slot, scratch, snapshot) {
        Ok(()) => semihosting::process::exit(0),
        Err(e) => {
            semihosting::eprintln!("error: {e}");
            semihosting::process::exit(1)
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::process::exit(101)
}
