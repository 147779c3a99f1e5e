// woa_eval_main.cpp — runs kernels/woa_eval.cu on the CPU (through cuda_on_cpu.h) with the
// launch shapes of the host (host/src/gpu/cuda.rs, CudaBatch::evaluate_chunk), so the
// kernels' semantics can be checked against the core evaluator without a GPU.
//
//   woa_eval_emu INPUT OUTPUT
//
// INPUT (little-endian): "GEMU0001", then u32 tasks, gpus, plans, edges, use_table,
// shared_order, variant (0 per-thread, 1 per-warp), block_threads; then u32 pred_first[T+1],
// u32 pred_src[E], f64 pred_transfer[E], f64 work[T or 0], f64 speed[G or 0],
// f64 run_table[T·G or 0], u16 plan_gpu[P·T] (plan-major), u32 plan_order[T or P·T].
// OUTPUT: f64 makespan[P], u32 status[3·P]. Exit 0, or 2 on bad input, 3 on an emulation
// error (divergent barrier, deadlock) with a message on stderr.
#include "cuda_on_cpu.h"
#include "woa_eval.cu"

#include <string>

namespace {

[[noreturn]] void bad_input(const std::string& what) {
    fprintf(stderr, "woa_eval_emu: %s\n", what.c_str());
    exit(2);
}

struct Reader {
    FILE* f;
    template <class T>
    std::vector<T> read(size_t n, const char* what) {
        std::vector<T> v(n > 0 ? n : 1);
        if (n > 0 && fread(v.data(), sizeof(T), n, f) != n) bad_input(std::string("short ") + what);
        return v;
    }
    uint32_t u32(const char* what) { return read<uint32_t>(1, what)[0]; }
};

// The transpose launch of host/src/gpu/cuda.rs `transpose`: rows × cols → cols × rows.
template <class T, class K>
void transpose(K kernel, const std::vector<T>& in, std::vector<T>& out, unsigned rows,
               unsigned cols) {
    if (rows == 0 || cols == 0) return;
    const T* src = in.data();
    T* dst = out.data();
    gantry_emu::launch(dim3{(cols + 31) / 32, (rows + 31) / 32, 1}, dim3{32, 8, 1},
                       [=] { kernel(src, dst, rows, cols); });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) bad_input("usage: woa_eval_emu INPUT OUTPUT");
    FILE* in = fopen(argv[1], "rb");
    if (!in) bad_input(std::string("cannot open ") + argv[1]);
    Reader r{in};
    char magic[8];
    if (fread(magic, 1, 8, in) != 8 || memcmp(magic, "GEMU0001", 8) != 0) bad_input("bad magic");
    const unsigned tasks = r.u32("tasks"), gpus = r.u32("gpus"), plans = r.u32("plans");
    const unsigned edges = r.u32("edges"), use_table = r.u32("use_table");
    const unsigned shared_order = r.u32("shared_order"), variant = r.u32("variant");
    const unsigned block_threads = r.u32("block_threads");
    const size_t cells = size_t(plans) * tasks;
    auto pred_first = r.read<uint32_t>(tasks + 1, "pred_first");
    auto pred_src = r.read<uint32_t>(edges, "pred_src");
    auto pred_transfer = r.read<double>(edges, "pred_transfer");
    auto work = r.read<double>(use_table ? 0 : tasks, "work");
    auto speed = r.read<double>(use_table ? 0 : gpus, "speed");
    auto run_table = r.read<double>(use_table ? size_t(tasks) * gpus : 0, "run_table");
    auto plan_gpu = r.read<uint16_t>(cells, "plan_gpu");
    auto plan_order = r.read<uint32_t>(shared_order ? tasks : cells, "plan_order");
    fclose(in);

    std::vector<double> finish(cells > 0 ? cells : 1), gpu_free(size_t(plans) * gpus + 1);
    std::vector<double> makespan(plans + 1);
    std::vector<uint32_t> status(3 * size_t(plans) + 1);
    if (variant == 1) {
        const unsigned threads = 256;
        const unsigned blocks = unsigned((uint64_t(plans) * 32 + threads - 1) / threads);
        gantry_emu::launch(dim3{blocks, 1, 1}, dim3{threads, 1, 1}, [&] {
            eval_per_warp(pred_first.data(), pred_src.data(), pred_transfer.data(), work.data(),
                          speed.data(), run_table.data(), int(use_table), tasks, gpus, plans,
                          plan_gpu.data(), plan_order.data(), int(shared_order), finish.data(),
                          gpu_free.data(), makespan.data(), status.data());
        });
    } else {
        std::vector<uint16_t> gpu_t(plan_gpu.size());
        transpose(transpose_u16, plan_gpu, gpu_t, plans, tasks);
        std::vector<uint32_t> order_t;
        if (!shared_order) {
            order_t.resize(plan_order.size());
            transpose(transpose_u32, plan_order, order_t, plans, tasks);
        }
        const uint32_t* orders = shared_order ? plan_order.data() : order_t.data();
        const unsigned threads = block_threads < 32 ? 32 : block_threads > 1024 ? 1024 : block_threads;
        gantry_emu::launch(dim3{(plans + threads - 1) / threads, 1, 1}, dim3{threads, 1, 1}, [&] {
            eval_per_thread(pred_first.data(), pred_src.data(), pred_transfer.data(), work.data(),
                            speed.data(), run_table.data(), int(use_table), tasks, gpus, plans,
                            gpu_t.data(), orders, int(shared_order), finish.data(),
                            gpu_free.data(), makespan.data(), status.data());
        });
    }

    FILE* out = fopen(argv[2], "wb");
    if (!out) bad_input(std::string("cannot write ") + argv[2]);
    const bool ok = fwrite(makespan.data(), sizeof(double), plans, out) == plans &&
                    fwrite(status.data(), sizeof(uint32_t), 3 * size_t(plans), out) == 3 * size_t(plans);
    if (fclose(out) != 0 || !ok) bad_input(std::string("cannot write ") + argv[2]);
    fprintf(stderr, "woa_eval_emu: %u plans, %llu fiber switches\n", plans, gantry_emu::runtime.switches);
    return 0;
}
