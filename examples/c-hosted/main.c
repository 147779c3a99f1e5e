/*
 * gantry from C on a Linux host (x86-64 or aarch64): the static library of core/ffi, the
 * header core/ffi/include/gantry.h, no heap used by gantry.
 *
 *   make            # builds the library with cargo, then this program; `make run` runs it
 *
 * It checks which order and placer the library holds, submits jobs, fails a GPU, follows
 * the order's review times with ticks, checkpoints and restores the scheduler, and goes on
 * (a job finishes, the GPU is repaired). It prints every decision; it exits non-zero on any
 * unexpected status. Plain C99 and stdio only (no <inttypes.h> formats, which some embedded
 * C libraries lack), so the same file runs on a Cortex-M4F (examples/c-m4f).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gantry.h"

static uint8_t storage[GANTRY_SCHEDULER_STORAGE_BYTES]
    __attribute__((aligned(GANTRY_SCHEDULER_ALIGN)));
/* The restore target: a snapshot is decoded and checked there before it replaces the state. */
static uint8_t scratch_storage[GANTRY_SCHEDULER_STORAGE_BYTES]
    __attribute__((aligned(GANTRY_SCHEDULER_ALIGN)));
static uint8_t snapshot[GANTRY_SNAPSHOT_BYTES];
static GantryDecision decisions[GANTRY_MAX_DECISIONS];

static int expect(GantryStatus st, const char *what) {
    if (st != GANTRY_STATUS_OK) {
        fprintf(stderr, "%s: status %d\n", what, (int)st);
        return -1;
    }
    return 0;
}

static void print_decisions(uint64_t now, size_t n) {
    size_t i, g;
    for (i = 0; i < n; i++) {
        const GantryDecision *d = &decisions[i];
        switch (d->kind) {
        case GANTRY_DECISION_START:
            printf("%llu ms: start job %lu on", (unsigned long long)now, (unsigned long)d->job);
            for (g = 0; g < d->gpu_count; g++) {
                printf(" %u", (unsigned)d->gpus[g]);
            }
            printf("\n");
            break;
        case GANTRY_DECISION_PREEMPT:
            printf("%llu ms: preempt job %lu\n", (unsigned long long)now, (unsigned long)d->job);
            break;
        default:
            printf("%llu ms: reject job %lu\n", (unsigned long long)now, (unsigned long)d->job);
            break;
        }
    }
}

static int handle(GantryScheduler *s, uint64_t now, const GantryEvent *event) {
    size_t n = 0;
    GantryError error;
    GantryStatus st = gantry_handle(s, now, event, decisions, GANTRY_MAX_DECISIONS, &n, NULL,
                                    &error);
    print_decisions(now, n);
    return expect(st, "handle");
}

int main(void) {
    GantryBuildInfo info;
    GantryConfig config;
    GantryScheduler *s = NULL;
    GantryScheduler *scratch = NULL;
    GantryEvent event;
    uint64_t now = 0, review = 0, restored_now = 0;
    size_t len = 0;
    uint32_t id;

    if (expect(gantry_build_info(&info), "build info") != 0) {
        return 1;
    }
    printf("gantry %s: %s + %s, %lu GPUs, %lu jobs, snapshot v%u\n", info.version, info.order,
           info.placer, (unsigned long)info.max_gpus, (unsigned long)info.max_jobs,
           (unsigned)info.snapshot_version);

    memset(&config, 0, sizeof config);
    config.racks = 1;
    config.machines_per_rack = 2;
    config.gpus_per_machine = 4;
    config.seed = 7;
    if (expect(gantry_scheduler_init(storage, sizeof storage, &config, &s, NULL), "init") != 0) {
        return 1;
    }

    /* Three jobs: 4, 2 and 4 GPUs on 8; the third waits. */
    memset(&event, 0, sizeof event);
    event.kind = GANTRY_EVENT_SUBMIT;
    for (id = 1; id <= 3; id++) {
        event.spec.id = id;
        event.spec.gpus = id == 2 ? 2 : 4;
        if (handle(s, now, &event) != 0) {
            return 1;
        }
    }

    /* GPU 0 fails under job 1. */
    now = 60000;
    memset(&event, 0, sizeof event);
    event.kind = GANTRY_EVENT_GPU_DOWN;
    event.gpu = 0;
    if (handle(s, now, &event) != 0) {
        return 1;
    }

    /* Follow the order's review times for a while. */
    memset(&event, 0, sizeof event);
    event.kind = GANTRY_EVENT_TICK;
    for (id = 0; id < 5; id++) {
        if (expect(gantry_next_review(s, &review), "next review") != 0) {
            return 1;
        }
        if (review == GANTRY_NO_REVIEW) {
            break;
        }
        now = review;
        if (handle(s, now, &event) != 0) {
            return 1;
        }
    }

    /* Checkpoint, then restore as after a power cycle. */
    if (expect(gantry_snapshot(s, snapshot, sizeof snapshot, &len), "snapshot") != 0) {
        return 1;
    }
    memset(storage, 0xA5, sizeof storage);
    if (expect(gantry_scheduler_init(storage, sizeof storage, &config, &s, NULL), "re-init") != 0 ||
        expect(gantry_scheduler_init(scratch_storage, sizeof scratch_storage, &config, &scratch,
                                     NULL),
               "scratch init") != 0 ||
        expect(gantry_restore(s, scratch, snapshot, len), "restore") != 0 ||
        expect(gantry_now(s, &restored_now), "now") != 0) {
        return 1;
    }
    printf("restored %lu bytes at %llu ms\n", (unsigned long)len, (unsigned long long)restored_now);
    if (restored_now != now) {
        fprintf(stderr, "restored time %llu != %llu\n", (unsigned long long)restored_now,
                (unsigned long long)now);
        return 1;
    }

    /* After the restore: job 2 finishes and GPU 0 is repaired, so the waiting job starts. */
    memset(&event, 0, sizeof event);
    event.kind = GANTRY_EVENT_FINISH;
    event.job = 2;
    if (handle(s, now + 1000, &event) != 0) {
        return 1;
    }
    memset(&event, 0, sizeof event);
    event.kind = GANTRY_EVENT_GPU_UP;
    event.gpu = 0;
    return handle(s, now + 2000, &event) == 0 ? 0 : 1;
}
