//! The bad-input catalogue: one test per kind of bad input, each checking the typed error,
//! its message, and that nothing changed or was lost. A placer's pick outside the mask is
//! here too; the learned-policy cases — NaN/inf scores (`core/src/placement/scored.rs`,
//! `host/src/learn/scorer.rs`), missing / corrupt / wrong-shape ONNX files
//! (`host/src/learn/tract_model.rs::load_errors_are_typed`) — are tested beside the scorer
//! and the tract loader.

use gantry_core::dag::{Dag, DagError, TaskId};
use gantry_core::{
    DeadlineAdmission, Decision, DurationMs, Edf, Event, Fifo, FirstFit, GpuId, GpuSet, Job, JobId,
    JobOrder, JobSpec, JobState, LinkWeights, SchedError, Scheduler, SchedulerConfig, Tias, TimeMs,
    Topology, TopologyError,
};

const G: usize = 8;
type Core<O> = Scheduler<O, FirstFit, G, 4, 8>;
type Out = heapless::Vec<Decision<8>, 8>;

fn topology() -> Topology<G> {
    Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap()
}

fn core<O: JobOrder>(order: O) -> Core<O> {
    Scheduler::new(topology(), order, FirstFit)
}

type Snapshot = (Vec<Job>, Vec<Option<JobId>>, Vec<bool>, TimeMs);

fn snapshot<O: JobOrder>(s: &Core<O>) -> Snapshot {
    let gpus = (0..G as u16).map(GpuId);
    (
        s.jobs().copied().collect::<Vec<_>>(),
        gpus.clone().map(|g| s.gpu_owner(g)).collect(),
        gpus.map(|g| s.is_healthy(g)).collect(),
        s.now(),
    )
}

/// A core at t = 1000 with job 1 (2 GPUs) running.
fn busy() -> Core<Fifo> {
    let mut s = core(Fifo);
    s.handle(
        TimeMs(1000),
        Event::Submit(JobSpec::new(JobId(1), 2)),
        &mut Out::new(),
    )
    .unwrap();
    s
}

/// Asserts `event` at `now` fails with `want`, prints as `message`, and changes nothing.
fn refused<O: JobOrder>(s: &mut Core<O>, now: u64, event: Event, want: SchedError, message: &str) {
    let before = snapshot(s);
    let mut out = Out::new();
    let got = s.handle(TimeMs(now), event, &mut out);
    assert_eq!(got, Err(want));
    assert_eq!(want.to_string(), message);
    assert!(out.is_empty());
    assert_eq!(snapshot(s), before, "{event:?} changed the state");
}

fn with_deadline(id: u32, gpus: u16, deadline_ms: u64) -> JobSpec {
    JobSpec {
        deadline: Some(TimeMs(deadline_ms)),
        ..JobSpec::new(JobId(id), gpus)
    }
}

#[test]
fn deadline_already_past_at_submit() {
    let mut s = busy();
    let want = SchedError::DeadlineAlreadyPassed {
        job: JobId(2),
        deadline: TimeMs(900),
        now: TimeMs(1000),
    };
    refused(
        &mut s,
        1000,
        Event::Submit(with_deadline(2, 1, 900)),
        want,
        "job 2 has deadline 900 ms, not after its submission at 1000 ms",
    );
}

#[test]
fn deadline_earlier_than_any_possible_finish() {
    let spec = JobSpec {
        declared_length: Some(DurationMs(500)),
        ..with_deadline(2, 1, 1200)
    };
    // Refused at once where the box asks for admission control...
    let mut strict = Scheduler::with_config(
        topology(),
        Fifo,
        FirstFit,
        SchedulerConfig {
            deadline_admission: DeadlineAdmission::RefuseUnreachable,
            ..SchedulerConfig::for_order(&Fifo)
        },
    );
    strict
        .handle(TimeMs(1000), Event::Tick, &mut Out::new())
        .unwrap();
    let want = SchedError::DeadlineUnreachable {
        job: JobId(2),
        deadline: TimeMs(1200),
        earliest_finish: TimeMs(1500),
    };
    refused(
        &mut strict,
        1000,
        Event::Submit(spec),
        want,
        "job 2 has deadline 1200 ms but cannot finish before 1500 ms",
    );
    // ...accepted by default (information-agnostic: declared lengths are not trusted).
    let mut lenient = busy();
    assert!(
        lenient
            .handle(TimeMs(1000), Event::Submit(spec), &mut Out::new())
            .is_ok()
    );
}

