/*
 * A C firmware over gantry's C ABI (core/ffi, include/gantry.h): reads a frame stream of
 * events from a host file over semihosting (newlib's rdimon), answers every frame with the
 * same bytes as the Rust firmware (tests/firmware/src/main.rs), writes them to another file.
 *
 *   qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic \
 *     -semihosting-config enable=on,target=native,arg=fw,arg=EVENTS,arg=ANSWERS[,arg=N] -kernel ELF
 *
 * With N, after every N-th event the scheduler is checkpointed as an appliance that loses
 * power would be: snapshot into `snapshot`, the scheduler's storage wiped, the scheduler
 * initialised again from the stream's configuration and restored (decoded into a second,
 * scratch scheduler and swapped in once checked); the answers must not change.
 *
 * No heap is used by gantry: the scheduler lives in `storage`, sized by the header.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gantry.h"

#define IN_FRAME_BYTES 256

static uint8_t storage[GANTRY_SCHEDULER_STORAGE_BYTES]
    __attribute__((aligned(GANTRY_SCHEDULER_ALIGN)));
/* The restore target: a snapshot is decoded and checked here before it replaces the state. */
static uint8_t scratch_storage[GANTRY_SCHEDULER_STORAGE_BYTES]
    __attribute__((aligned(GANTRY_SCHEDULER_ALIGN)));
static GantryDecision decisions[GANTRY_MAX_DECISIONS];
static uint8_t frame[IN_FRAME_BYTES];
static uint8_t answer[GANTRY_MAX_FRAME_BYTES];

static uint8_t snapshot[GANTRY_SNAPSHOT_BYTES];

static GantryScheduler *scheduler;
static GantryScheduler *scratch;
static GantryConfig config;
static unsigned long faults;
static unsigned long restore_every;
static unsigned long events;
static unsigned long restores;
static size_t largest_snapshot;

static int emit(FILE *out, GantryStatus status, size_t len) {
    if (status != GANTRY_STATUS_OK) {
        fprintf(stderr, "encoding failed: status %d\n", (int)status);
        return -1;
    }
    return fwrite(answer, 1, len, out) == len ? 0 : -1;
}

static int emit_fault(FILE *out, uint32_t index, const GantryFault *fault) {
    size_t len = 0;
    faults++;
    return emit(out, gantry_frame_encode_fault(index, fault, answer, sizeof answer, &len), len);
}

/* Snapshot, power loss (the storage wiped), initialisation, restore. */
static int checkpoint(void) {
    size_t n = 0;
    GantryStatus st = gantry_snapshot(scheduler, snapshot, sizeof snapshot, &n);
    if (st != GANTRY_STATUS_OK) {
        fprintf(stderr, "snapshot failed: status %d\n", (int)st);
        return -1;
    }
    memset(storage, 0xA5, sizeof storage);
    st = gantry_scheduler_init(storage, sizeof storage, &config, &scheduler, NULL);
    if (st == GANTRY_STATUS_OK) {
        st = gantry_scheduler_init(scratch_storage, sizeof scratch_storage, &config, &scratch,
                                   NULL);
    }
    if (st == GANTRY_STATUS_OK) {
        st = gantry_restore(scheduler, scratch, snapshot, n);
    }
    if (st != GANTRY_STATUS_OK) {
        fprintf(stderr, "restore failed: status %d\n", (int)st);
        return -1;
    }
    restores++;
    largest_snapshot = n > largest_snapshot ? n : largest_snapshot;
    return 0;
}

/* Answers the inbound frame `index` (`len` bytes, delimiter excluded). */
static int answer_frame(FILE *out, uint32_t index, size_t len) {
    GantryInbound in;
    size_t n = 0;
    GantryStatus st = gantry_frame_decode(frame, len, &in);
    if (st == GANTRY_STATUS_FRAME_FAULT) {
        if (in.kind == GANTRY_INBOUND_HELLO) {
            scheduler = NULL; /* a header for another build ends the stream */
        }
        return emit_fault(out, index, &in.fault);
    }
    if (in.kind == GANTRY_INBOUND_HELLO) {
        GantryFault fault;
        config = in.config;
        st = gantry_scheduler_init(storage, sizeof storage, &config, &scheduler, &fault);
        if (st == GANTRY_STATUS_BAD_TOPOLOGY) {
            scheduler = NULL;
            return emit_fault(out, index, &fault);
        }
        if (st != GANTRY_STATUS_OK) {
            return -1;
        }
        return emit(out, gantry_frame_encode_ready(index, answer, sizeof answer, &n), n);
    }
    if (scheduler == NULL) {
        faults++;
        return emit(out, gantry_frame_encode_no_stream(index, answer, sizeof answer, &n), n);
    }
    size_t count = 0;
    GantryError error;
    st = gantry_handle(scheduler, in.now_ms, &in.event, decisions, GANTRY_MAX_DECISIONS, &count,
                       NULL, &error);
    const GantryError *refusal = st == GANTRY_STATUS_OK ? NULL : &error;
    if (st >= GANTRY_STATUS_NULL_POINTER) {
        return -1; /* misuse of the API, not a refusal */
    }
    if (emit(out,
             gantry_frame_encode_outcome(index, refusal, decisions, count, answer,
                                         sizeof answer, &n),
             n) != 0) {
        return -1;
    }
    events++;
    return restore_every > 0 && events % restore_every == 0 ? checkpoint() : 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s EVENTS ANSWERS [RESTORE_EVERY]\n",
                argc > 0 ? argv[0] : "gantry-c");
        return 2;
    }
    restore_every = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    FILE *in = fopen(argv[1], "rb");
    FILE *out = fopen(argv[2], "wb");
    if (in == NULL || out == NULL) {
        fprintf(stderr, "cannot open %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    uint32_t index = 0;
    unsigned long frames = 0;
    size_t len = 0;
    int too_long = 0;
    int c;
    while ((c = fgetc(in)) != EOF) {
        if (c != 0) {
            if (len < IN_FRAME_BYTES) {
                frame[len++] = (uint8_t)c;
            } else {
                too_long = 1; /* skip to the delimiter, then report it */
            }
            continue;
        }
        if (too_long) {
            GantryFault fault;
            gantry_frame_fault_too_long(IN_FRAME_BYTES, &fault);
            if (emit_fault(out, index++, &fault) != 0) return 1;
        } else if (len > 0) {
            if (answer_frame(out, index++, len) != 0) return 1;
        }
        frames += len > 0 || too_long;
        len = 0;
        too_long = 0;
    }
    if (too_long || len > 0) {
        GantryFault fault;
        if (too_long) {
            gantry_frame_fault_too_long(IN_FRAME_BYTES, &fault);
        } else {
            gantry_frame_fault_truncated((uint32_t)len, &fault);
        }
        if (emit_fault(out, index++, &fault) != 0) return 1;
        frames++;
    }
    fclose(out);
    printf("{\"c_frames\":%lu,\"c_faults\":%lu,\"c_scheduler_bytes\":%u,\"c_restores\":%lu,"
           "\"c_snapshot_bytes\":%u}\n",
           frames, faults, (unsigned)gantry_scheduler_size(), restores,
           (unsigned)largest_snapshot);
    return 0;
}
