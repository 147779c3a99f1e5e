//! gantry-core on a Cortex-M4F (QEMU `mps2-an386`): reads a frame stream of events from a
//! host file over semihosting, answers every frame as the wire protocol says
//! (`gantry_core::wire`), writes the answers to another host file, and prints what it
//! measured about itself as one JSON line.
//!
//! ```text
//! qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -icount shift=0 \
//!     -semihosting-config enable=on,target=native,arg=fw,arg=EVENTS,arg=ANSWERS -kernel ELF
//! ```
//!
//! Which job orders and placers it runs is chosen by cargo features (`tias`, `las`, `fifo`;
//! `best-fit`, `optimal`, …); with several, the stream's header picks the pair. No
//! allocator; the scheduler lives in `run`'s stack frame (one pair at a time: with several
//! pairs a `static` per pair would multiply the RAM), built in place by
//! `Scheduler::init_in_place` with the header's minimum run quantum. With the `checkpoint`
//! feature it also snapshots and restores its scheduler every 1,000 events
//! (`Scheduler::restore_in_place`, into a second scheduler). `memory.x` is a realistic part
//! (128 KiB of RAM, 512 KiB of flash): the firmware reports its static RAM and its deepest
//! stack, and the check fails if they do not fit.
#![no_std]
#![no_main]

mod host_io;
mod measure;
mod report;
mod vectors;

use core::ffi::CStr;
use core::mem::MaybeUninit;
use cortex_m_rt::entry;
use gantry_core::wire::{
    self, Capacities, FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS, Fault,
    FrameReader, FrameWriter, HeaderField, Inbound, OutboundRef, StreamHeader,
};
use gantry_core::{
    Decision, DurationMs, Event, HandleOutcome, JobOrder, LinkWeights, Placer, SchedError,
    Scheduler, SchedulerConfig, TimeMs, Topology,
};
use host_io::HostFile;
use measure::{Clock, paint, paint_free_ram, stack_depth, stack_pointer};
use report::JsonLine;

type Sched<O, P> = Scheduler<O, P, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;

/// A job order this firmware runs (serialisable, for the `checkpoint` feature's snapshots).
trait Order: JobOrder + serde::Serialize + serde::de::DeserializeOwned + Clone {}
impl<O: JobOrder + serde::Serialize + serde::de::DeserializeOwned + Clone> Order for O {}
/// A placer this firmware runs (serialisable, as [`Order`]).
trait Place: Placer<FIRMWARE_GPUS> + serde::Serialize + serde::de::DeserializeOwned + Clone {}
impl<P: Placer<FIRMWARE_GPUS> + serde::Serialize + serde::de::DeserializeOwned + Clone> Place
    for P
{
}
type Out = heapless::Vec<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>;
/// The longest inbound frame accepted (a header is about 60 bytes, an event at most 40).
const IN_FRAME_BYTES: usize = 256;
const OUT_FRAME_BYTES: usize = wire::max_frame_bytes(wire::max_outcome_message_bytes(
    FIRMWARE_GANG,
    FIRMWARE_DECISIONS,
));
type Reader = FrameReader<HostFile, IN_FRAME_BYTES>;
type Writer = FrameWriter<HostFile, OUT_FRAME_BYTES>;

/// With the `checkpoint` feature: every this many events the firmware snapshots its
/// scheduler and restores it from the snapshot alone (and the topology), alternately as a
/// new scheduler that replaces it and in place, and continues; the answers must stay
/// byte-identical to x86's uninterrupted run.
#[cfg(feature = "checkpoint")]
const CHECKPOINT_EVERY: u64 = 1_000;
/// Free stack painted before each snapshot and each restore (their budget is 4 KiB).
#[cfg(feature = "checkpoint")]
const CHECKPOINT_PROBE_BYTES: usize = 8 * 1024;
/// The snapshot buffer: any firmware scheduler's snapshot fits.
#[cfg(feature = "checkpoint")]
const SNAPSHOT_BUFFER_BYTES: usize = gantry_core::MAX_SNAPSHOT_BYTES;

/// Free stack painted before building a scheduler (its budget is 4 KiB).
const CONSTRUCT_PROBE_BYTES: usize = 8 * 1024;
/// Free stack painted before each `handle` call (its budget is 4 KiB).
const HANDLE_PROBE_BYTES: usize = 8 * 1024;

