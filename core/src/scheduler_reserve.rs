//! The queue head's reservation ([`HeadOfLine::Reserve`], feature `reserve`): EASY backfill
//! in the scheduling pass. After the jobs ranked ahead of the head are decided, the head
//! holds a GPU set and later jobs are started around it ([`Scheduler::reservation`]).

use super::*;
use core::cmp::Ordering;

/// The reservation a [`HeadOfLine::Reserve`] pass makes ([`Scheduler::reservation`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Reservation<const G: usize> {
    /// The head: the highest-ranked queued job that fits the healthy cluster but not the
    /// GPUs left to it.
    pub job: JobId,
    /// The GPUs held for it: as many as it asks for, healthy, each free or held by a
    /// running job that must end first. Later jobs do not start on them.
    pub gpus: GpuMask<G>,
    /// How many running jobs hold GPUs of the set (the jobs that must end before the head
    /// can start on it).
    pub jobs_to_end: usize,
    /// When those jobs have all ended by their declared lengths (each: the start of its
    /// current run plus its declared length less the time it ran before): the head's start
    /// at the latest, if the lengths hold. `None` when one of them declared no length. A
    /// later job whose declared length ends by then may use the set's free GPUs.
    pub drained_by: Option<TimeMs>,
}

/// A head's GPU set, and what it takes to free it (see [`Reservation`]).
pub(super) struct HeadSet<const G: usize> {
    gpus: GpuMask<G>,
    jobs_to_end: usize,
    /// Of those, the ones that count for the choice: all but the jobs started since the
    /// head began to wait that end, by their declared lengths, before the jobs already
    /// running then ([`waited_for`]).
    waited_for: usize,
    drained_by: Option<TimeMs>,
}

