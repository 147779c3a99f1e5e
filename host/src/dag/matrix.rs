//! HEFT cost matrices (`--format matrix`), as in `topcuoglu2002_canonical/` (copied from the
//! mackncheesiest/heft tests; numbers of Fig. 2 in Topcuoglu, Hariri, Wu 2002). The input is a
//! folder with three CSV files, found by suffix:
//! - `*task_exe_time.csv`: header `TP,P_0,…`, one row per task: run time on each GPU;
//! - `*task_connectivity.csv`: header `T,T0,…`, a task × task matrix: entry (i, j) > 0 is the
//!   communication cost of edge i → j at unit bandwidth, 0 = no edge;
//! - `*resource_BW.csv`: a GPU × GPU bandwidth matrix. Off-diagonal entries must all be equal
//!   and positive (the core models one bandwidth; the diagonal is ignored), giving
//!   `transfer = cost / bandwidth` between different GPUs and 0 on the same GPU.
//!
//! GPU g gets its own type g in a cost table, so at most [`MAX_TYPES`] GPUs.

use super::error::{At, DagLoadError, file_name, read};
use super::{HostDag, HostPlatform, HostTable, MAX_TYPES, Problem};
use gantry_core::dag::{Bandwidth, TaskId};
use std::path::{Path, PathBuf};

/// A parsed numeric CSV matrix: row labels dropped, cells with their line numbers.
struct Matrix {
    file: String,
    rows: Vec<(usize, Vec<f64>)>,
    columns: usize,
}

fn find(dir: &Path, suffix: &str) -> Result<PathBuf, DagLoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| DagLoadError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut hits: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    hits.sort();
    hits.into_iter().next().ok_or_else(|| DagLoadError::Field {
        file: dir.display().to_string(),
        line: 0,
        field: "folder".into(),
        problem: format!("no file ending in `{suffix}`"),
    })
}

/// Line 1 (the header) of a matrix file.
fn head(m: &Matrix) -> At<'_> {
    At {
        file: &m.file,
        line: 1,
    }
}

