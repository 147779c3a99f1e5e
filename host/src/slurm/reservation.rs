//! Advance reservations (`scontrol create reservation starttime=… duration=… nodes=…`, most
//! often a maintenance window). Slurm starts no job that does not ask for a reservation on
//! a node of one that its time limit, counted from now, would run into (`job_test_resv` in
//! Slurm's `reservation.c`: the job's run, now to now + limit, overlaps the reservation's
//! start to end; an unlimited job runs a year). A job released there anyway stays pending
//! (`ReqNodeNotAvail, Reserved for maintenance` or `May be reserved for other job`), and
//! under `sched/builtin` every later job pinned to those nodes waits behind it (checked on
//! the lab: a 1-minute job that would have ended before the reservation showed
//! `ReqNodeNotAvail, UnavailableNodes:n1`).
//!
//! The core places GPUs with no per-job node mask, so gantry keeps Slurm's rule with two
//! moves, both in [`super::controller`]:
//! - a job whose limit runs into reservations on *every* node of the partition (a
//!   maintenance of the whole partition) cannot start anywhere before they end: it stays
//!   out of the core, held, until it can (as under Slurm alone, where it waits for the
//!   reservation's end while jobs that end before it backfill);
//! - a start the core makes on a node where the job's limit runs into a reservation closes
//!   that node to new jobs until the reservation is over (its running jobs go on; the core
//!   places the job elsewhere before anything is released). Jobs short enough to end before
//!   the reservation could still have used it: the price of having no node mask.
//!
//! Reservations are read each poll with `scontrol show reservation --oneliner`, times as
//! Unix seconds (`SLURM_TIME_FORMAT=%s`, set by [`super::command::ProcessRunner`]).

use super::compact::CompactError;

/// One reservation as `scontrol show reservation --oneliner` prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlurmReservation {
    /// Its name (`ReservationName`).
    pub name: String,
    /// When it starts, Unix s.
    pub start_s: u64,
    /// When it ends, Unix s.
    pub end_s: u64,
    /// Its nodes, expanded (empty for a reservation of licenses or burst buffers only).
    pub nodes: Vec<String>,
}

/// A job without a time limit runs a year for Slurm's reservation test (`YEAR_SECONDS`).
const UNLIMITED_RUN_S: u64 = 365 * 24 * 3600;

impl SlurmReservation {
    /// Whether a job started at `now_ms` with a time limit of `limit_min` (`None`:
    /// unlimited) would run into it: Slurm's overlap test (start before the job's end, end
    /// after its start).
    pub fn blocks(&self, now_ms: u64, limit_min: Option<u64>) -> bool {
        let run_s = limit_min.map_or(UNLIMITED_RUN_S, |m| m.saturating_mul(60));
        let start_ms = self.start_s.saturating_mul(1000);
        let job_end_ms = now_ms.saturating_add(run_s.saturating_mul(1000));
        start_ms < job_end_ms && self.end_s.saturating_mul(1000) > now_ms
    }

    /// Whether it is over at `now_ms`.
    pub fn over(&self, now_ms: u64) -> bool {
        self.end_s.saturating_mul(1000) <= now_ms
    }

    /// Whether it holds node `name`.
    pub fn has_node(&self, name: &str) -> bool {
        self.nodes.iter().any(|n| n == name)
    }

    /// `m1 (from 1796636905 to 1796637505 Unix s)`: how notes name it.
    pub fn describe(&self) -> String {
        format!(
            "{} (from {} to {} Unix s)",
            self.name, self.start_s, self.end_s
        )
    }
}

/// A poll's reservations against the partition's machines (by the core's machine index),
/// for the per-job tests of the controller: O(reservations × machines) to build, then
/// O(its reservations × machines) per job tested.
#[derive(Debug, Default)]
pub struct ReservedMachines<'r> {
    /// Each reservation that holds a machine of the partition, with which it holds.
    held: Vec<(&'r SlurmReservation, Vec<bool>)>,
}

