//! Every text loader on seeded mutations of a valid input: it returns jobs or a typed error,
//! never panics, and the jobs it returns are within the loaders' bounds of duration and span.
//! The mutations are the mistakes and corruptions a trace meets: fields replaced by extreme or
//! malformed numbers, cut rows, duplicated rows, stray separators and quotes.

use gantry::cluster::Throughputs;
use gantry::trace::loaded::{MAX_JOB_DURATION_MS, MAX_TRACE_SPAN_MS};
use gantry::trace::{Loaded, TraceError, TraceJob};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Mutated inputs per loader.
const MUTATIONS: usize = 2_000;

/// What a mutation may put into the text.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e308",
    "1e-308",
    "nan",
    "inf",
    "-inf",
    "18446744073709551616",
    "4294967296",
    "65536",
    "1000000001",
    "9999999999999999999999",
    "0.5",
    ",",
    "\n",
    "\"",
    "",
    " ",
    "é",
    "2017-10-09 07:01:55",
    "9999-12-31 23:59:59",
    "1970-01-01 00:00:00",
    "{",
    "}",
    "[",
    "]",
    ":",
    "null",
    "true",
];

/// xorshift64* (Vigna), seeded per loader: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn token(&mut self) -> &'static str {
        TOKENS[self.below(TOKENS.len())]
    }
}

/// One to four edits of `base`: a cut, an inserted token, a field replaced by a token, a
/// truncation, or a duplicated row.
fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut text: Vec<char> = base.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(text.len() + 1);
        match rng.below(5) {
            0 => {
                let end = (at + 1 + rng.below(8)).min(text.len());
                text.drain(at.min(end)..end);
            }
            1 => {
                let token = rng.token();
                text.splice(at..at, token.chars());
            }
            2 => {
                let end = text[at..]
                    .iter()
                    .position(|&c| matches!(c, ',' | '\n' | '}'))
                    .map_or(text.len(), |p| at + p);
                let token = rng.token();
                text.splice(at..end, token.chars());
            }
            3 => text.truncate(at),
            _ => {
                let whole: String = text.iter().collect();
                let row = whole.lines().nth(1).unwrap_or("").to_string();
                text.splice(at..at, row.chars().chain(['\n']));
            }
        }
    }
    text.into_iter().collect()
}

/// Calls `parse` on [`MUTATIONS`] mutations of `base`, seeded from `name`, with each
/// mutation's number and text; fails, naming the input, if a call panics.
fn each_mutation<T>(
    name: &str,
    base: &str,
    parse: impl Fn(&str) -> T,
    mut check: impl FnMut(usize, &str, T),
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.bytes().map(u64::from).sum::<u64>());
    for i in 0..MUTATIONS {
        let input = mutate(&mut rng, base);
        let Ok(result) = catch_unwind(AssertUnwindSafe(|| parse(&input))) else {
            panic!("{name}: mutation {i} panicked the loader; its input:\n{input}");
        };
        check(i, &input, result);
    }
}

/// Runs a trace loader on the mutations of `base` ([`each_mutation`]); fails on a job beyond
/// the bounds of duration and span (a job of 0 GPUs may load: the simulator refuses it), and
/// when hardly any mutation loads (the bounds would go untested).
fn mutate_through(
    name: &str,
    base: &str,
    parse: impl Fn(&str) -> Result<Vec<TraceJob>, TraceError>,
) {
    assert!(parse(base).is_ok(), "{name}: the unmutated input must load");
    let mut loaded = 0;
    each_mutation(name, base, parse, |i, input, result| {
        let Ok(jobs) = result else { return };
        loaded += 1;
        for job in &jobs {
            assert!(
                job.duration_ms <= MAX_JOB_DURATION_MS && job.submit_ms <= MAX_TRACE_SPAN_MS,
                "{name}: mutation {i} loaded {job:?} from:\n{input}"
            );
        }
    });
    assert!(
        loaded > MUTATIONS / 100,
        "{name}: only {loaded} of {MUTATIONS} mutations loaded"
    );
}

