//! The job slot: the stable `u16` handle by which every index of the scheduler (the job
//! table, the AVL trees, the ranking, the review timers) refers to a live job. Its own module,
//! below all of them, so the tree (`avl`) and the table that owns the slots (`job_table`)
//! need not import each other.

/// A stable handle on a live job, valid from submission to removal (then reused). `u16`:
/// the scheduler checks `J ≤ u16::MAX` at compile time, and [`NIL`](crate::avl::NIL)
/// (`u16::MAX`) is never a slot.
pub(crate) type Slot = u16;