/// A job with deadline `TimeMs::MAX` beside a job with a near deadline: both run, in
/// deadline order, with no overflow even at the end of time.
fn max_deadline_case<O: JobOrder>(order: O) {
    let mut s = core(order);
    let mut out = Out::new();
    let far = JobSpec {
        deadline: Some(TimeMs::MAX),
        ..JobSpec::new(JobId(1), 8)
    };
    s.handle(TimeMs(0), Event::Submit(far), &mut out).unwrap();
    s.handle(
        TimeMs(0),
        Event::Submit(with_deadline(2, 8, 10_000)),
        &mut out,
    )
    .unwrap();
    s.handle(TimeMs(u64::MAX - 1), Event::Tick, &mut out)
        .unwrap();
    s.handle(TimeMs(u64::MAX), Event::Finish(running(&s)), &mut out)
        .unwrap();
    s.handle(TimeMs(u64::MAX), Event::Finish(running(&s)), &mut out)
        .unwrap();
    assert!(s.jobs().is_empty());
    assert!(s.check_invariants().is_ok());
}

#[test]
fn deadline_at_the_maximum_time_neither_overflows_nor_starves() {
    max_deadline_case(Edf);
    max_deadline_case(Tias::default());
}

fn running<O: JobOrder>(s: &Core<O>) -> JobId {
    s.jobs()
        .find(|j| j.state() == JobState::Running)
        .map(Job::id)
        .unwrap()
}

#[test]
fn zero_gpu_job() {
    let mut s = busy();
    refused(
        &mut s,
        1000,
        Event::Submit(JobSpec::new(JobId(2), 0)),
        SchedError::ZeroGpuRequest(JobId(2)),
        "job 2 requests zero GPUs",
    );
}

#[test]
fn request_above_the_healthy_cluster() {
    let mut s = busy();
    s.handle(TimeMs(1000), Event::GpuDown(GpuId(7)), &mut Out::new())
        .unwrap();
    let want = SchedError::RequestExceedsCluster {
        job: JobId(2),
        requested: 8,
        healthy: 7,
    };
    refused(
        &mut s,
        1000,
        Event::Submit(JobSpec::new(JobId(2), 8)),
        want,
        "job 2 requests 8 GPUs but only 7 are healthy",
    );
}

#[test]
fn duplicate_job_id() {
    let mut s = busy();
    refused(
        &mut s,
        1000,
        Event::Submit(JobSpec::new(JobId(1), 1)),
        SchedError::DuplicateJob(JobId(1)),
        "duplicate job 1: already live",
    );
}

#[test]
fn finish_or_cancel_of_an_unknown_or_not_running_job() {
    let mut s = busy();
    s.handle(
        TimeMs(1000),
        Event::Submit(JobSpec::new(JobId(2), 8)),
        &mut Out::new(),
    )
    .unwrap();
    refused(
        &mut s,
        1000,
        Event::Finish(JobId(9)),
        SchedError::UnknownJob(JobId(9)),
        "unknown job 9",
    );
    refused(
        &mut s,
        1000,
        Event::Cancel(JobId(9)),
        SchedError::UnknownJob(JobId(9)),
        "unknown job 9",
    );
    // Job 2 waits (6 GPUs free): it cannot have finished.
    refused(
        &mut s,
        1000,
        Event::Finish(JobId(2)),
        SchedError::JobNotRunning(JobId(2)),
        "job 2 is not running",
    );
    // Finished jobs are gone: a second finish is unknown.
    s.handle(TimeMs(1001), Event::Finish(JobId(1)), &mut Out::new())
        .unwrap();
    s.handle(TimeMs(1002), Event::Finish(JobId(2)), &mut Out::new())
        .unwrap();
    refused(
        &mut s,
        1002,
        Event::Finish(JobId(1)),
        SchedError::UnknownJob(JobId(1)),
        "unknown job 1",
    );
}