fn parse(path: &Path) -> Result<Matrix, DagLoadError> {
    let file = file_name(path);
    let text = read(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let columns = lines
        .next()
        .map(|(_, h)| h.split(',').count().saturating_sub(1))
        .unwrap_or(0);
    let mut rows = Vec::new();
    for (i, line) in lines {
        let at = At {
            file: &file,
            line: i + 1,
        };
        let cells: Vec<&str> = line.split(',').skip(1).collect();
        if cells.len() != columns {
            return Err(at.err(
                "row",
                format!("{} values, header has {columns}", cells.len()),
            ));
        }
        let values = cells
            .iter()
            .enumerate()
            .map(|(c, v)| {
                let x: f64 = at.num(&format!("column {}", c + 1), v)?;
                if x.is_finite() && x >= 0.0 {
                    Ok(x)
                } else {
                    Err(at.err(
                        &format!("column {}", c + 1),
                        format!("{x} is not finite ≥ 0"),
                    ))
                }
            })
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push((i + 1, values));
    }
    Ok(Matrix {
        file,
        rows,
        columns,
    })
}

/// Load a matrix folder into a [`Problem`] (must run on the big stack; use [`super::load`]).
pub(crate) fn load(dir: &Path) -> Result<Problem, DagLoadError> {
    let exe = parse(&find(dir, "task_exe_time.csv")?)?;
    let conn = parse(&find(dir, "task_connectivity.csv")?)?;
    let bw = parse(&find(dir, "resource_BW.csv")?)?;
    let gpus = exe.columns;
    if gpus == 0 || gpus > MAX_TYPES {
        return Err(head(&exe).err("header", format!("{gpus} GPUs; need 1..={MAX_TYPES}")));
    }
    let tasks = exe.rows.len();
    if conn.columns != tasks || conn.rows.len() != tasks {
        return Err(head(&conn).err(
            "matrix",
            format!("must be {tasks} × {tasks} (tasks in the run-time file)"),
        ));
    }
    if bw.columns != gpus || bw.rows.len() != gpus {
        return Err(head(&bw).err(
            "matrix",
            format!("must be {gpus} × {gpus} (GPUs in the run-time file)"),
        ));
    }
    let mut bandwidth: Option<f64> = None;
    for (g, (line, row)) in bw.rows.iter().enumerate() {
        let at = At {
            file: &bw.file,
            line: *line,
        };
        for (h, &b) in row.iter().enumerate() {
            if g == h {
                continue;
            }
            match bandwidth {
                _ if b <= 0.0 => {
                    return Err(at.err(&format!("column {}", h + 1), "bandwidth must be > 0"));
                }
                Some(x) if x != b => {
                    return Err(at.err(
                        &format!("column {}", h + 1),
                        format!("{b} differs from {x}: only a uniform bandwidth is modelled"),
                    ));
                }
                _ => bandwidth = Some(b),
            }
        }
    }
    let mut dag = Box::new(HostDag::new());
    let mut table = Box::new(HostTable::new(Bandwidth::Infinite));
    if let Some(b) = bandwidth {
        table
            .set_bandwidth(Bandwidth::PerMs(b))
            .map_err(|e| head(&bw).err("matrix", e))?;
    }
    for (t, (line, row)) in exe.rows.iter().enumerate() {
        let at = At {
            file: &exe.file,
            line: *line,
        };
        dag.add_task(0.0).map_err(|e| at.err("task", e))?;
        for (g, &c) in row.iter().enumerate() {
            table
                .set_run_ms(t, g, c)
                .map_err(|e| at.err(&format!("column {}", g + 1), e))?;
        }
    }
    for g in 0..gpus {
        table.add_gpu(g).map_err(|e| head(&exe).err("header", e))?;
    }
    for (i, (line, row)) in conn.rows.iter().enumerate() {
        let at = At {
            file: &conn.file,
            line: *line,
        };
        for (j, &c) in row.iter().enumerate() {
            if c > 0.0 {
                dag.add_edge(TaskId(i as u32), TaskId(j as u32), c)
                    .map_err(|e| at.err(&format!("column {}", j + 1), e))?;
            }
        }
    }
    dag.seal().map_err(|e| head(&conn).err("dag", e))?;
    Ok(Problem {
        name: file_name(dir),
        dag,
        platform: HostPlatform::Table(table),
        time_unit: "file units",
    })
}

#[cfg(test)]
mod tests {
    use crate::dag::{Format, LoadOptions, PlannerKind, PlannerOptions, run_planners};

    #[test]
    fn golden_heft_80_through_the_matrix_loader() {
        let Some(dir) = crate::test_support::shared("traces/stg-heft-dags/topcuoglu2002_canonical")
        else {
            return;
        };
        let p = crate::dag::load(&dir, &LoadOptions::new(Format::Matrix)).unwrap();
        assert_eq!((p.dag.task_count(), p.dag.edge_count()), (10, 15));
        let reports = run_planners(
            &p,
            &[PlannerKind::Heft, PlannerKind::Woa, PlannerKind::Random],
            &PlannerOptions::new(1),
        )
        .unwrap();
        assert_eq!(reports[0].planner, "heft");
        assert_eq!(reports[0].own_makespan, Some(80.0));
        assert!(reports[0].makespan <= 80.0);
        assert_eq!(reports[0].gpus, 3);
        for r in &reports {
            assert!(r.lower_bound <= r.makespan, "{r:?}");
        }
    }

    #[test]
    fn non_uniform_bandwidth_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("g_task_exe_time.csv"), "TP,P_0,P_1\nT_0,1,2\n").unwrap();
        std::fs::write(dir.join("g_task_connectivity.csv"), "T,T0\nT0,0\n").unwrap();
        std::fs::write(
            dir.join("g_resource_BW.csv"),
            "P,P_0,P_1\nP_0,0,1\nP_1,2,0\n",
        )
        .unwrap();
        let err = crate::dag::load(dir, &LoadOptions::new(Format::Matrix)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "g_resource_BW.csv:3: column 1: 2 differs from 1: only a uniform bandwidth is modelled"
        );
    }
}
