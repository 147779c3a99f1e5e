//! A minimal trace replay to sanity-check the job orders on real deadline traces (Chronus
//! MIX1, ElasticFlow ITP). Not the host simulator: speed 1, no placement effects, free
//! preemption. Ignored by default (slow in debug); run with
//! `cargo test -p gantry-sched-core --release --test order_compare -- --ignored --nocapture`.
//! Skips with a note when `../shared/traces` is missing.

use gantry_core::{
    Decision, DurationMs, Edf, Event, Fifo, FirstFit, JobId, JobOrder, JobSpec, JobState, Las,
    LinkWeights, Scheduler, Srtf, Tias, TiasConfig, TimeMs, Topology,
};
use std::path::Path;

#[derive(Clone, Copy)]
struct TraceJob {
    submit_ms: u64,
    gpus: u16,
    duration_ms: u64,
    deadline_ms: Option<u64>,
}

const G: usize = 64;
const J: usize = 2048;
const GANG: usize = 64;

fn load_chronus(path: &Path, limit: usize, stride: usize) -> Vec<TraceJob> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut jobs: Vec<TraceJob> = text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let gpus: u16 = f[2].parse().ok()?;
            if gpus == 0 {
                return None;
            }
            let submit = f[3].parse::<u64>().ok()? * 60_000;
            let duration = f[6].parse::<u64>().ok()?.max(1) * 60_000;
            let expect: u64 = f[8].split('-').next_back()?.parse().ok()?;
            let deadline = (f[10] == "0").then_some(submit + expect * 60_000);
            Some(TraceJob {
                submit_ms: submit,
                gpus,
                duration_ms: duration,
                deadline_ms: deadline,
            })
        })
        .collect();
    jobs.sort_by_key(|j| j.submit_ms);
    let mut jobs: Vec<TraceJob> = jobs.into_iter().step_by(stride).collect();
    jobs.truncate(limit);
    jobs
}

fn load_elasticflow(path: &Path, limit: usize, deadline_every: usize) -> Vec<TraceJob> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut jobs: Vec<TraceJob> = text
        .lines()
        .skip(1)
        .enumerate()
        .filter_map(|(i, line)| {
            let f: Vec<&str> = line.split(',').collect();
            let gpus: u16 = f[6].parse().ok()?;
            let submit = f[1].parse::<u64>().ok()? * 1000;
            let deadline = f[4].parse::<u64>().ok()? * 1000;
            let duration = f[7].parse::<u64>().ok()?.max(1) * 1000;
            let deadline = (i % deadline_every == 0 && deadline > submit).then_some(deadline);
            Some(TraceJob {
                submit_ms: submit,
                gpus: gpus.min(G as u16),
                duration_ms: duration,
                deadline_ms: deadline,
            })
        })
        .collect();
    jobs.sort_by_key(|j| j.submit_ms);
    jobs.truncate(limit);
    let t0 = jobs.first().map_or(0, |j| j.submit_ms);
    for j in jobs.iter_mut() {
        j.submit_ms -= t0;
        j.deadline_ms = j.deadline_ms.map(|d| d - t0);
    }
    jobs
}

struct Outcome {
    miss_rate: f64,
    avg_jct_nd_s: f64,
    avg_jct_s: f64,
    preemptions: u64,
}

