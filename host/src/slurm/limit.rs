//! QOS and association limits (`sacctmgr … MaxTRESPerUser=gres/gpu=8`, `GrpTRES`,
//! `MaxJobsPerUser`, …) and licenses (`-L sim:1` against `Licenses=sim:4`): Slurm keeps a
//! released job pending while starting it would pass a limit of its QOS or account, or take
//! more licenses than are free, whatever nodes are free. gantry does not read the limits;
//! it learns of one from the reason Slurm gives a job it released (`QOSMaxGRESPerUser`,
//! `AssocGrpGRES`, `Licenses`, …).
//!
//! Such a job would hold, in the core, GPUs that nothing runs on until the limit frees, so
//! gantry takes it out of the core and holds it again ([`Limit::Shared`]), and submits it
//! again once a job that may hold the limit ends: one of the same user or QOS that ran
//! when it was held back (for licenses: one that holds a license it asks for), or, with
//! none such (an account's limit, or a limit Slurm counts over time), after
//! [`RETRY_WITHOUT_BLOCKERS_MS`]; at the latest after
//! [`RETRY_AT_LEAST_EVERY_MS`] (an operator may raise the limit). A job that alone passes a
//! limit ([`Limit::JobAlone`]: `…PerJob…`, `…Min…`, `QOSNotAllowed`, or a partition's
//! `MaxTime`, node count or size: `PartitionTimeLimit`, …) never starts until an
//! operator changes it: gantry leaves it to Slurm, out of the core.

use super::json::SlurmJob;
use std::collections::{BTreeMap, BTreeSet};

/// With no job of the same user or QOS running when a job was held back, it is submitted
/// again after this long, ms.
pub const RETRY_WITHOUT_BLOCKERS_MS: u64 = 60_000;
/// A job held back for a limit is submitted again after this long at the latest, ms.
pub const RETRY_AT_LEAST_EVERY_MS: u64 = 600_000;

/// The kind of limit a pending job's reason names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A limit other jobs use up (per user, per account, per QOS): it frees as they end.
    Shared,
    /// A limit the job passes by itself (a per-job maximum, a minimum, a QOS the partition
    /// does not allow, a partition's `MaxTime` or node count under `EnforcePartLimits=NO`,
    /// Slurm's default, which accepts such a job and keeps it pending): it never starts as
    /// it is.
    JobAlone,
}

/// The limit Slurm's pending reason names, if any (the names of Slurm's
/// `job_state_reason.c`): the reasons of QOS (`QOS…`) and association (`Assoc…`) limits,
/// the per-account and per-user limits of a QOS that carry no prefix (`MaxGRESPerAccount`,
/// `MaxCpuRunMinsPerUser`, …, `AccountingPolicy`), `Licenses` (licenses other jobs hold),
/// and the limits a job passes alone: its partition's (`PartitionTimeLimit`, …), an account
/// or QOS it may not use (`InvalidAccount`, `InvalidQOS`, `AccountNotAllowed`), memory over
/// the limit (`MaxMemPerLimit`).
pub fn limit_of(reason: &str) -> Option<Limit> {
    if reason == LICENSES || reason == "AccountingPolicy" {
        return Some(Limit::Shared);
    }
    if PARTITION_LIMITS.contains(&reason) || ALONE.contains(&reason) {
        return Some(Limit::JobAlone);
    }
    let per_account_or_user = reason.starts_with("Max")
        && (reason.ends_with("PerAccount") || reason.ends_with("PerUser"));
    if per_account_or_user {
        return Some(Limit::Shared);
    }
    let rest = reason
        .strip_prefix("QOS")
        .or_else(|| reason.strip_prefix("Assoc"))?;
    if rest == "NotAllowed" || rest.starts_with("Min") || reason.contains("PerJob") {
        Some(Limit::JobAlone)
    } else {
        Some(Limit::Shared)
    }
}

/// Reasons of a job that never starts as it is, beside its partition's limits: an account
/// or QOS it may not use, more memory than its limit allows.
const ALONE: [&str; 4] = [
    "InvalidAccount",
    "InvalidQOS",
    "AccountNotAllowed",
    "MaxMemPerLimit",
];

/// Slurm's pending reasons for a job that passes a limit of its partition (`MaxTime`,
/// `MinNodes`/`MaxNodes`, its size): a request Slurm accepted but never starts.
const PARTITION_LIMITS: [&str; 3] = [
    "PartitionTimeLimit",
    "PartitionNodeLimit",
    "PartitionConfig",
];

/// Slurm's pending reason for a job whose licenses are not free.
pub const LICENSES: &str = "Licenses";

/// The license names of a `-L` request (`sim:1,cad:2` → `sim`, `cad`; `sim` alone asks
/// for one).
fn license_names(request: &str) -> impl Iterator<Item = &str> {
    request
        .split(',')
        .map(|l| l.split(':').next().unwrap_or("").trim())
        .filter(|name| !name.is_empty())
}

/// A job gantry held back for a shared limit, and what it waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitWait {
    /// Slurm's reason when it was held back.
    pub reason: String,
    /// The jobs of the same user or QOS that ran then (any partition).
    pub blockers: BTreeSet<u32>,
    /// When it was held back, ms.
    pub since_ms: u64,
}