#[test]
fn gpu_id_out_of_range() {
    let mut s = busy();
    refused(
        &mut s,
        1000,
        Event::GpuDown(GpuId(8)),
        SchedError::UnknownGpu(GpuId(8)),
        "gpu 8 is not in the topology",
    );
    refused(
        &mut s,
        1000,
        Event::GpuUp(GpuId(u16::MAX)),
        SchedError::UnknownGpu(GpuId(u16::MAX)),
        "gpu 65535 is not in the topology",
    );
}

#[test]
fn time_going_backwards() {
    let mut s = busy();
    let want = SchedError::TimeWentBackwards {
        now: TimeMs(999),
        last: TimeMs(1000),
    };
    refused(
        &mut s,
        999,
        Event::Tick,
        want,
        "time went backwards: now 999 ms < previous event 1000 ms",
    );
}

#[test]
fn job_table_filled_to_n_and_n_plus_one() {
    let mut s = core(Fifo);
    for id in 0..4 {
        s.handle(
            TimeMs(0),
            Event::Submit(JobSpec::new(JobId(id), 8)),
            &mut Out::new(),
        )
        .unwrap();
    }
    let fifth = JobSpec::new(JobId(4), 1);
    refused(
        &mut s,
        0,
        Event::Submit(fifth),
        SchedError::JobTableFull(fifth),
        "job table full: job 4 handed back",
    );
}

#[test]
fn decision_buffer_filled_to_n_and_n_plus_one() {
    let mut s: Scheduler<Fifo, FirstFit, G, 16, 8> = Scheduler::new(topology(), Fifo, FirstFit);
    let mut big: heapless::Vec<Decision<8>, 8> = heapless::Vec::new();
    s.handle(
        TimeMs(0),
        Event::Submit(JobSpec::new(JobId(0), 8)),
        &mut big,
    )
    .unwrap();
    for id in 1..=3 {
        s.handle(
            TimeMs(0),
            Event::Submit(JobSpec::new(JobId(id), 1)),
            &mut big,
        )
        .unwrap();
    }
    // Three starts pending, room for exactly two: the third waits for the next call.
    let mut two: heapless::Vec<Decision<8>, 2> = heapless::Vec::new();
    let outcome = s
        .handle(TimeMs(1), Event::Finish(JobId(0)), &mut two)
        .unwrap();
    assert!(outcome.more_pending && two.len() == 2);
    let mut rest: heapless::Vec<Decision<8>, 2> = heapless::Vec::new();
    let outcome = s.handle(TimeMs(1), Event::Tick, &mut rest).unwrap();
    assert!(!outcome.more_pending && rest.len() == 1);
    // A full buffer is refused outright and changes nothing.
    let mut none: heapless::Vec<Decision<8>, 0> = heapless::Vec::new();
    assert_eq!(
        s.handle(TimeMs(2), Event::Tick, &mut none),
        Err(SchedError::DecisionBufferFull)
    );
    assert_eq!(s.now(), TimeMs(1));
}

#[test]
fn gpu_set_and_topology_filled_to_n_and_n_plus_one() {
    let mut set = GpuSet::<2>::new();
    assert_eq!(set.insert(GpuId(0)), Ok(()));
    assert_eq!(set.insert(GpuId(1)), Ok(()));
    assert_eq!(
        set.insert(GpuId(2)),
        Err(GpuId(2)),
        "the third GPU comes back"
    );
    assert_eq!(set.len(), 2);
    let mut topo = Topology::<4>::new(LinkWeights::PROXIMITY_DRL);
    topo.add_rack().unwrap();
    assert!(topo.add_machine(4, 1000).is_ok());
    assert_eq!(
        topo.add_machine(1, 1000),
        Err(TopologyError::TooManyGpus { capacity: 4 })
    );
    assert_eq!(topo.gpu_count(), 4);
}