/// What the run measured.
#[derive(Default)]
struct Stats {
    order: &'static str,
    placer: &'static str,
    frames: u32,
    faults: u32,
    events: u64,
    instructions_sum: u64,
    instructions_max: u64,
    /// Which event cost `instructions_max`: its index among the events handled (from 0),
    /// its frame number in the stream, its kind, and the instant it was handled.
    worst_event: u64,
    worst_frame: u32,
    worst_kind: &'static str,
    worst_now_ms: u64,
    /// Decisions that event produced.
    worst_decisions: usize,
    handle_stack_bytes: usize,
    construct_stack_bytes: usize,
    construct_instructions: u64,
    sched_bytes: usize,
    io_error: bool,
    /// Snapshot-and-restore cycles done (`checkpoint` feature).
    restores: u32,
    /// Largest snapshot frame written.
    snapshot_bytes: usize,
    /// Most instructions one snapshot took, and one restore.
    snapshot_instructions: u64,
    restore_instructions: u64,
    /// Most stack one `restore_in_place` used beyond its caller's frame.
    restore_stack_bytes: usize,
    /// Most stack one `snapshot` used beyond its caller's frame.
    snapshot_stack_bytes: usize,
    /// The deepest stack seen: from the top of RAM down to the deepest word written, over
    /// every measured call and the painted free RAM.
    stack_peak_bytes: usize,
    /// A snapshot was refused or failed: the run is not valid.
    checkpoint_error: bool,
}

/// Everything `run` needs besides the scheduler.
struct Io<'a> {
    reader: &'a mut Reader,
    writer: &'a mut Writer,
    clock: &'a Clock,
    stats: &'a mut Stats,
}

impl Io<'_> {
    fn send(&mut self, message: &OutboundRef<'_, FIRMWARE_GANG>) {
        if self.writer.send(message).is_err() {
            self.stats.io_error = true;
        }
    }

    fn fault(&mut self, frame: u32, fault: Fault) {
        self.stats.faults += 1;
        self.send(&OutboundRef::Fault { frame, fault });
    }

    /// The next frame, or `None` at the end of the stream (or on a read error).
    fn next(&mut self) -> Option<wire::Received<Inbound>> {
        match self.reader.next_frame::<Inbound>() {
            Ok(Some(r)) => {
                self.stats.frames += 1;
                Some(r)
            }
            Ok(None) => None,
            Err(_) => {
                self.stats.io_error = true;
                None
            }
        }
    }

    /// Answers frames without a stream (faults) until the next `Hello`.
    fn until_hello(&mut self) -> Option<(u32, StreamHeader)> {
        while let Some(r) = self.next() {
            match r.message {
                Ok(Inbound::Hello(header)) => return Some((r.frame, header)),
                Ok(Inbound::Event { .. }) => self.fault(r.frame, Fault::NoStream),
                Err(e) => self.fault(r.frame, Fault::Frame(e)),
            }
        }
        None
    }
}

/// Builds a scheduler in `slot` (in place: nothing of its size on the stack).
#[inline(never)]
fn build<O: JobOrder, P: Placer<FIRMWARE_GPUS>>(
    slot: &mut MaybeUninit<Sched<O, P>>,
    topology: Topology<FIRMWARE_GPUS>,
    order: O,
    placer: P,
    min_run: DurationMs,
) -> &mut Sched<O, P> {
    let config = SchedulerConfig::for_order(&order).with_min_run(min_run);
    Scheduler::init_in_place(slot, topology, order, placer, config)
}

#[inline(never)]
fn handle_once<O: JobOrder, P: Placer<FIRMWARE_GPUS>>(
    scheduler: &mut Sched<O, P>,
    now: TimeMs,
    event: Event,
    out: &mut Out,
) -> Result<HandleOutcome, SchedError> {
    scheduler.handle(now, event, out)
}