impl LimitWait {
    /// `job`, held back at `now_ms` for its reason, waiting on the jobs of `listed` (every
    /// job of the poll) that run with its user or its QOS, or, held back for licenses, that
    /// hold one of its licenses.
    pub fn new(job: &SlurmJob, listed: &BTreeMap<u32, &SlurmJob>, now_ms: u64) -> Self {
        let user = job.owner.as_ref().map(|(uid, _)| *uid);
        let shares = |other: &SlurmJob| {
            if job.reason == LICENSES {
                return license_names(&other.licenses)
                    .any(|held| license_names(&job.licenses).any(|asked| asked == held));
            }
            let same_user = user.is_some() && other.owner.as_ref().map(|(u, _)| *u) == user;
            let same_qos = !job.qos.is_empty() && other.qos == job.qos;
            same_user || same_qos
        };
        let blockers = listed
            .values()
            .filter(|other| other.id != job.id && other.state.runs())
            .filter(|other| shares(other))
            .map(|other| other.id)
            .collect();
        Self {
            reason: job.reason.clone(),
            blockers,
            since_ms: now_ms,
        }
    }

    /// Whether the job may be submitted again at `now_ms`: a blocker no longer runs, or
    /// the retry time passed.
    pub fn over(&self, listed: &BTreeMap<u32, &SlurmJob>, now_ms: u64) -> bool {
        let waited = now_ms.saturating_sub(self.since_ms);
        if waited >= RETRY_AT_LEAST_EVERY_MS {
            return true;
        }
        if self.blockers.is_empty() {
            return waited >= RETRY_WITHOUT_BLOCKERS_MS;
        }
        self.blockers
            .iter()
            .any(|id| !listed.get(id).is_some_and(|j| j.state.runs()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::JobStateName;

    #[test]
    fn reasons_name_shared_limits_limits_a_job_passes_alone_or_none() {
        for shared in [
            "QOSMaxGRESPerUser",
            "QOSGrpGRES",
            "QOSMaxJobsPerUserLimit",
            "AssocGrpGRES",
            "AssocMaxJobsLimit",
            "AssociationJobLimit",
            "QOSJobLimit",
            "Licenses",
            "MaxGRESPerAccount",
            "MaxJobsPerAccount",
            "MaxCpuRunMinsPerUser",
            "AccountingPolicy",
        ] {
            assert_eq!(limit_of(shared), Some(Limit::Shared), "{shared}");
        }
        for alone in [
            "QOSMaxWallDurationPerJobLimit",
            "AssocMaxGRESPerJob",
            "QOSMinGRES",
            "QOSNotAllowed",
            "PartitionTimeLimit",
            "PartitionNodeLimit",
            "InvalidQOS",
            "AccountNotAllowed",
            "MaxMemPerLimit",
        ] {
            assert_eq!(limit_of(alone), Some(Limit::JobAlone), "{alone}");
        }
        for other in [
            "Resources",
            "Priority",
            "Dependency",
            "JobHeldUser",
            "ReqNodeNotAvail",
            "MaxPoweredUpNodes",
            "None",
            "",
        ] {
            assert_eq!(limit_of(other), None, "{other}");
        }
    }

    fn job(id: u32, uid: u32, qos: &str, state: JobStateName) -> SlurmJob {
        SlurmJob {
            id,
            state,
            qos: qos.into(),
            owner: Some((uid, format!("job{id}"))),
            ..SlurmJob::default()
        }
    }

    fn listed<'a>(jobs: &[&'a SlurmJob]) -> BTreeMap<u32, &'a SlurmJob> {
        jobs.iter().map(|j| (j.id, *j)).collect()
    }

    #[test]
    fn a_held_back_job_waits_for_a_job_of_its_user_or_qos_to_end() {
        use JobStateName::{Completed, Pending, Running};
        let me = job(9, 7, "lim", Pending);
        let (mine, same_qos) = (job(1, 7, "normal", Running), job(2, 8, "lim", Running));
        let (other, queued) = (job(3, 8, "normal", Running), job(4, 7, "lim", Pending));
        let wait = LimitWait::new(
            &me,
            &listed(&[&me, &mine, &same_qos, &other, &queued]),
            1_000,
        );
        assert_eq!(wait.blockers, BTreeSet::from([1, 2]));
        assert!(!wait.over(&listed(&[&mine, &same_qos]), 2_000));
        let done = job(2, 8, "lim", Completed);
        assert!(wait.over(&listed(&[&mine, &done]), 2_000));
        // Purged from the listing counts as ended.
        assert!(wait.over(&listed(&[&mine]), 2_000));
        assert!(wait.over(
            &listed(&[&mine, &same_qos]),
            1_000 + RETRY_AT_LEAST_EVERY_MS
        ));
        // Nothing of its user or QOS ran: a retry after a minute.
        let alone = LimitWait::new(&me, &listed(&[&me, &other]), 1_000);
        assert!(alone.blockers.is_empty());
        assert!(!alone.over(&listed(&[&other]), 1_000 + RETRY_WITHOUT_BLOCKERS_MS - 1));
        assert!(alone.over(&listed(&[&other]), 1_000 + RETRY_WITHOUT_BLOCKERS_MS));
    }

    /// Held back for licenses: it waits for the running jobs that hold one of the licenses
    /// it asks for, of any user.
    #[test]
    fn a_job_held_back_for_licenses_waits_for_a_job_holding_one_of_them() {
        use JobStateName::{Pending, Running};
        let with = |id: u32, uid: u32, licenses: &str, state: JobStateName| SlurmJob {
            licenses: licenses.into(),
            ..job(id, uid, "normal", state)
        };
        let me = SlurmJob {
            reason: LICENSES.into(),
            ..with(9, 7, "sim:1,cad", Pending)
        };
        let cad = with(1, 8, "cad:2", Running);
        let (mine, fluent) = (with(2, 7, "", Running), with(3, 8, "fluent", Running));
        let wait = LimitWait::new(&me, &listed(&[&me, &cad, &mine, &fluent]), 1_000);
        assert_eq!(wait.blockers, BTreeSet::from([1]));
        assert_eq!(
            license_names("sim:1,cad").collect::<Vec<_>>(),
            ["sim", "cad"]
        );
    }
}