#[test]
fn dag_tables_filled_to_n_and_n_plus_one() {
    let mut dag: Dag<2, 1> = Dag::new();
    let a = dag.add_task(1.0).unwrap();
    let b = dag.add_task(2.0).unwrap();
    assert!(
        matches!(dag.add_task(3.0), Err(DagError::TaskCapacityFull { work_ms, capacity: 2 }) if work_ms == 3.0)
    );
    dag.add_edge(a, b, 0.5).unwrap();
    match dag.add_edge(b, a, 0.25) {
        Err(DagError::EdgeCapacityFull { edge, capacity: 1 }) => {
            assert_eq!((edge.from, edge.to), (b, a))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((dag.task_count(), dag.edge_count()), (2, 1));
}

#[test]
fn dag_with_a_cycle_a_self_edge_or_fan_in_above_capacity() {
    let mut dag: Dag<4, 8> = Dag::new();
    let t: Vec<TaskId> = (0..3).map(|_| dag.add_task(1.0).unwrap()).collect();
    assert_eq!(dag.add_edge(t[1], t[1], 0.0), Err(DagError::SelfEdge(t[1])));
    assert_eq!(
        dag.add_edge(t[0], TaskId(9), 0.0),
        Err(DagError::UnknownTask(TaskId(9)))
    );
    dag.add_edge(t[0], t[1], 0.0).unwrap();
    dag.add_edge(t[1], t[2], 0.0).unwrap();
    dag.add_edge(t[2], t[0], 0.0).unwrap();
    assert!(matches!(dag.seal(), Err(DagError::Cycle(_))));
    let mut narrow: Dag<4, 8> = Dag::new();
    let u: Vec<TaskId> = (0..3).map(|_| narrow.add_task(1.0).unwrap()).collect();
    narrow.set_max_fan_in(1);
    narrow.add_edge(u[0], u[2], 0.0).unwrap();
    assert!(matches!(
        narrow.add_edge(u[1], u[2], 0.0),
        Err(DagError::FanInAboveCapacity { max_fan_in: 1, .. })
    ));
    assert_eq!(narrow.edge_count(), 1);
}

#[test]
fn malformed_trace_lines_name_file_line_and_field() {
    use gantry::trace::{TraceFormat, philly};
    let header = "timestamp,duration,num_gpus,gpu_time,cluster\n";
    let cases = [
        (
            "2017-10-09 07:01:55,12\n",
            "f.csv:2: num_gpus: missing column",
        ),
        (
            "2017-10-09 07:01:55,twelve,1,1,a\n",
            "f.csv:2: duration: \"twelve\" is not a number",
        ),
        (
            "2017-10-09 07:01:55,-12,1,1,a\n",
            "f.csv:2: duration: \"-12\" is negative",
        ),
    ];
    for (row, want) in cases {
        let err = philly::parse(&format!("{header}{row}"), "f.csv", None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, want);
    }
    // The same shape of message from every other format, through the one dispatcher.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let tiresias = dir.join("t.csv");
    std::fs::write(&tiresias, "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,10,resnet50,-10,0\n").unwrap();
    let err = gantry::trace::load(&tiresias, TraceFormat::Tiresias, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("t.csv:2: duration: \"-10\" is negative"),
        "{err}"
    );
}

/// A placer that always answers a GPU it may not take (busy or out of range).
struct Rogue;

impl gantry_core::Placer<G> for Rogue {
    fn name(&self) -> &'static str {
        "rogue"
    }
    fn pick(&mut self, view: &gantry_core::PlacementView<'_, G>) -> Option<GpuId> {
        // Already picked for this job, else far outside the topology.
        view.picked.first().copied().or(Some(GpuId(999)))
    }
}

#[test]
fn a_placer_pick_outside_the_mask_is_replaced_and_counted() {
    let mut s: Scheduler<Fifo, Rogue, G, 4, 8> = Scheduler::new(topology(), Fifo, Rogue);
    let mut out = Out::new();
    s.handle(
        TimeMs(0),
        Event::Submit(JobSpec::new(JobId(1), 3)),
        &mut out,
    )
    .unwrap();
    let Decision::Start { gpus, .. } = &out[0] else {
        panic!("{out:?}")
    };
    // Every pick was refused and replaced by the lowest usable GPU: no GPU twice.
    assert_eq!(gpus.as_slice(), [GpuId(0), GpuId(1), GpuId(2)]);
    assert_eq!(s.placer_faults(), 3);
    assert!(s.check_invariants().is_ok());
}