/// Snapshots `scheduler`, replaces it by the scheduler restored from the snapshot alone (in
/// place, through `scratch`), and records what it took.
#[cfg(feature = "checkpoint")]
#[inline(never)]
fn checkpoint<O, P>(
    scheduler: &mut Sched<O, P>,
    scratch: &mut Sched<O, P>,
    clock: &Clock,
    stats: &mut Stats,
) where
    O: JobOrder + serde::Serialize + serde::de::DeserializeOwned,
    P: Placer<FIRMWARE_GPUS> + serde::Serialize + serde::de::DeserializeOwned,
{
    let mut buf = [0u8; SNAPSHOT_BUFFER_BYTES];
    let sp = stack_pointer();
    let painted = paint(CHECKPOINT_PROBE_BYTES);
    let start = clock.now();
    let written = snapshot_once(scheduler, &mut buf);
    let saved = clock.now();
    let used = painted.used_below(sp);
    stats.snapshot_stack_bytes = stats.snapshot_stack_bytes.max(used);
    stats.stack_peak_bytes = stats.stack_peak_bytes.max(stack_depth(sp) + used);
    let Some(len) = written else {
        stats.checkpoint_error = true;
        return;
    };
    stats.snapshot_bytes = stats.snapshot_bytes.max(len);
    let Some(frame) = buf.get_mut(..len) else {
        stats.checkpoint_error = true;
        return;
    };
    let painted = paint(CHECKPOINT_PROBE_BYTES);
    let middle = clock.now();
    let restored = restore_in_place_once(scheduler, scratch, frame);
    let end = clock.now();
    let used = painted.used_below(sp);
    stats.restore_stack_bytes = stats.restore_stack_bytes.max(used);
    stats.stack_peak_bytes = stats.stack_peak_bytes.max(stack_depth(sp) + used);
    if restored.is_err() {
        stats.checkpoint_error = true;
    }
    stats.restores += 1;
    let (save, load) = (
        Clock::instructions(start, saved),
        Clock::instructions(middle, end),
    );
    stats.snapshot_instructions = stats.snapshot_instructions.max(save);
    stats.restore_instructions = stats.restore_instructions.max(load);
}

/// `Scheduler::snapshot` into `buf`, kept out of line so its stack can be measured; the
/// frame's length, or `None` if it was refused.
#[cfg(feature = "checkpoint")]
#[inline(never)]
fn snapshot_once<O, P>(scheduler: &Sched<O, P>, buf: &mut [u8]) -> Option<usize>
where
    O: JobOrder + serde::Serialize,
    P: Placer<FIRMWARE_GPUS> + serde::Serialize,
{
    scheduler.snapshot(buf).ok().map(|frame| frame.len())
}

/// `Scheduler::restore_in_place`, kept out of line so its stack can be measured.
#[cfg(feature = "checkpoint")]
#[inline(never)]
fn restore_in_place_once<O, P>(
    scheduler: &mut Sched<O, P>,
    scratch: &mut Sched<O, P>,
    frame: &mut [u8],
) -> Result<(), gantry_core::SnapshotError>
where
    O: JobOrder + serde::de::DeserializeOwned,
    P: Placer<FIRMWARE_GPUS> + serde::de::DeserializeOwned,
{
    scheduler.restore_in_place(frame, scratch)
}

/// The event's kind, as the worst-event report names it.
fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::Submit(_) => "submit",
        Event::Finish(_) => "finish",
        Event::Cancel(_) => "cancel",
        Event::GpuDown(_) => "gpu-down",
        Event::GpuUp(_) => "gpu-up",
        Event::Tick => "tick",
    }
}

