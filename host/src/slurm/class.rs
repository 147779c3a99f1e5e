//! Which Slurm jobs gantry may preempt.
//!
//! On Slurm a preemption is a requeue: the job is killed and starts again, from zero unless
//! it saves checkpoints and resumes from them. Preempting a job that does not checkpoint
//! throws its work away, so gantry preempts only jobs that say they checkpoint, and says so
//! to the core per job ([`PreemptionClass`]): a job is
//! [`Checkpointing`](PreemptionClass::Checkpointing) only when Slurm may requeue it
//! (`--requeue`, or `JobRequeue=1` without `--no-requeue`) *and* it carries the site's
//! checkpoint marker ([`CheckpointMarker`], `gantry slurm --checkpoint-marker`). Every other
//! job is [`Never`](PreemptionClass::Never): once started it runs to completion (a failed
//! node still stops it, as it would any job).

use super::json::SlurmJob;
use gantry_core::PreemptionClass;

/// What marks a job as one that checkpoints and may be preempted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointMarker {
    /// A word of the job's comment (`sbatch --comment 'gantry:checkpoint'`); words are
    /// separated by blanks or commas, so a comment may carry other words too.
    CommentTag(String),
    /// The job's quality of service (`sbatch --qos NAME`), for sites that grant
    /// preemptibility per QOS.
    Qos(String),
}

/// The default marker: the comment tag `gantry:checkpoint`.
pub const DEFAULT_MARKER: &str = "gantry:checkpoint";

impl Default for CheckpointMarker {
    fn default() -> Self {
        CheckpointMarker::CommentTag(DEFAULT_MARKER.to_string())
    }
}

impl std::str::FromStr for CheckpointMarker {
    type Err = String;

    /// `qos:NAME` is a QOS; `comment:TAG` or a bare `TAG` is a comment tag (so the default
    /// `gantry:checkpoint` is a tag). A tag may not be empty nor contain blanks or commas.
    fn from_str(text: &str) -> Result<Self, String> {
        let (marker, value) = if let Some(qos) = text.strip_prefix("qos:") {
            (CheckpointMarker::Qos(qos.to_string()), qos)
        } else {
            let tag = text.strip_prefix("comment:").unwrap_or(text);
            (CheckpointMarker::CommentTag(tag.to_string()), tag)
        };
        if value.is_empty() || value.contains(|c: char| c.is_whitespace() || c == ',') {
            return Err(format!(
                "checkpoint marker {text:?}: expected TAG, comment:TAG or qos:NAME (no blanks or commas)"
            ));
        }
        Ok(marker)
    }
}

impl std::fmt::Display for CheckpointMarker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointMarker::CommentTag(tag) => write!(f, "comment tag {tag}"),
            CheckpointMarker::Qos(qos) => write!(f, "QOS {qos}"),
        }
    }
}

impl CheckpointMarker {
    /// Whether `job` carries the marker.
    pub fn marks(&self, job: &SlurmJob) -> bool {
        match self {
            CheckpointMarker::CommentTag(tag) => job
                .comment
                .split(|c: char| c.is_whitespace() || c == ',')
                .any(|word| word == tag),
            CheckpointMarker::Qos(qos) => job.qos == *qos,
        }
    }

    /// The core's preemption class for `job`: checkpointing only when Slurm may requeue it
    /// and it carries the marker.
    pub fn class_of(&self, job: &SlurmJob) -> PreemptionClass {
        if job.requeue && self.marks(job) {
            PreemptionClass::Checkpointing
        } else {
            PreemptionClass::Never
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(requeue: bool, comment: &str, qos: &str) -> SlurmJob {
        SlurmJob {
            requeue,
            comment: comment.into(),
            qos: qos.into(),
            ..super::super::json::held_job(1, "gres:gpu:1")
        }
    }

    #[test]
    fn checkpointing_needs_requeue_and_the_marker() {
        let m = CheckpointMarker::default();
        assert_eq!(
            m.class_of(&job(true, "gantry:checkpoint", "")),
            PreemptionClass::Checkpointing
        );
        assert_eq!(
            m.class_of(&job(true, "resnet, gantry:checkpoint every 5m", "")),
            PreemptionClass::Checkpointing
        );
        // No requeue: Slurm would end it, not requeue it.
        assert_eq!(
            m.class_of(&job(false, "gantry:checkpoint", "")),
            PreemptionClass::Never
        );
        // Requeue alone, a longer word, or no comment: never preempted.
        for comment in ["", "gantry:checkpoints", "no gantry:checkpoint-here"] {
            assert_eq!(
                m.class_of(&job(true, comment, "")),
                PreemptionClass::Never,
                "{comment}"
            );
        }
    }

    #[test]
    fn markers_parse_and_a_qos_marks_by_qos() {
        let qos: CheckpointMarker = "qos:preemptible".parse().unwrap();
        assert_eq!(qos, CheckpointMarker::Qos("preemptible".into()));
        assert_eq!(
            qos.class_of(&job(true, "gantry:checkpoint", "normal")),
            PreemptionClass::Never
        );
        assert_eq!(
            qos.class_of(&job(true, "", "preemptible")),
            PreemptionClass::Checkpointing
        );
        assert_eq!(
            "comment:ckpt".parse::<CheckpointMarker>().unwrap(),
            CheckpointMarker::CommentTag("ckpt".into())
        );
        assert_eq!(
            "gantry:checkpoint".parse::<CheckpointMarker>().unwrap(),
            CheckpointMarker::default()
        );
        for bad in ["", "qos:", "comment:", "two words", "a,b"] {
            assert!(bad.parse::<CheckpointMarker>().is_err(), "{bad}");
        }
    }
}
