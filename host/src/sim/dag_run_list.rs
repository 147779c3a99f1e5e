//! The plain list schedule the DAG planners are compared with: tasks in the DAG's topological
//! order, each on the GPU that becomes free first (ties: lowest index), blind to GPU speeds
//! and links — what a scheduler without a DAG planner does when it hands ready tasks to
//! whichever worker is idle (Graham's list scheduling).

use gantry_core::dag::{Dag, DagPlanner, Plan, PlanError, Platform};

/// Topological order, earliest-free GPU (module docs). Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct TopoList;

impl<const T: usize, const E: usize> DagPlanner<T, E> for TopoList {
    fn name(&self) -> &'static str {
        "list"
    }

    /// O(T·P + E).
    fn plan<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        out: &mut Plan<T>,
    ) -> Result<(), PlanError> {
        dag.require_sealed()?;
        let p = platform.gpu_count();
        if p == 0 {
            return Err(PlanError::NoGpus);
        }
        let n = dag.task_count();
        out.reset(n)?;
        let mut free = vec![0.0f64; p];
        let mut finish = vec![0.0f64; n];
        let (gpus, order) = out.parts_mut();
        order.copy_from_slice(dag.topo_order());
        for &task in dag.topo_order() {
            let t = task as usize;
            let g = (0..p)
                .min_by(|&a, &b| free[a].total_cmp(&free[b]).then(a.cmp(&b)))
                .unwrap_or(0);
            let (preds, edges) = dag.preds(t);
            let ready = preds
                .iter()
                .zip(edges)
                .map(|(&s, &e)| {
                    let transfer = if usize::from(gpus[s as usize]) == g {
                        0.0
                    } else {
                        platform.transfer_ms(dag.edge_data(e), usize::from(gpus[s as usize]), g)
                    };
                    finish[s as usize] + transfer
                })
                .fold(0.0, f64::max);
            let start = ready.max(free[g]);
            finish[t] = start + platform.run_ms(t, dag.works_ms()[t], g);
            free[g] = finish[t];
            gpus[t] = g as u16;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_core::dag::{Bandwidth, Evaluator, GpuPool, TaskId};

    #[test]
    fn independent_tasks_go_round_the_free_gpus_whatever_their_speed() {
        let mut d: Dag<8, 8> = Dag::new();
        for _ in 0..4 {
            d.add_task(10.0).unwrap();
        }
        d.add_edge(TaskId(0), TaskId(3), 0.0).unwrap();
        d.seal().unwrap();
        let mut pool: GpuPool<4> = GpuPool::new(Bandwidth::Infinite);
        pool.add_gpu(1.0).unwrap();
        pool.add_gpu(0.1).unwrap();
        let mut plan = Plan::new();
        TopoList.plan(&d, &pool, &mut plan).unwrap();
        // 0 → GPU 0 (free at 0), 1 → GPU 1 (free at 0), 2 → GPU 0 (free at 10 < 100),
        // 3 → GPU 0 (free at 20 < 100).
        assert_eq!(plan.gpus(), [0, 1, 0, 0]);
        let mut ev: Evaluator<8, 4> = Evaluator::new();
        assert_eq!(ev.evaluate(&d, &pool, &plan).unwrap(), 100.0);
        let none: GpuPool<4> = GpuPool::default();
        assert_eq!(TopoList.plan(&d, &none, &mut plan), Err(PlanError::NoGpus));
    }
}