fn jobs(loaded: Result<Loaded, TraceError>) -> Result<Vec<TraceJob>, TraceError> {
    loaded.map(|l| l.jobs)
}

#[test]
fn every_loader_returns_jobs_or_an_error_on_mutated_input() {
    let philly = "timestamp,duration,num_gpus,gpu_time,cluster\n\
                  2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\
                  2017-10-09 06:13:03,2951.0,4,11804.0,6214e9\n\
                  2017-10-09 08:00:00,120.5,8,964.0,6214e9\n";
    let elasticflow = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n\
                       a,3715485,3249,deepspeech2,3716178,32,1,1075\n\
                       b,3717550,48266,inception3,3720405,64,8,3604\n\
                       c,3717600,100,resnet50,,64,2,60\n";
    let chronus = "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type\n\
                   0,vc_6214e9,1,8555,5049,vgg16,747,14,1105,10,0,strict\n\
                   1,vc_ed69ec,2,832,296,mobilenet_v2,98,8,128,10,1,strict\n\
                   2,vc_ed69ec,4,900,296,resnet50,300,8,600,10,0,strict\n";
    let hydra = ",job_name,norm_job_submit_time,ddl,A100,V100,GTX2080Ti\n\
                 0,99295a626a36dc3a91758d47,0,inf,1020.0,1540.0,2595.0\n\
                 1,4bb1767ba629f8c0de3acbfb,0,9000,5384.0,8235.0,10278.0\n\
                 2,4bb1767ba629f8c0de3acbfc,10,inf,50.0,80.0,100.0\n";
    let tiresias = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n\
                    0,1,0,606,vgg19,164,30\n\
                    1,8,30,133,vgg11,147,23\n\
                    2,2,31,10,resnet50,20,5\n";
    let alibaba = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                   openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n\
                   openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n\
                   openb-pod-0002,6000,12288,2,1000,V100M16,BE,Succeeded,500000,600000,510000\n";
    let mixed = r#"{"submit_s":0,"duration_s":1825,"gpus":1,"model":"A3C"}
{"submit_s":17,"duration_s":4058,"gpus":4,"deadline_s":12000,"model":"LM (batch size 20)"}
{"submit_s":40,"duration_s":900,"gpus":2,"dag":{"tasks":[{"work_s":600,"model":"A3C"},{"work_s":1200,"model":"CycleGAN"}],"edges":[[0,1,512.5]]}}
"#;
    let table = Throughputs::gavel();
    mutate_through("philly", philly, |s| {
        gantry::trace::philly::parse(s, "t", None)
    });
    mutate_through("elasticflow", elasticflow, |s| {
        jobs(gantry::trace::elasticflow::parse(s, "t", None))
    });
    mutate_through("chronus", chronus, |s| {
        jobs(gantry::trace::chronus::parse(s, "t", None))
    });
    mutate_through("hydra", hydra, |s| {
        jobs(gantry::trace::hydra::parse(s, "t", None))
    });
    mutate_through("tiresias", tiresias, |s| {
        jobs(gantry::trace::tiresias::parse(s, "t", None))
    });
    mutate_through("alibaba", alibaba, |s| {
        jobs(gantry::trace::alibaba::parse(s, "t", None))
    });
    mutate_through("mixed", mixed, |s| {
        gantry::mixed::format::parse(s, "t", &table, None).map(|m| m.jobs)
    });
}

#[test]
fn the_terms_loader_returns_terms_or_an_error_on_mutated_input() {
    let base = "preemption,time_limit_s\ncheckpointing,60\nnever,\nnever,300\n";
    each_mutation(
        "terms",
        base,
        |s| gantry::trace::terms::parse(s, "t", 3),
        |_, _, _| {},
    );
}

#[test]
fn the_cluster_file_returns_a_cluster_or_an_error_on_mutated_input() {
    let base = "racks = 2\nmachines_per_rack = 2\ngpus_per_machine = 4\n\n[gpu_types]\nv100 = \"0-1\"\nk80 = \"2+3\"\n";
    each_mutation(
        "cluster file",
        base,
        |s| gantry::cluster::file::parse(s, "c.toml", None),
        |_, _, _| {},
    );
}