impl<O, P, const G: usize, const J: usize, const GANG: usize> Scheduler<O, P, G, J, GANG>
where
    O: JobOrder,
    P: Placer<G>,
{
    /// [`HeadOfLine::Reserve`], after the jobs ranked ahead of `head` were decided: holds
    /// the head's GPU set ([`reserve_for`](Self::reserve_for)), then starts, in rank order,
    /// the queued jobs that fit in the free GPUs outside it, placed only there; then, when
    /// the set's drain time is known, the queued jobs ranked after the head whose declared
    /// length ends by then, on any free GPU (they are gone before the head could start, as
    /// Slurm's backfill lets a job whose time limit ends before the reservation use its
    /// nodes). Nothing is preempted for them, and the head itself cannot fit (it did not fit
    /// in more GPUs). The jobs it starts can change which set is the head's (a job started
    /// in the set by its length is one more to end there), so it repeats, with the set
    /// chosen again, until a round starts nothing: the pass ends with no queued job that
    /// fits outside the set [`reservation`](Self::reservation) then reports. Returns true
    /// if `out` filled or reached `stop_at` (the pass's decision budget) first. Each round
    /// but the last starts a job, so at most G + 1 rounds; each O(G·m) for the set (m: GPUs
    /// per machine), the second plan and the placements, plus O(J) for the last step when
    /// the set has free GPUs and a known drain time.
    #[inline(never)]
    pub(super) fn backfill<const D: usize>(
        &mut self,
        head: Slot,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
        stop_at: usize,
    ) -> bool {
        for _ in 0..=G {
            let before = out.len();
            if self.backfill_round(head, now, out, stop_at) {
                return true;
            }
            if out.len() == before {
                break;
            }
        }
        false
    }

    /// One round of [`backfill`](Self::backfill) around the head's set as chosen now.
    /// Returns true if `out` filled or reached `stop_at` first.
    fn backfill_round<const D: usize>(
        &mut self,
        head: Slot,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
        stop_at: usize,
    ) -> bool {
        let Some(set) = self.table.get(head).and_then(|job| self.reserve_for(job)) else {
            return false;
        };
        let gpus = self.topology.gpu_count().min(G);
        let outside = (0..gpus)
            .filter(|&g| self.is_free(g) && !set.gpus.allows(GpuId(g as u16)))
            .count();
        if outside > 0 {
            let budget = PlanBudget {
                healthy: self.healthy_count,
                gpus: outside,
                preemptive: false,
                block: false,
                reserve: false,
            };
            let mut preempts: heapless::Vec<Slot, G> = heapless::Vec::new();
            let mut starts: heapless::Vec<Slot, G> = heapless::Vec::new();
            self.rank
                .plan(budget, self.table.by_slot(), &mut preempts, &mut starts);
            for &slot in starts.iter() {
                if pass_full(out, stop_at) {
                    return true;
                }
                self.start_placed(slot, Some(&set.gpus), now, out);
            }
        }
        let Some(drained) = set.drained_by else {
            return false;
        };
        // Jobs that end by the drain time may use any free GPU, the reserved ones included.
        let mut free = (0..gpus).filter(|&g| self.is_free(g)).count();
        let mut at = self.rank.next(head);
        for _ in 0..self.table.len() {
            if at == NIL || free == 0 {
                break;
            }
            let slot = at;
            at = self.rank.next(at);
            let fits = self.table.get(slot).is_some_and(|job| {
                job.state().is_queued()
                    && usize::from(job.gpus()) <= free
                    && job
                        .declared_length()
                        .is_some_and(|len| now.saturating_add(len) <= drained)
            });
            if !fits {
                continue;
            }
            if pass_full(out, stop_at) {
                return true;
            }
            if self.start_placed(slot, None, now, out) {
                free = (0..gpus).filter(|&g| self.is_free(g)).count();
            }
        }
        false
    }

    /// Places the queued job in `slot` (never on a GPU of `reserved`), starts it and emits
    /// its `Start`; false, with nothing changed, when it could not be placed. `out` has room.
    fn start_placed<const D: usize>(
        &mut self,
        slot: Slot,
        reserved: Option<&GpuMask<G>>,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> bool {
        let Some(id) = self.table.get(slot).map(Job::id) else {
            return false;
        };
        let Some(gpus) = self.place_outside(slot, reserved) else {
            return false;
        };
        self.start(slot, gpus.clone(), now);
        let _ = out.push(Decision::Start { job: id, gpus });
        self.state_changed(slot, now);
        true
    }

    /// The reservation a [`HeadOfLine::Reserve`] pass would make now: the head and its GPU
    /// set, chosen among one machine's GPUs (each machine that can hold the head) or, when
    /// none can, the cluster's: the set needing the fewest running jobs to end (not
    /// counting a job started since the head began to wait that ends, by its declared
    /// length, before the others), then the one that drains first by the declared lengths,
    /// then the lower machine index. `None` under another head-of-line rule, or when every
    /// queued job that fits the cluster fits the GPUs left. O(J) at worst for the head,
    /// plus O(G·m) for the set (m: GPUs per machine).
    pub fn reservation(&self) -> Option<Reservation<G>> {
        if self.config.head_of_line != HeadOfLine::Reserve {
            return None;
        }
        let mut preempts: heapless::Vec<Slot, G> = heapless::Vec::new();
        let mut starts: heapless::Vec<Slot, G> = heapless::Vec::new();
        let head = self.rank.plan(
            self.plan_budget(),
            self.table.by_slot(),
            &mut preempts,
            &mut starts,
        )?;
        let job = self.table.get(head)?;
        let set = self.reserve_for(job)?;
        Some(Reservation {
            job: job.id(),
            gpus: set.gpus,
            jobs_to_end: set.jobs_to_end,
            drained_by: set.drained_by,
        })
    }

    /// The GPU set the head `head` is given. The candidates are each machine with as many
    /// healthy GPUs as it asks for (one machine per gang where one can hold it, as a
    /// consolidating placement wants), or, when none has, the whole cluster; in each the
    /// set is built by [`drain_set`](Self::drain_set). The candidate needing the fewest
    /// running jobs to end wins, not counting a job started since the head began to wait
    /// that ends, by its declared length, before the jobs running then (one backfilled
    /// into the set must not move the reservation away from it); then the one whose set
    /// drains first by the declared lengths (a known drain time before an unknown one);
    /// then the lower machine index (not the fewest jobs in all: a job backfilled into
    /// the set would then tip a tie away from it). Jobs first, lengths second: a declared
    /// length is a bound a user chose (Slurm's time limit, typically well above the run),
    /// so it decides only between sets that need as many jobs to end; without declared
    /// lengths "soonest" is counted in jobs alone. `None`
    /// when fewer GPUs than it asks for are healthy. O(G·m), m the largest machine's GPU
    /// count (O(G + R log R) for the whole cluster).
    fn reserve_for(&self, head: &Job) -> Option<HeadSet<G>> {
        let need = usize::from(head.gpus());
        let since = head.queued_since();
        let gpus = self.topology.gpu_count().min(G);
        let rank = |set: &HeadSet<G>| (set.waited_for, set.drained_by.is_none(), set.drained_by);
        let mut best: Option<HeadSet<G>> = None;
        for m in 0..self.topology.machine_count().min(G) {
            let r = self.topology.gpus_of_machine(MachineId(m as u16));
            let range = usize::from(r.start).min(gpus)..usize::from(r.end).min(gpus);
            let healthy = self
                .healthy
                .get(range.clone())
                .map_or(0, |h| h.iter().filter(|&&h| h).count());
            if healthy < need {
                continue;
            }
            let Some(set) = self.drain_set(range, need, since) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| rank(&set) < rank(b)) {
                best = Some(set);
            }
        }
        best.or_else(|| self.drain_set(0..gpus, need, since))
    }

    /// Within the GPU index range `range`: the free healthy GPUs (lowest first), then the
    /// GPUs there of running jobs, job by job, until `need` are held: first the jobs with
    /// the most GPUs in the range (taking the largest first needs the fewest jobs, since
    /// jobs hold disjoint GPUs), then those whose declared length ends soonest (a job
    /// without one last), then the lower id; each job's GPUs lowest first. The drain time
    /// is the latest end (now + declared length − time executed) of the jobs taken,
    /// unknown if one of them declared no length. `None` when the range has fewer than
    /// `need` healthy GPUs. O(n·d + d log d) for n GPUs held by d jobs (the whole cluster:
    /// O(G + R log R), each running job's GPUs all being in it).
    fn drain_set(
        &self,
        range: core::ops::Range<usize>,
        need: usize,
        since: TimeMs,
    ) -> Option<HeadSet<G>> {
        let now = self.last_now;
        let mut gpus = GpuMask::<G>::none();
        let mut held = 0usize;
        for g in range.clone() {
            if held < need && self.is_free(g) {
                gpus.set(GpuId(g as u16), true);
                held = held.saturating_add(1);
            }
        }
        if held >= need {
            return Some(HeadSet {
                gpus,
                jobs_to_end: 0,
                waited_for: 0,
                drained_by: Some(now),
            });
        }
        // (end, GPUs in the range, id, slot) of each running job holding GPUs there.
        let end_of = |job: &Job| {
            job.declared_remaining_at(now)
                .map(|r| now.saturating_add(r))
        };
        let mut holders: heapless::Vec<(Option<TimeMs>, usize, JobId, Slot), G> =
            heapless::Vec::new();
        let whole = range.start == 0 && range.end >= self.topology.gpu_count().min(G);
        if whole {
            for &slot in self.running.iter() {
                if let Some(job) = self.table.get(slot) {
                    let _ = holders.push((end_of(job), usize::from(job.gpus()), job.id(), slot));
                }
            }
        } else {
            for g in range.clone() {
                let slot = self.owner.get(g).copied().unwrap_or(NIL);
                let Some(job) = self.table.get(slot) else {
                    continue;
                };
                match holders.iter_mut().find(|h| h.3 == slot) {
                    Some(h) => h.1 = h.1.saturating_add(1),
                    None => {
                        let _ = holders.push((end_of(job), 1, job.id(), slot));
                    }
                }
            }
        }
        let key = |h: &(Option<TimeMs>, usize, JobId, Slot)| {
            (core::cmp::Reverse(h.1), h.0.is_none(), h.0, h.2)
        };
        heap_sort(&mut holders, |a, b| key(a) < key(b));
        let mut jobs_to_end = 0usize;
        let mut drained_by = Some(now);
        // The jobs taken: their end, and when they started against the head's wait.
        let mut taken: heapless::Vec<(Option<TimeMs>, Ordering), GANG> = heapless::Vec::new();
        for &(end, _, _, slot) in holders.iter() {
            if held >= need {
                break;
            }
            jobs_to_end = jobs_to_end.saturating_add(1);
            let started = self
                .table
                .get(slot)
                .map_or(Ordering::Less, |job| job.running_since().cmp(&since));
            // At most `need` ≤ GANG jobs are taken (each adds a GPU).
            let _ = taken.push((end, started));
            drained_by = match (drained_by, end) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
            for g in range.clone() {
                if held < need && self.owner.get(g) == Some(&slot) && self.is_healthy_index(g) {
                    gpus.set(GpuId(g as u16), true);
                    held = held.saturating_add(1);
                }
            }
        }
        let waited_for = waited_for(&taken, now);
        (held >= need).then_some(HeadSet {
            gpus,
            jobs_to_end,
            waited_for,
            drained_by,
        })
    }

    /// As [`place`](Self::place), never on a GPU of `reserved`. O(G·k).
    fn place_outside(&mut self, slot: Slot, reserved: Option<&GpuMask<G>>) -> Option<GpuSet<GANG>> {
        let mut usable = GpuMask::<G>::none();
        for g in 0..self.topology.gpu_count().min(G) {
            let held = reserved.is_some_and(|r| r.allows(GpuId(g as u16)));
            usable.set(GpuId(g as u16), self.is_free(g) && !held);
        }
        self.pick(slot, usable)
    }

    /// Whether GPU index `g` is healthy. O(1).
    fn is_healthy_index(&self, g: usize) -> bool {
        self.healthy.get(g).is_some_and(|&h| h)
    }
}

