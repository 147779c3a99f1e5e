// woa_eval.cu — evaluate P plans of one DAG in parallel, with exactly the list-scheduling
// semantics of gantry-core's `Evaluator::evaluate_parts` (core/src/dag/eval.rs):
//
//   visit tasks in the plan's order; for task t on GPU g:
//     ready  = max over preds s of (finish[s] + (gpu[s] != g ? transfer[edge] : 0))
//     start  = max(ready, gpu_free[g])
//     finish = start + run(t, g)          gpu_free[g] = finish
//   makespan = max finish (0 for no task)
//
// Arithmetic: IEEE-754 binary64 with one rounding per operation, the same operations in the
// same order as the CPU. Only add, divide and max occur: add and divide are correctly rounded
// on both sides (written as __dadd_rn / __ddiv_rn so no compiler flag can contract or
// approximate them; the host also compiles with --fmad=false), and max is exact and
// order-independent, so the per-warp variant may reduce the predecessors in any order.
// Transfer times (data / bandwidth) are computed once on the host by the core's own
// `Bandwidth::transfer_ms`, so the kernel never divides by the bandwidth. Hence GPU and CPU
// makespans are bit-identical, not merely close.
//
// Validation mirrors the CPU's, in the same order, and reports the first problem of each plan
// in status[3*p .. 3*p+3] = (code, a, b):
//   0 OK · 1 unknown task (a = task) · 2 duplicate task (a = task)
//   3 unknown GPU (a = task, b = gpu) · 4 precedence violated (a = task, b = pred)
// "Not yet finished" is the sentinel finish = -1 (every real finish time is >= 0).
//
// Run time: pool mode (use_table == 0) run = work[t] / speed[g]; table mode
// run = run_table[t * gpus + g], a task × GPU table built on the host from the platform.
//
// Two variants:
//  - eval_per_thread: one plan per thread. Plans and scratch are TASK-MAJOR ([task][plan]),
//    so when the plans share one order (WOA: every whale uses the HEFT rank order) a warp
//    reads consecutive addresses at every step. Per-plan orders work too (less coalesced).
//  - eval_per_warp: one plan per warp of 32 lanes; lanes split each task's predecessors and
//    reduce with warp shuffles. Plans and scratch are PLAN-MAJOR ([plan][task]). Pays off on
//    high fan-in DAGs (WORL degree 100), wastes lanes at fan-in 1–3.
// transpose_u16 / transpose_u32 turn the host's plan-major [plans][tasks] arrays into
// task-major ones on the device.

#define GANTRY_NOT_DONE (-1.0)

enum {
    STATUS_OK = 0,
    STATUS_UNKNOWN_TASK = 1,
    STATUS_DUPLICATE_TASK = 2,
    STATUS_UNKNOWN_GPU = 3,
    STATUS_PRECEDENCE = 4,
};

__device__ __forceinline__ void gantry_fail(unsigned int* status, unsigned int p, unsigned int code,
                                            unsigned int a, unsigned int b) {
    status[3 * (size_t)p] = code;
    status[3 * (size_t)p + 1] = a;
    status[3 * (size_t)p + 2] = b;
}

__device__ __forceinline__ double gantry_run_ms(const double* __restrict__ work,
                                                const double* __restrict__ speed,
                                                const double* __restrict__ run_table, int use_table,
                                                unsigned int gpus, unsigned int t, unsigned int g) {
    if (use_table) {
        return run_table[(size_t)t * gpus + g];
    }
    return __ddiv_rn(work[t], speed[g]);
}