fn replay<O: JobOrder>(
    order: O,
    jobs: &[TraceJob],
    gpus_per_machine: u16,
    machines: u16,
) -> Outcome {
    let topo =
        Topology::uniform(1, machines, gpus_per_machine, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut s: Box<Scheduler<O, FirstFit, G, J, GANG>> =
        Box::new(Scheduler::new(topo, order, FirstFit));
    let mut out: heapless::Vec<Decision<GANG>, 256> = heapless::Vec::new();
    let mut finish: Vec<Option<u64>> = vec![None; jobs.len()];
    let mut rejected = vec![false; jobs.len()];
    let mut next = 0usize;
    let mut now;
    let mut preemptions = 0u64;
    let mut guard = 0u64;
    loop {
        guard += 1;
        assert!(guard < 10_000_000, "no progress");
        let next_arrival = jobs.get(next).map(|j| j.submit_ms);
        let next_finish = s
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .map(|j| {
                s.now().0
                    + jobs[j.id().0 as usize]
                        .duration_ms
                        .saturating_sub(j.executed_at(s.now()).0)
            })
            .min();
        let review = s.next_review();
        let Some(t) = [next_arrival, next_finish, review.map(|t| t.0)]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        now = TimeMs(t);
        let mut events: Vec<Event> = Vec::new();
        for j in s.jobs() {
            let d = jobs[j.id().0 as usize].duration_ms;
            if j.state() == JobState::Running
                && s.now().0 + d.saturating_sub(j.executed_at(s.now()).0) <= t
            {
                events.push(Event::Finish(j.id()));
            }
        }
        while next < jobs.len() && jobs[next].submit_ms <= t {
            let j = jobs[next];
            let mut spec = JobSpec::new(JobId(next as u32), j.gpus);
            spec.deadline = j.deadline_ms.map(TimeMs);
            spec.declared_length = Some(DurationMs(j.duration_ms));
            events.push(Event::Submit(spec));
            next += 1;
        }
        if events.is_empty() {
            events.push(Event::Tick);
        }
        for ev in events {
            if let Event::Finish(id) = ev {
                // Preempted at this very instant by an earlier event of the batch: it is
                // restarted and finishes on the next round.
                if s.job(id).is_none_or(|j| j.state() != JobState::Running) {
                    continue;
                }
                finish[id.0 as usize] = Some(t);
            }
            let mut ev = ev;
            loop {
                out.clear();
                let o = s.handle(now, ev, &mut out).unwrap();
                for d in &out {
                    match d {
                        Decision::Preempt { .. } => preemptions += 1,
                        Decision::Reject { job, .. } => rejected[job.0 as usize] = true,
                        Decision::Start { .. } => {}
                    }
                }
                if !o.more_pending {
                    break;
                }
                ev = Event::Tick;
            }
        }
    }
    let (mut dl, mut miss, mut nd, mut nd_sum, mut all_sum, mut all) =
        (0u64, 0u64, 0u64, 0f64, 0f64, 0u64);
    for (i, j) in jobs.iter().enumerate() {
        let jct = finish[i].map(|f| (f - j.submit_ms) as f64 / 1000.0);
        if let Some(jct) = jct {
            all += 1;
            all_sum += jct;
        }
        match j.deadline_ms {
            Some(d) => {
                dl += 1;
                if rejected[i] || finish[i].is_none_or(|f| f > d) {
                    miss += 1;
                }
            }
            None => {
                nd += 1;
                nd_sum += jct.unwrap_or(0.0);
            }
        }
    }
    Outcome {
        miss_rate: miss as f64 / dl.max(1) as f64,
        avg_jct_nd_s: nd_sum / nd.max(1) as f64,
        avg_jct_s: all_sum / all.max(1) as f64,
        preemptions,
    }
}

fn table(name: &str, jobs: &[TraceJob], gpm: u16, machines: u16) {
    let dl = jobs.iter().filter(|j| j.deadline_ms.is_some()).count();
    println!(
        "\n{name}: {} jobs ({dl} with deadline), {} GPUs",
        jobs.len(),
        gpm * machines
    );
    println!(
        "{:<12} {:>10} {:>16} {:>12} {:>8}",
        "order", "miss rate", "avg JCT non-dl s", "avg JCT s", "preempt"
    );
    let row = |n: &str, o: Outcome| {
        println!(
            "{n:<12} {:>10.4} {:>16.1} {:>12.1} {:>8}",
            o.miss_rate, o.avg_jct_nd_s, o.avg_jct_s, o.preemptions
        )
    };
    row("fifo", replay(Fifo, jobs, gpm, machines));
    row("srtf(oracle)", replay(Srtf::default(), jobs, gpm, machines));
    row("edf", replay(Edf, jobs, gpm, machines));
    row("las", replay(Las::default(), jobs, gpm, machines));
    row("tias", replay(Tias::default(), jobs, gpm, machines));
    row(
        "tias-like-las",
        replay(
            Tias::new(TiasConfig {
                relaxed: gantry_core::RelaxedDeadlinePlacement::LikeLas,
                ..TiasConfig::default()
            }),
            jobs,
            gpm,
            machines,
        ),
    );
    // Sensitivity of the two TIAS constants that trade misses for JCT.
    row(
        "tias-s0.2",
        replay(
            Tias::new(TiasConfig {
                safety_permille: 200,
                ..TiasConfig::default()
            }),
            jobs,
            gpm,
            machines,
        ),
    );
    row(
        "tias-w16",
        replay(
            Tias::new(TiasConfig {
                deadline_weight: 16,
                ..TiasConfig::default()
            }),
            jobs,
            gpm,
            machines,
        ),
    );
}

#[test]
#[ignore]
fn compare_orders_on_real_deadline_traces() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    let root = if root.exists() {
        root
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces")
    };
    if !root.exists() {
        println!("note: {} missing, skipped", root.display());
        return;
    }
    let n: usize = std::env::var("ORDER_COMPARE_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let chronus = load_chronus(
        &root.join("chronus-philly-deadline/trace_job_Philly_MIX1.csv"),
        n,
        24,
    );
    table("chronus MIX1 (every 24th job)", &chronus, 8, 8);
    let itp = load_elasticflow(
        &root.join("microsoft-itp-elasticflow/elasticflow/cluster01.csv"),
        n,
        2,
    );
    table(
        "elasticflow cluster01 (every 2nd job keeps its deadline)",
        &itp,
        8,
        8,
    );
}