/// How many of the jobs `taken` for a head's set it waits for (see [`HeadSet`]), each given
/// as its end by its declared length and when it started against the head's wait. A job
/// started before the head began to wait counts. One started since that ends, by its
/// declared length, by the latest end of the jobs that did not start since (`now` if none;
/// unknown if one of them declared no length) does not: backfilled into the set, it leaves
/// before the head could start. A job started in the very instant the head began to wait
/// may be either (the time does not tell whether it came first or was backfilled in that
/// pass): it counts only if it is the latest of the jobs that did not start since (by end,
/// then by its place in `taken`), or if an end is unknown; otherwise a job backfilled in
/// that instant would count and move the set away from where the backfill was allowed.
/// O(k) for k jobs.
fn waited_for(taken: &[(Option<TimeMs>, Ordering)], now: TimeMs) -> usize {
    // An unknown end is the latest.
    let later = |end: Option<TimeMs>| (end.is_none(), end);
    // The latest of the jobs that did not start since: its index and end.
    let mut latest: Option<(usize, Option<TimeMs>)> = None;
    for (i, &(end, started)) in taken.iter().enumerate() {
        if started != Ordering::Greater && latest.is_none_or(|(_, l)| later(end) >= later(l)) {
            latest = Some((i, end));
        }
    }
    let drained = latest.map_or(Some(now), |(_, end)| end);
    taken
        .iter()
        .enumerate()
        .filter(|&(i, &(end, started))| {
            let rides = matches!((end, drained), (Some(e), Some(d)) if e <= d);
            match started {
                Ordering::Less => true,
                Ordering::Equal => !rides || latest.is_some_and(|(l, _)| l == i),
                Ordering::Greater => !rides,
            }
        })
        .count()
}