/// Serves one stream of the pair `O`, `P` (the header at `frame` named it) until the
/// stream ends or another `Hello` arrives, which it returns.
fn run<O: Order, P: Place>(
    frame: u32,
    header: &StreamHeader,
    order: O,
    placer: P,
    io: &mut Io<'_>,
) -> Option<(u32, StreamHeader)> {
    let c = header.cluster;
    let weights = LinkWeights::PROXIMITY_DRL;
    let topology =
        match Topology::uniform(c.racks, c.machines_per_rack, c.gpus_per_machine, weights) {
            Ok(t) => t,
            Err(e) => {
                io.fault(frame, Fault::Topology(e));
                return io.until_hello();
            }
        };
    // The restore target of `restore_in_place`: a snapshot is decoded and checked there.
    #[cfg(feature = "checkpoint")]
    let mut scratch_slot = MaybeUninit::uninit();
    #[cfg(feature = "checkpoint")]
    let scratch = build(
        &mut scratch_slot,
        topology.clone(),
        order.clone(),
        placer.clone(),
        header.min_run,
    );
    io.stats.order = order.name();
    io.stats.placer = placer.name();
    io.stats.sched_bytes = core::mem::size_of::<Sched<O, P>>();
    let sp = stack_pointer();
    let painted = paint(CONSTRUCT_PROBE_BYTES);
    let start = io.clock.now();
    let mut slot = MaybeUninit::uninit();
    let scheduler = build(&mut slot, topology, order, placer, header.min_run);
    let end = io.clock.now();
    let used = painted.used_below(sp);
    io.stats.construct_stack_bytes = io.stats.construct_stack_bytes.max(used);
    io.stats.stack_peak_bytes = io.stats.stack_peak_bytes.max(stack_depth(sp) + used);
    io.stats.construct_instructions = Clock::instructions(start, end);
    io.send(&OutboundRef::Ready { frame });

    let mut out = Out::new();
    while let Some(r) = io.next() {
        match r.message {
            Ok(Inbound::Hello(header)) => return Some((r.frame, header)),
            Err(e) => io.fault(r.frame, Fault::Frame(e)),
            Ok(Inbound::Event { now, event }) => {
                out.clear();
                let sp = stack_pointer();
                let painted = paint(HANDLE_PROBE_BYTES);
                let start = io.clock.now();
                let result = handle_once(scheduler, now, event, &mut out);
                let end = io.clock.now();
                let stats = &mut *io.stats;
                let used = painted.used_below(sp);
                stats.handle_stack_bytes = stats.handle_stack_bytes.max(used);
                stats.stack_peak_bytes = stats.stack_peak_bytes.max(stack_depth(sp) + used);
                let instructions = Clock::instructions(start, end);
                if instructions > stats.instructions_max {
                    stats.instructions_max = instructions;
                    stats.worst_event = stats.events;
                    stats.worst_frame = r.frame;
                    stats.worst_kind = event_kind(&event);
                    stats.worst_now_ms = now.0;
                    stats.worst_decisions = out.len();
                }
                stats.events += 1;
                stats.instructions_sum += instructions;
                io.send(&OutboundRef::Outcome {
                    frame: r.frame,
                    error: result.err(),
                    decisions: &out,
                });
                #[cfg(feature = "checkpoint")]
                if io.stats.events.is_multiple_of(CHECKPOINT_EVERY) {
                    checkpoint(scheduler, scratch, io.clock, io.stats);
                }
            }
        }
    }
    None
}

/// Runs the stream a header asks for, if this build has its pair; returns the next header.
fn dispatch(frame: u32, header: &StreamHeader, io: &mut Io<'_>) -> Option<(u32, StreamHeader)> {
    let weights = LinkWeights::PROXIMITY_DRL;
    let (order, placer) = (header.order.as_str(), header.placer.as_str());
    let field = header.mismatch(&Capacities::FIRMWARE, weights.integer(), order, placer);
    if let Some(field) = field {
        io.fault(frame, Fault::Mismatch(field));
        return io.until_hello();
    }
    let seed = header.seed;
    // One arm per (order, placer) pair this build has.
    macro_rules! placers {
        ($order:expr) => {{
            #[cfg(feature = "first-fit")]
            if placer == "first-fit" {
                return run(frame, header, $order, gantry_core::FirstFit, io);
            }
            #[cfg(feature = "best-fit")]
            if placer == "best-fit" {
                return run(frame, header, $order, gantry_core::BestFit, io);
            }
            #[cfg(feature = "random")]
            if placer == "random" {
                return run(
                    frame,
                    header,
                    $order,
                    gantry_core::RandomPlacer::new(seed),
                    io,
                );
            }
            #[cfg(feature = "load-balance")]
            if placer == "load-balance" {
                return run(frame, header, $order, gantry_core::LoadBalance, io);
            }
            #[cfg(feature = "greedy")]
            if placer == "greedy" {
                return run(frame, header, $order, gantry_core::ProximityGreedy, io);
            }
            #[cfg(feature = "optimal")]
            if placer == "optimal" {
                let exact = gantry_core::ExactOptimal::<FIRMWARE_GPUS>::default();
                return run(frame, header, $order, exact, io);
            }
            io.fault(frame, Fault::Mismatch(HeaderField::Placer));
            return io.until_hello();
        }};
    }
    #[cfg(feature = "tias")]
    if order == "tias" {
        placers!(gantry_core::Tias::default());
    }
    #[cfg(feature = "las")]
    if order == "las" {
        placers!(gantry_core::Las::new(gantry_core::LasConfig::default()));
    }
    #[cfg(feature = "fifo")]
    if order == "fifo" {
        placers!(gantry_core::Fifo);
    }
    let _ = seed;
    io.fault(frame, Fault::Mismatch(HeaderField::Order));
    io.until_hello()
}