extern "C" __global__ void eval_per_thread(
    const unsigned int* __restrict__ pred_first,   // [tasks + 1] CSR offsets
    const unsigned int* __restrict__ pred_src,     // [edges] predecessor task
    const double* __restrict__ pred_transfer,      // [edges] transfer ms when on another GPU
    const double* __restrict__ work,               // [tasks] reference work ms (pool mode)
    const double* __restrict__ speed,              // [gpus] speeds (pool mode)
    const double* __restrict__ run_table,          // [tasks][gpus] run ms (table mode)
    int use_table,
    unsigned int tasks, unsigned int gpus, unsigned int plans,
    const unsigned short* __restrict__ plan_gpu,   // [tasks][plans]
    const unsigned int* __restrict__ plan_order,   // shared: [tasks]; else [tasks][plans]
    int shared_order,
    double* __restrict__ finish,                   // scratch [tasks][plans]
    double* __restrict__ gpu_free,                 // scratch [gpus][plans]
    double* __restrict__ makespan,                 // [plans]
    unsigned int* __restrict__ status)             // [plans][3]
{
    const unsigned int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= plans) {
        return;
    }
    const size_t np = plans;
    for (unsigned int t = 0; t < tasks; ++t) {
        finish[t * np + p] = GANTRY_NOT_DONE;
    }
    for (unsigned int g = 0; g < gpus; ++g) {
        gpu_free[g * np + p] = 0.0;
    }
    makespan[p] = 0.0;
    double ms = 0.0;
    for (unsigned int k = 0; k < tasks; ++k) {
        const unsigned int t = shared_order ? plan_order[k] : plan_order[k * np + p];
        if (t >= tasks) {
            gantry_fail(status, p, STATUS_UNKNOWN_TASK, t, 0);
            return;
        }
        if (finish[t * np + p] >= 0.0) {
            gantry_fail(status, p, STATUS_DUPLICATE_TASK, t, 0);
            return;
        }
        const unsigned int g = plan_gpu[t * np + p];
        if (g >= gpus) {
            gantry_fail(status, p, STATUS_UNKNOWN_GPU, t, g);
            return;
        }
        double ready = 0.0;
        const unsigned int end = pred_first[t + 1];
        for (unsigned int j = pred_first[t]; j < end; ++j) {
            const unsigned int s = pred_src[j];
            double arrive = finish[s * np + p];
            if (arrive < 0.0) {
                gantry_fail(status, p, STATUS_PRECEDENCE, t, s);
                return;
            }
            if (plan_gpu[s * np + p] != g) {
                arrive = __dadd_rn(arrive, pred_transfer[j]);
            }
            ready = fmax(ready, arrive);
        }
        const double start = fmax(ready, gpu_free[g * np + p]);
        const double done =
            __dadd_rn(start, gantry_run_ms(work, speed, run_table, use_table, gpus, t, g));
        finish[t * np + p] = done;
        gpu_free[g * np + p] = done;
        ms = fmax(ms, done);
    }
    makespan[p] = ms;
    gantry_fail(status, p, STATUS_OK, 0, 0);
}

