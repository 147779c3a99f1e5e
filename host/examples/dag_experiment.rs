//! Scratch experiment (not committed).
#![allow(missing_docs)]
use gantry::dag::report::{PlannerKind, PlannerOptions, list_schedule};
use gantry::dag::{
    Format, GpuSpeeds, HostPlatform, LoadOptions, MAX_GPUS, MAX_TASKS, load, on_big_stack,
};
use gantry_core::dag::{
    Dag, Decoding, Evaluator, LocalSearchConfig, NoAdvisor, Plan, Platform, SeedPlans, Woa,
    WoaConfig,
};
use std::time::Instant;

fn run<const E: usize, M: Platform>(dag: &Dag<MAX_TASKS, E>, pf: &M, label: &str) {
    let opts = PlannerOptions::new(1);
    let mut plan = Box::new(Plan::<MAX_TASKS>::new());
    let mut ev = Box::new(Evaluator::<MAX_TASKS, MAX_GPUS>::new());
    let lb = ev.lower_bound(dag, pf).unwrap().ms();
    let mut best: Option<(f64, Box<Plan<MAX_TASKS>>, PlannerKind)> = None;
    let mut line = format!("{label:40} lb {lb:.1}");
    for k in PlannerKind::LIST_SCHEDULERS {
        list_schedule(k, dag, pf, &opts, &mut plan).unwrap();
        let ms = ev.evaluate(dag, pf, &plan).unwrap();
        line += &format!(" {}={:.4}", k.name(), ms / lb);
        if best.as_ref().is_none_or(|b| ms < b.0) {
            best = Some((ms, plan.clone(), k));
        }
    }
    let (bms, mut bp, _) = best.unwrap();
    if std::env::var("MODE").as_deref() == Ok("ls") {
        let mut ls = Box::new(gantry_core::dag::LocalSearch::<MAX_TASKS, MAX_GPUS>::new(
            LocalSearchConfig { candidates: 4 },
        ));
        let clock = Instant::now();
        let st = ls.improve(dag, pf, &mut bp, u64::MAX).unwrap();
        let el = clock.elapsed().as_secs_f64() * 1000.0;
        println!(
            "{line} | ls {:.4} of best: ev {} acc {} work {} opt {} {:.0} ms",
            st.final_ms / bms,
            st.evaluated,
            st.accepted,
            st.work,
            st.local_optimum,
            el
        );
        return;
    }
    let budgets: Vec<u64> = std::env::var("BUDGETS")
        .unwrap_or("2000000,20000000".into())
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    for &budget in &budgets {
        for seeded in [false, true] {
            let cfg = WoaConfig {
                iterations: u32::MAX,
                local_search: Some(LocalSearchConfig { candidates: 4 }),
                work_budget: Some(budget),
                key_noise_tasks: std::env::var("NOISE")
                    .ok()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(2.0),
                population: std::env::var("POP")
                    .ok()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(30),
                ..WoaConfig::new(1)
            }
            .with_decoding(Decoding::EftInsertion);
            let clock = Instant::now();
            let (ms, work) = if seeded {
                let mut seeds = Box::new(SeedPlans::<MAX_TASKS, 5>::new(0));
                for k in PlannerKind::LIST_SCHEDULERS {
                    list_schedule(k, dag, pf, &opts, &mut plan).unwrap();
                    seeds.push(&plan).unwrap();
                }
                let mut woa = Box::new(Woa::<64, MAX_TASKS, MAX_GPUS, _>::new(cfg, *seeds));
                let ms = woa.run(dag, pf).unwrap();
                (ms, woa.work())
            } else {
                let mut woa = Box::new(Woa::<64, MAX_TASKS, MAX_GPUS, _>::new(cfg, NoAdvisor));
                let ms = woa.run(dag, pf).unwrap();
                (ms, woa.work())
            };
            let el = clock.elapsed().as_secs_f64() * 1000.0;
            line += &format!(
                " | B{budget:e} {} {:.4} ({:.0}ms, {:.0}u/ms)",
                if seeded { "S" } else { "N" },
                ms / bms,
                el,
                work as f64 / el
            );
        }
    }
    println!("{line}");
}

fn main() {
    let traces = std::path::PathBuf::from("../shared/traces");
    let worl = traces.join("worl-rtgs-alibaba");
    let args: Vec<String> = std::env::args().collect();
    let max_n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mut rows: Vec<(String, std::path::PathBuf, LoadOptions)> = vec![];
    for n in [100usize, 1000, 10000] {
        if n > max_n {
            continue;
        }
        for gpus in [50usize, 500] {
            for d in [1u32, 3, 100] {
                let mut o = LoadOptions::new(Format::Worl);
                (o.gpus, o.degree) = (gpus, d);
                o.speeds = GpuSpeeds::WorlCsv(worl.join("GPU.csv"));
                rows.push((
                    format!("worl{n} {gpus} {d}"),
                    worl.join(format!("instance{n}.csv")),
                    o,
                ));
            }
        }
    }
    for size in ["2g", "10g", "100g"] {
        let mut o = LoadOptions::new(Format::Tpch);
        (o.gpus, o.speeds) = (10, GpuSpeeds::WorlCsv(worl.join("GPU.csv")));
        rows.push((
            format!("tpch {size}"),
            traces.join(format!("decima-tpch/tpch_{size}.json")),
            o,
        ));
    }
    for f in [
        "rand0000", "rand0001", "rand0002", "rand0003", "rand0004", "rand0005", "rand0151",
        "sample04",
    ] {
        let mut o = LoadOptions::new(Format::Stg);
        (o.gpus, o.speeds) = (4, GpuSpeeds::WorlCsv(worl.join("GPU.csv")));
        rows.push((
            format!("stg {f}"),
            traces.join(format!("stg-heft-dags/stg/{f}.stg")),
            o,
        ));
    }
    rows.push((
        "matrix".into(),
        traces.join("stg-heft-dags/topcuoglu2002_canonical"),
        LoadOptions::new(Format::Matrix),
    ));
    let filter = std::env::var("FILTER").unwrap_or_default();
    for (label, path, o) in rows {
        if !label.contains(&filter) {
            continue;
        }
        let p = load(&path, &o).unwrap();
        on_big_stack(|| match &p.platform {
            HostPlatform::Pool(pool) => run(p.dag.as_ref(), pool.as_ref(), &label),
            HostPlatform::Table(t) => run(p.dag.as_ref(), t.as_ref(), &label),
        });
    }
}