impl<'r> ReservedMachines<'r> {
    /// `reservations` against the machines named `machines`, in the core's order.
    pub fn new<'m>(
        reservations: &'r [SlurmReservation],
        machines: impl Iterator<Item = &'m str> + Clone,
    ) -> Self {
        let held = reservations
            .iter()
            .map(|r| {
                (
                    r,
                    machines.clone().map(|m| r.has_node(m)).collect::<Vec<_>>(),
                )
            })
            .filter(|(_, on)| on.contains(&true))
            .collect();
        Self { held }
    }

    /// Whether no reservation holds a machine of the partition.
    pub fn on_none(&self) -> bool {
        self.held.is_empty()
    }

    /// The reservations that hold machine `index`.
    pub fn on(&self, index: usize) -> impl Iterator<Item = &'r SlurmReservation> + '_ {
        self.held
            .iter()
            .filter(move |(_, on)| on.get(index).copied().unwrap_or(false))
            .map(|(r, _)| *r)
    }

    /// The reservations that keep a job started at `now_ms` with a time limit of
    /// `limit_min` from every machine open to new jobs (`open`, by machine index): its run
    /// would reach into one of them on each. Empty when some open machine is free of them
    /// for it, or when no machine is open (nothing starts then anyway).
    pub fn everywhere(
        &self,
        now_ms: u64,
        limit_min: Option<u64>,
        open: &[bool],
    ) -> Vec<&'r SlurmReservation> {
        let blocking: Vec<&(&SlurmReservation, Vec<bool>)> = self
            .held
            .iter()
            .filter(|(r, _)| r.blocks(now_ms, limit_min))
            .collect();
        if blocking.is_empty() || !open.contains(&true) {
            return Vec::new();
        }
        let reserved = |m: usize| blocking.iter().any(|(_, on)| on.get(m) == Some(&true));
        let covered = (0..open.len()).filter(|&m| open[m]).all(reserved);
        if covered {
            blocking.iter().map(|(r, _)| *r).collect()
        } else {
            Vec::new()
        }
    }
}