extern "C" __global__ void eval_per_warp(
    const unsigned int* __restrict__ pred_first,
    const unsigned int* __restrict__ pred_src,
    const double* __restrict__ pred_transfer,
    const double* __restrict__ work,
    const double* __restrict__ speed,
    const double* __restrict__ run_table,
    int use_table,
    unsigned int tasks, unsigned int gpus, unsigned int plans,
    const unsigned short* __restrict__ plan_gpu,   // [plans][tasks]
    const unsigned int* __restrict__ plan_order,   // shared: [tasks]; else [plans][tasks]
    int shared_order,
    double* __restrict__ finish,                   // scratch [plans][tasks]
    double* __restrict__ gpu_free,                 // scratch [plans][gpus]
    double* __restrict__ makespan,                 // [plans]
    unsigned int* __restrict__ status)             // [plans][3]
{
    const unsigned int full = 0xffffffffu;
    const unsigned int lane = threadIdx.x & 31u;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= plans) {
        return;  // uniform across the warp: blockDim.x is a multiple of 32
    }
    const unsigned int p = (unsigned int)warp;
    const unsigned short* gp = plan_gpu + warp * tasks;
    const unsigned int* order = shared_order ? plan_order : plan_order + warp * tasks;
    double* fin = finish + warp * tasks;
    double* free_at = gpu_free + warp * gpus;
    for (unsigned int t = lane; t < tasks; t += 32) {
        fin[t] = GANTRY_NOT_DONE;
    }
    for (unsigned int g = lane; g < gpus; g += 32) {
        free_at[g] = 0.0;
    }
    if (lane == 0) {
        makespan[p] = 0.0;
    }
    __syncwarp(full);
    double ms = 0.0;
    for (unsigned int k = 0; k < tasks; ++k) {
        const unsigned int t = order[k];  // same for every lane
        if (t >= tasks) {
            if (lane == 0) gantry_fail(status, p, STATUS_UNKNOWN_TASK, t, 0);
            return;
        }
        if (fin[t] >= 0.0) {
            if (lane == 0) gantry_fail(status, p, STATUS_DUPLICATE_TASK, t, 0);
            return;
        }
        const unsigned int g = gp[t];
        if (g >= gpus) {
            if (lane == 0) gantry_fail(status, p, STATUS_UNKNOWN_GPU, t, g);
            return;
        }
        double ready = 0.0;
        unsigned int bad = 0xffffffffu;  // lowest CSR index of an unfinished predecessor
        const unsigned int end = pred_first[t + 1];
        for (unsigned int j = pred_first[t] + lane; j < end; j += 32) {
            const unsigned int s = pred_src[j];
            double arrive = fin[s];
            if (arrive < 0.0) {
                bad = min(bad, j);
            } else {
                if (gp[s] != g) {
                    arrive = __dadd_rn(arrive, pred_transfer[j]);
                }
                ready = fmax(ready, arrive);
            }
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            ready = fmax(ready, __shfl_xor_sync(full, ready, offset));
            bad = min(bad, __shfl_xor_sync(full, bad, offset));
        }
        if (bad != 0xffffffffu) {
            if (lane == 0) gantry_fail(status, p, STATUS_PRECEDENCE, t, pred_src[bad]);
            return;
        }
        const double start = fmax(ready, free_at[g]);
        const double done =
            __dadd_rn(start, gantry_run_ms(work, speed, run_table, use_table, gpus, t, g));
        if (lane == 0) {
            fin[t] = done;
            free_at[g] = done;
        }
        __syncwarp(full);  // lane 0's writes visible to every lane before the next task
        ms = fmax(ms, done);
    }
    if (lane == 0) {
        makespan[p] = ms;
        gantry_fail(status, p, STATUS_OK, 0, 0);
    }
}

// Tiled transpose [rows][cols] -> [cols][rows] through shared memory (32×32 tiles, 32×8
// threads per block), for turning plan-major plans into the task-major layout.
#define GANTRY_TILE 32
#define GANTRY_ROWS_PER_PASS 8

#define GANTRY_TRANSPOSE(NAME, TYPE)                                                          \
    extern "C" __global__ void NAME(const TYPE* __restrict__ in, TYPE* __restrict__ out,      \
                                    unsigned int rows, unsigned int cols) {                   \
        __shared__ TYPE tile[GANTRY_TILE][GANTRY_TILE + 1];                                   \
        unsigned int x = blockIdx.x * GANTRY_TILE + threadIdx.x;                              \
        unsigned int y = blockIdx.y * GANTRY_TILE + threadIdx.y;                              \
        for (unsigned int i = 0; i < GANTRY_TILE; i += GANTRY_ROWS_PER_PASS) {                \
            if (x < cols && y + i < rows) {                                                   \
                tile[threadIdx.y + i][threadIdx.x] = in[(size_t)(y + i) * cols + x];          \
            }                                                                                 \
        }                                                                                     \
        __syncthreads();                                                                      \
        x = blockIdx.y * GANTRY_TILE + threadIdx.x;                                           \
        y = blockIdx.x * GANTRY_TILE + threadIdx.y;                                           \
        for (unsigned int i = 0; i < GANTRY_TILE; i += GANTRY_ROWS_PER_PASS) {                \
            if (x < rows && y + i < cols) {                                                   \
                out[(size_t)(y + i) * rows + x] = tile[threadIdx.x][threadIdx.y + i];         \
            }                                                                                 \
        }                                                                                     \
    }

GANTRY_TRANSPOSE(transpose_u16, unsigned short)
GANTRY_TRANSPOSE(transpose_u32, unsigned int)
