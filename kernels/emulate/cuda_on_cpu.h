// cuda_on_cpu.h — just enough of CUDA C to run gantry's kernels on a CPU, for testing their
// semantics where no GPU is present (CI). Not a general CUDA emulator.
//
// Each block runs on one OS thread; its threads are fibers (ucontext) scheduled round-robin.
// A thread runs until it reaches a barrier (__syncthreads, __syncwarp, a warp shuffle) or
// returns. When no thread can run, every warp whose 32 lanes all wait at a warp barrier is
// released, then the block barrier if every live thread waits there. Anything else — a warp
// barrier that some lanes left by returning, lanes of one warp at different barriers, a
// partial mask — is reported as a divergence error and the process exits with status 3.
// Blocks run one after another, so `__shared__` (a function-local static here) is per block.
//
// Arithmetic: __dadd_rn / __ddiv_rn are the C++ operators, which are IEEE-754 binary64 with
// one rounding on x86-64 and aarch64; build with -ffp-contract=off so nothing is fused.
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};

inline dim3 threadIdx, blockIdx, blockDim, gridDim;

inline double __dadd_rn(double a, double b) { return a + b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }

namespace gantry_emu {

[[noreturn]] inline void fail(const char* what) {
    fprintf(stderr, "cuda_on_cpu: %s (block %u,%u,%u thread %u,%u,%u)\n", what, blockIdx.x,
            blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    exit(3);
}

enum class State { Runnable, AtWarpBarrier, AtBlockBarrier, Done };

struct Fiber {
    ucontext_t context;
    dim3 index;
    State state = State::Runnable;
    unsigned int shuffle_phase = 0;
};

constexpr size_t kStackBytes = 64 * 1024;
constexpr unsigned int kWarp = 32;
constexpr unsigned int kFullMask = 0xffffffffu;

struct Runtime {
    ucontext_t scheduler;
    std::vector<Fiber> fibers;
    std::vector<std::vector<char>> stacks;
    std::vector<uint64_t> shuffle_slots;  // [warp][phase 0/1][lane]
    size_t current = 0;
    std::function<void()> kernel;
    unsigned long long switches = 0;
};

inline Runtime runtime;

inline void wait_at(State barrier) {
    Fiber& f = runtime.fibers[runtime.current];
    f.state = barrier;
    ++runtime.switches;
    if (swapcontext(&f.context, &runtime.scheduler) != 0) fail("swapcontext failed");
}

inline void fiber_main() {
    runtime.kernel();
    runtime.fibers[runtime.current].state = State::Done;
    // uc_link returns to the scheduler.
}

inline size_t linear_thread() { return runtime.current; }

inline void check_full_mask(unsigned int mask) {
    if (mask != kFullMask) fail("only full-warp masks are emulated");
}

// Release what can be released; false when nothing could (a deadlock or divergence).
inline bool release_barriers() {
    const size_t n = runtime.fibers.size();
    bool released = false;
    bool all_done = true;
    for (size_t w = 0; w * kWarp < n; ++w) {
        const size_t lo = w * kWarp, hi = lo + kWarp < n ? lo + kWarp : n;
        size_t at_warp = 0, done = 0;
        for (size_t i = lo; i < hi; ++i) {
            at_warp += runtime.fibers[i].state == State::AtWarpBarrier;
            done += runtime.fibers[i].state == State::Done;
        }
        if (done != hi - lo) all_done = false;
        if (at_warp == 0) continue;
        if (hi - lo != kWarp) fail("warp barrier in a partial warp");
        if (at_warp != kWarp) {
            runtime.current = lo;
            fail("warp barrier reached by only some lanes (divergence or early return)");
        }
        for (size_t i = lo; i < hi; ++i) runtime.fibers[i].state = State::Runnable;
        released = true;
    }
    if (released || all_done) return true;
    for (const Fiber& f : runtime.fibers) {
        if (f.state != State::AtBlockBarrier && f.state != State::Done) return false;
    }
    for (Fiber& f : runtime.fibers) {
        if (f.state == State::AtBlockBarrier) f.state = State::Runnable;
    }
    return true;
}

inline void run_block(dim3 block) {
    const size_t n = size_t(block.x) * block.y * block.z;
    runtime.fibers.assign(n, Fiber{});
    if (runtime.stacks.size() < n) runtime.stacks.resize(n);
    runtime.shuffle_slots.assign(((n + kWarp - 1) / kWarp) * 2 * kWarp, 0);
    for (size_t i = 0; i < n; ++i) {
        Fiber& f = runtime.fibers[i];
        f.index = dim3{unsigned(i % block.x), unsigned((i / block.x) % block.y),
                       unsigned(i / (size_t(block.x) * block.y))};
        runtime.stacks[i].resize(kStackBytes);
        if (getcontext(&f.context) != 0) fail("getcontext failed");
        f.context.uc_stack.ss_sp = runtime.stacks[i].data();
        f.context.uc_stack.ss_size = kStackBytes;
        f.context.uc_link = &runtime.scheduler;
        makecontext(&f.context, fiber_main, 0);
    }
    for (;;) {
        bool ran = false;
        for (size_t i = 0; i < n; ++i) {
            if (runtime.fibers[i].state != State::Runnable) continue;
            runtime.current = i;
            threadIdx = runtime.fibers[i].index;
            ++runtime.switches;
            if (swapcontext(&runtime.scheduler, &runtime.fibers[i].context) != 0) {
                fail("swapcontext failed");
            }
            ran = true;
        }
        bool all_done = true;
        for (const Fiber& f : runtime.fibers) all_done &= f.state == State::Done;
        if (all_done) return;
        if (!release_barriers() && !ran) fail("deadlock: threads wait at barriers that never open");
    }
}

// Launch `kernel` (a closure calling the __global__ function) on grid × block, blocks in order.
inline void launch(dim3 grid, dim3 block, std::function<void()> kernel) {
    runtime.kernel = std::move(kernel);
    gridDim = grid;
    blockDim = block;
    for (unsigned int z = 0; z < grid.z; ++z)
        for (unsigned int y = 0; y < grid.y; ++y)
            for (unsigned int x = 0; x < grid.x; ++x) {
                blockIdx = dim3{x, y, z};
                run_block(block);
            }
}

}  // namespace gantry_emu

inline void __syncthreads() { gantry_emu::wait_at(gantry_emu::State::AtBlockBarrier); }

inline void __syncwarp(unsigned int mask) {
    gantry_emu::check_full_mask(mask);
    gantry_emu::wait_at(gantry_emu::State::AtWarpBarrier);
}

// Every lane writes its value to this phase's slot, waits for the whole warp, then reads its
// partner's. Two alternating phases mean a fast lane's next write cannot clobber a slot a slow
// lane has yet to read (it would have to pass the next warp barrier first).
template <class T>
inline T __shfl_xor_sync(unsigned int mask, T value, int lane_mask) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a value wider than 64 bits");
    using namespace gantry_emu;
    check_full_mask(mask);
    const size_t tid = linear_thread();
    const size_t warp = tid / kWarp, lane = tid % kWarp;
    Fiber& self = runtime.fibers[tid];
    uint64_t* slots = &runtime.shuffle_slots[(warp * 2 + self.shuffle_phase) * kWarp];
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof(T));
    slots[lane] = bits;
    wait_at(State::AtWarpBarrier);
    const uint64_t other = slots[(lane ^ unsigned(lane_mask)) % kWarp];
    runtime.fibers[tid].shuffle_phase ^= 1;
    T out;
    memcpy(&out, &other, sizeof(T));
    return out;
}