/// Copies `arg` into `buf` with a terminating nul.
fn c_path<'b>(arg: &str, buf: &'b mut [u8; 256]) -> Option<&'b CStr> {
    let bytes = arg.as_bytes();
    let n = bytes.len();
    buf.get_mut(..n)?.copy_from_slice(bytes);
    *buf.get_mut(n)? = 0;
    CStr::from_bytes_with_nul(buf.get(..=n)?).ok()
}

fn open_files() -> Option<(HostFile, HostFile)> {
    let args = semihosting::experimental::env::args::<512>().ok()?;
    let mut it = (&args).filter_map(Result::ok);
    let _program = it.next()?;
    let (events, answers) = (it.next()?, it.next()?);
    let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
    let input = semihosting::fs::File::open(c_path(events, &mut a)?).ok()?;
    let output = semihosting::fs::File::create(c_path(answers, &mut b)?).ok()?;
    Some((HostFile(input), HostFile(output)))
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        semihosting::process::exit(3)
    };
    let clock = Clock::start(peripherals.SYST);
    let free_ram = paint_free_ram();
    let Some((input, output)) = open_files() else {
        report::stderr(&[b"usage: -semihosting-config ...,arg=fw,arg=EVENTS,arg=ANSWERS\n"]);
        semihosting::process::exit(2)
    };
    let mut reader = Reader::new(input);
    let mut writer = Writer::new(output);
    let mut stats = Stats::default();
    let mut io = Io {
        reader: &mut reader,
        writer: &mut writer,
        clock: &clock,
        stats: &mut stats,
    };
    let mut next = io.until_hello();
    while let Some((frame, header)) = next {
        next = dispatch(frame, &header, &mut io);
    }
    stats.stack_peak_bytes = stats.stack_peak_bytes.max(free_ram.deepest_use());
    let reported = report(&stats, free_ram.static_bytes());
    let failed = stats.io_error || stats.checkpoint_error || !reported;
    semihosting::process::exit(if failed { 1 } else { 0 })
}

/// Prints what the firmware measured as one JSON line; false when the host did not get it.
fn report(s: &Stats, ram_static_bytes: usize) -> bool {
    let Some(mut line) = JsonLine::start() else {
        return false;
    };
    let avg = s.instructions_sum.checked_div(s.events).unwrap_or(0);
    let size = |bytes: usize| bytes as u64;
    line.text("order", s.order)
        .text("placer", s.placer)
        .number("frames", s.frames.into())
        .number("faults", s.faults.into())
        .number("events", s.events)
        .number("insn_avg", avg)
        .number("insn_max", s.instructions_max)
        .number("insn_max_event", s.worst_event)
        .number("insn_max_frame", s.worst_frame.into())
        .text("insn_max_kind", s.worst_kind)
        .number("insn_max_now_ms", s.worst_now_ms)
        .number("insn_max_decisions", size(s.worst_decisions))
        .number("handle_stack_bytes", size(s.handle_stack_bytes))
        .number("construct_stack_bytes", size(s.construct_stack_bytes))
        .number("construct_insn", s.construct_instructions)
        .number("sched_bytes", size(s.sched_bytes))
        .number("job_bytes", size(core::mem::size_of::<gantry_core::Job>()))
        .number("event_bytes", size(core::mem::size_of::<Event>()))
        .number(
            "decision_bytes",
            size(core::mem::size_of::<Decision<FIRMWARE_GANG>>()),
        )
        .number("restores", s.restores.into())
        .number("snapshot_bytes", size(s.snapshot_bytes))
        .number("snapshot_insn", s.snapshot_instructions)
        .number("restore_insn", s.restore_instructions)
        .number("restore_stack_bytes", size(s.restore_stack_bytes))
        .number("snapshot_stack_bytes", size(s.snapshot_stack_bytes))
        .number("stack_peak_bytes", size(s.stack_peak_bytes))
        .number("ram_static_bytes", size(ram_static_bytes))
        .flag("checkpoint_error", s.checkpoint_error);
    line.end()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    // The location only: the message would need `core::fmt` (see `report`).
    let (file, line) = info
        .location()
        .map_or(("?", 0), |at| (at.file(), at.line()));
    let mut digits = itoa::Buffer::new();
    let line = digits.format(line).as_bytes();
    report::stderr(&[b"firmware panicked at ", file.as_bytes(), b":", line, b"\n"]);
    semihosting::process::exit(101)
}