/// Arguments of the listing [`parse_reservations`] reads.
pub fn reservation_args() -> Vec<String> {
    ["show", "reservation", "--oneliner"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Parses `scontrol show reservation --oneliner`: one line of `Key=Value` words per
/// reservation, or `No reservations in the system`. Only the name, times and nodes are
/// read; a line without them, or with times that are not Unix seconds, is an error that
/// names it.
pub fn parse_reservations(listing: &str) -> Result<Vec<SlurmReservation>, CompactError> {
    let mut reservations = Vec::new();
    for (index, line) in listing.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("No reservations") {
            continue;
        }
        let fail = |problem: String| CompactError {
            command: "scontrol show reservation",
            line: index + 1,
            problem,
            text: line.chars().take(200).collect(),
        };
        let value = |key: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        };
        let time = |key: &str| -> Result<u64, CompactError> {
            let text = value(key).ok_or_else(|| fail(format!("no {key}")))?;
            text.parse()
                .map_err(|_| fail(format!("{key} {text:?} is not Unix seconds")))
        };
        let name = value("ReservationName").ok_or_else(|| fail("no ReservationName".into()))?;
        let nodes = match value("Nodes") {
            None | Some("(null)") | Some("") => Vec::new(),
            Some(list) => super::hostlist::expand(list).map_err(|e| fail(format!("Nodes: {e}")))?,
        };
        reservations.push(SlurmReservation {
            name: name.to_string(),
            start_s: time("StartTime")?,
            end_s: time("EndTime")?,
            nodes,
        });
    }
    Ok(reservations)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As Slurm 22.05 printed them on the lab: a maintenance of one node two minutes ahead,
    /// one of all nodes ten minutes ahead.
    const LISTING: &str = "ReservationName=m1 StartTime=1796636905 EndTime=1796637505 Duration=00:10:00 Nodes=n1 NodeCnt=1 CoreCnt=16 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=16 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
ReservationName=m2 StartTime=1796637385 EndTime=1796640985 Duration=01:00:00 Nodes=n[1-4] NodeCnt=4 CoreCnt=64 Features=(null) PartitionName=(null) Flags=SPEC_NODES,ALL_NODES TRES=cpu=64 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
";

    #[test]
    fn reads_names_times_and_nodes_and_no_reservations() {
        let r = parse_reservations(LISTING).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            SlurmReservation {
                name: "m1".into(),
                start_s: 1_796_636_905,
                end_s: 1_796_637_505,
                nodes: vec!["n1".into()],
            }
        );
        assert_eq!(r[1].nodes, ["n1", "n2", "n3", "n4"]);
        assert!(r[1].has_node("n3") && !r[0].has_node("n3"));
        assert_eq!(
            parse_reservations("No reservations in the system\n").unwrap(),
            []
        );
        let licenses = "ReservationName=lic StartTime=1 EndTime=2 Nodes=(null) Licenses=fluent:2";
        assert_eq!(parse_reservations(licenses).unwrap()[0].nodes.len(), 0);
    }

    #[test]
    fn a_line_without_unix_times_names_the_line_and_field() {
        let local = "ReservationName=m StartTime=2026-12-07T10:00:00 EndTime=1 Nodes=n1";
        let err = parse_reservations(&format!("{}\n{local}", LISTING.lines().next().unwrap()))
            .unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.problem.contains("StartTime"), "{err}");
        assert!(parse_reservations("Nodes=n1 StartTime=1 EndTime=2").is_err());
    }

    /// Slurm's overlap: a job blocks on a reservation its limit reaches into, not one it
    /// ends before, nor one that is over; an unlimited job reaches any ahead.
    #[test]
    fn a_job_is_blocked_only_where_its_limit_reaches_into_the_reservation() {
        let r = SlurmReservation {
            name: "m".into(),
            start_s: 1_000,
            end_s: 2_000,
            nodes: vec!["n1".into()],
        };
        let now_ms = 400_000; // 600 s before the start
        assert!(!r.blocks(now_ms, Some(10)));
        assert!(r.blocks(now_ms, Some(11)));
        assert!(r.blocks(now_ms, None));
        // Inside the window every job is blocked; after its end none.
        assert!(r.blocks(1_500_000, Some(1)));
        assert!(!r.blocks(2_000_000, None));
    }

    /// Two reservations that together hold every machine keep a job whose limit reaches
    /// into both from everywhere, and one that reaches only the nearer one from its machines
    /// (from everywhere once the other machine is not open).
    #[test]
    fn a_job_is_kept_from_everywhere_only_where_its_reservations_cover_every_machine() {
        let at = |name: &str, start_s: u64, nodes: &[&str]| SlurmReservation {
            name: name.into(),
            start_s,
            end_s: start_s + 600,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
        };
        let listed = [
            at("near", 1_000, &["n1", "n2"]),
            at("far", 2_000, &["n3"]),
            at("elsewhere", 1_000, &["x9"]),
        ];
        let machines = ["n1", "n2", "n3"];
        let reserved = ReservedMachines::new(&listed, machines.iter().copied());
        let open = [true; 3];
        let names = |rs: Vec<&SlurmReservation>| -> Vec<String> {
            rs.iter().map(|r| r.name.clone()).collect()
        };
        assert_eq!(names(reserved.on(2).collect()), ["far"]);
        // 0 s: 20 minutes reach "near" only, 40 minutes both.
        assert!(reserved.everywhere(0, Some(20), &open).is_empty());
        assert_eq!(
            names(reserved.everywhere(0, Some(40), &open)),
            ["near", "far"]
        );
        assert_eq!(names(reserved.everywhere(0, None, &open)), ["near", "far"]);
        // n3 down or drained: "near" alone keeps a 20-minute job from every open machine.
        assert_eq!(
            names(reserved.everywhere(0, Some(20), &[true, true, false])),
            ["near"]
        );
        assert!(reserved.everywhere(0, None, &[false; 3]).is_empty());
        assert!(
            ReservedMachines::new(&[], machines.iter().copied())
                .everywhere(0, None, &open)
                .is_empty()
        );
    }
}
