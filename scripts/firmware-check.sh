#!/usr/bin/env bash
# The core on a Cortex-M4F, and from C: builds the Rust firmware (tests/firmware), the
# examples (examples/m4f, examples/c-m4f) and the C firmware (tests/firmware/c over core/ffi,
# one build per pair), all linked for a realistic part (128 KiB of RAM, 512 KiB of flash);
# answers the committed real-trace streams (tests/firmware/streams) on x86 with the core
# alone (tests/firmware/reference: no host build), runs every stream under QEMU mps2-an386,
# compares every answer byte with x86's, measures size, stack per call, RAM, instructions,
# soft-float and the no-panic link (per pair), and prints one JSON object last. Fails on any
# differing byte, on a panic path reachable from construction or `handle` in any pair it
# checks, and on any figure over its budget (stack per call, RAM, flash, instructions).
#
#   scripts/firmware-check.sh            every order x placer pair the firmware builds
#   scripts/firmware-check.sh --ci       the pairs CI runs (TIAS+best-fit, LAS+best-fit, LAS+optimal)
#   scripts/firmware-check.sh --aarch64  also the C library for aarch64 Linux: examples/c-hosted
#                                        under qemu-aarch64 prints what it prints on x86
#   scripts/firmware-check.sh --record   first re-record the committed streams with the host
#                                        simulator (needs the host build: tract and all)
#
# Needs qemu-system-arm, gcc-arm-none-eabi + libnewlib-arm-none-eabi (and for --aarch64
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user); `--install` installs them with
# apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

MODE=all
AARCH64=0
INSTALL=0
RECORD=0
for arg in "$@"; do
    case "$arg" in
        --ci) MODE=ci ;;
        --aarch64) AARCH64=1 ;;
        --install) INSTALL=1 ;;
        --record) RECORD=1 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

log() { printf '[firmware-check %ss] %s\n' "$SECONDS" "$*" >&2; }

if [ "$INSTALL" = 1 ]; then
    packages="qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi"
    [ "$AARCH64" = 1 ] && packages="$packages gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
    missing=""
    for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
    if [ -n "$missing" ]; then
        log "installing$missing"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
    fi
fi
for tool in qemu-system-arm arm-none-eabi-gcc arm-none-eabi-nm arm-none-eabi-size arm-none-eabi-objdump; do
    command -v "$tool" >/dev/null || { echo "missing $tool (run with --install)" >&2; exit 1; }
done

OUT=$ROOT/target/firmware-check
rm -rf "$OUT"
mkdir -p "$OUT"
FW_DIR=$ROOT/tests/firmware
FW_TARGET=$FW_DIR/target/thumbv7em-none-eabihf/release
STREAMS_DIR=$FW_DIR/streams
# The streams committed (the CI pairs); the other pairs answer the LAS stream's events under
# their own header (`retarget`): x86 and the device must still agree byte for byte.
RECORDED="tias:best-fit las:best-fit las:optimal"

ORDERS="tias las fifo"
PLACERS="first-fit best-fit random load-balance greedy optimal"
ALL_FEATURES=$(echo "$ORDERS $PLACERS" | tr ' ' ',')
if [ "$MODE" = ci ]; then
    PAIRS="tias:best-fit las:best-fit las:optimal"
else
    PAIRS=""
    for o in $ORDERS; do for p in $PLACERS; do PAIRS="$PAIRS $o:$p"; done; done
    PAIRS=${PAIRS# }
fi

if [ "$RECORD" = 1 ]; then
    # Real trace: the bundled 1,500-job Philly sample (CC-BY-4.0) on 2x4x8 = 64 GPUs,
    # recorded with the firmware's capacities (64 GPUs, 256 live jobs, gangs of 8, 64
    # decisions a call), with seeded deadlines on 30 % of the jobs (the trace has none;
    # without them TIAS is LAS). Only the inbound events are kept: x86's answers are made
    # below by the reference device from the core alone.
    log "recording streams with the host simulator:$RECORDED"
    cargo build --release -p gantry --bin gantry >&2
    GANTRY=$ROOT/target/release/gantry
    mkdir -p "$STREAMS_DIR"
    for pair in $RECORDED; do
        o=${pair%%:*}; p=${pair##*:}
        "$GANTRY" simulate --sample philly --cluster 2x4x8 --capacities firmware --order "$o" \
            --placement "$p" --deadlines 0.3:1.5:3 --record "$OUT/$o-$p.gantry" > /dev/null
        "$GANTRY" frames convert "$OUT/$o-$p.gantry" --events "$OUT/$o-$p.events" \
            --expected "$OUT/$o-$p.recorded" >&2
        gzip -9 -n -c "$OUT/$o-$p.events" > "$STREAMS_DIR/$o-$p.events.gz"
    done
fi

log "x86 reference device (gantry-core alone)"
HOST_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
(cd "$FW_DIR/reference" && export CARGO_TARGET_DIR=$ROOT/target/firmware-reference \
    && cargo fmt --check && cargo clippy --release --target "$HOST_TRIPLE" -- -D warnings >&2 \
    && cargo build --release --target "$HOST_TRIPLE" >&2)
REFERENCE=$ROOT/target/firmware-reference/$HOST_TRIPLE/release/gantry-firmware-reference

log "x86 answers:$PAIRS"
for pair in $PAIRS; do
    o=${pair%%:*}; p=${pair##*:}
    if [ -f "$STREAMS_DIR/$o-$p.events.gz" ]; then
        gzip -dc "$STREAMS_DIR/$o-$p.events.gz" > "$OUT/$o-$p.events"
    else
        gzip -dc "$STREAMS_DIR/las-best-fit.events.gz" > "$OUT/las.events"
        "$REFERENCE" retarget "$OUT/las.events" "$OUT/$o-$p.events" "$o" "$p"
    fi
    "$REFERENCE" serve "$OUT/$o-$p.events" "$OUT/$o-$p.expected"
    if [ "$RECORD" = 1 ] && [ -f "$OUT/$o-$p.recorded" ]; then
        # The simulator's own answers while recording: the reference device must agree.
        "$REFERENCE" diff "$OUT/$o-$p.recorded" "$OUT/$o-$p.expected"
    fi
done
# Bad frames mixed into the first stream: x86's reference device answers them.
first=tias-best-fit  # in every mode
"$REFERENCE" corrupt "$OUT/$first.events" "$OUT/corrupt.events" 1
"$REFERENCE" serve "$OUT/corrupt.events" "$OUT/corrupt.expected"

build_firmware() { # name features [bin]
    local name=$1 features=$2 bin=${3:-gantry-firmware}
    (cd "$FW_DIR" && cargo build --release --bin "$bin" --no-default-features --features "$features" >&2)
    cp "$FW_TARGET/$bin" "$OUT/$name.elf"
}
log "firmware: format and clippy (its own workspace, not covered by the host's)"
(cd "$FW_DIR" && cargo fmt --check && cargo clippy --release --no-default-features \
    --features "$ALL_FEATURES,checkpoint" -- -D warnings >&2)
log "firmware builds"
build_firmware fw-tias-best-fit tias,best-fit
build_firmware fw-all "$ALL_FEATURES"
# Every pair once more in a firmware that also snapshots, resets and restores its scheduler
# every 1,000 events (checkpoint/restore on the device: the answers must not change). Kept
# apart so the checkpoint code does not change the other builds' figures.
build_firmware fw-checkpoint "$ALL_FEATURES,checkpoint"

run_qemu() { # elf events answers [extra arg] -> prints the firmware's JSON line
    local elf=$1 events=$2 answers=$3 extra=${4:+,arg=$4}
    timeout 900 qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -icount shift=0 \
        -semihosting-config "enable=on,target=native,arg=fw,arg=$events,arg=$answers$extra" \
        -kernel "$elf" < /dev/null | tail -n 1
}

IDENTICAL=true
STREAMS=0
compare() { # expected actual label
    if "$REFERENCE" diff "$1" "$2" >&2; then return 0; fi
    log "DIFFERENT: $3"
    IDENTICAL=false
}

log "running streams under QEMU"
for pair in $PAIRS; do
    o=${pair%%:*}; p=${pair##*:}
    elf=$OUT/fw-all.elf
    [ "$pair" = tias:best-fit ] && elf=$OUT/fw-tias-best-fit.elf
    run_qemu "$elf" "$OUT/$o-$p.events" "$OUT/$o-$p.rust" > "$OUT/$o-$p.fw.json"
    compare "$OUT/$o-$p.expected" "$OUT/$o-$p.rust" "$o+$p (Rust firmware)"
    STREAMS=$((STREAMS + 1))
done
log "running streams under QEMU with a snapshot, reset and restore every 1,000 events"
for stream in $(for pair in $PAIRS; do echo "${pair%%:*}-${pair##*:}"; done) corrupt; do
    run_qemu "$OUT/fw-checkpoint.elf" "$OUT/$stream.events" "$OUT/$stream.ckpt" > "$OUT/$stream.ckpt.json"
    compare "$OUT/$stream.expected" "$OUT/$stream.ckpt" "$stream (Rust firmware, checkpointing)"
done
run_qemu "$OUT/fw-all.elf" "$OUT/corrupt.events" "$OUT/corrupt.rust" > "$OUT/corrupt.fw.json"
compare "$OUT/corrupt.expected" "$OUT/corrupt.rust" "bad frames (Rust firmware)"

log "C example (core/ffi staticlib + arm-none-eabi-gcc), one build per pair"
CFLAGS="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os -Wall -Wextra -Werror"
build_c() { # order placer -> $OUT/gantry-c-ORDER-PLACER.elf
    cargo rustc -p gantry-sched-ffi --release --target thumbv7em-none-eabihf --crate-type staticlib \
        --no-default-features --features "$1,$2" >&2
    arm-none-eabi-gcc $CFLAGS --specs=nano.specs --specs=rdimon.specs -nostartfiles \
        -I core/ffi/include -T tests/firmware/c/link.ld \
        examples/c-m4f/startup.c tests/firmware/c/main.c \
        "$(arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 --specs=rdimon.specs -print-file-name=rdimon-crt0.o)" \
        target/thumbv7em-none-eabihf/release/libgantry_ffi.a -Wl,--gc-sections -lrdimon \
        -o "$OUT/gantry-c-$1-$2.elf"
}
C_IDENTICAL=true
C_PAIRS=0
c_compare() { # stream answers label
    if ! "$REFERENCE" diff "$OUT/$1.expected" "$2" >&2; then
        log "DIFFERENT: $3"
        C_IDENTICAL=false
        IDENTICAL=false
    fi
}
for pair in $PAIRS; do
    o=${pair%%:*} p=${pair##*:}
    build_c "$o" "$p"
    run_qemu "$OUT/gantry-c-$o-$p.elf" "$OUT/$o-$p.events" "$OUT/$o-$p.c" > "$OUT/$o-$p.c.json"
    c_compare "$o-$p" "$OUT/$o-$p.c" "$o+$p (C example)"
    C_PAIRS=$((C_PAIRS + 1))
done
# The C example of the reference pair (TIAS + best-fit, the library's default features)
# also answers the bad frames; its flash is the one reported.
cp "$OUT/gantry-c-tias-best-fit.elf" "$OUT/gantry-c.elf"
run_qemu "$OUT/gantry-c.elf" "$OUT/corrupt.events" "$OUT/corrupt.c" > "$OUT/corrupt.c.json"
c_compare corrupt "$OUT/corrupt.c" "bad frames (C example)"
log "C example with a snapshot, storage wipe, init and restore every 1,000 events"
run_qemu "$OUT/gantry-c.elf" "$OUT/tias-best-fit.events" "$OUT/tias-best-fit.c-ckpt" 1000 \
    > "$OUT/tias-best-fit.c-ckpt.json"
c_compare tias-best-fit "$OUT/tias-best-fit.c-ckpt" "tias+best-fit (C example, checkpointing)"
C_CKPT_JSON=$OUT/tias-best-fit.c-ckpt.json

log "examples: examples/m4f (Rust, scheduler in a static) and examples/c-m4f (C), under QEMU"
# Both run the scenario of examples/c-hosted (the C one is its main.c, unchanged): the three
# must print the same decisions (the Rust one names its build in its own first line).
(cd examples/m4f && cargo fmt --check && cargo clippy --release -- -D warnings >&2 \
    && cargo build --release >&2)
cp examples/m4f/target/thumbv7em-none-eabihf/release/gantry-example-m4f "$OUT/m4f-example.elf"
qemu_example() { # elf -> its stdout
    timeout 300 qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic \
        -semihosting-config enable=on,target=native -kernel "$1" < /dev/null
}
qemu_example "$OUT/m4f-example.elf" > "$OUT/m4f-example.txt"
make -s -C examples/c-m4f >&2
cp target/c-m4f/gantry-c-m4f.elf "$OUT/c-m4f-example.elf"
qemu_example "$OUT/c-m4f-example.elf" > "$OUT/c-m4f-example.txt"
make -s -C examples/c-hosted run > "$OUT/c-hosted.x86_64.txt"
C_M4F_IDENTICAL=false
if [ -s "$OUT/c-hosted.x86_64.txt" ] && cmp -s "$OUT/c-hosted.x86_64.txt" "$OUT/c-m4f-example.txt" \
    && cmp -s <(tail -n +2 "$OUT/c-hosted.x86_64.txt") <(tail -n +2 "$OUT/m4f-example.txt"); then
    C_M4F_IDENTICAL=true
else
    diff "$OUT/c-hosted.x86_64.txt" "$OUT/c-m4f-example.txt" >&2 || true
    diff <(tail -n +2 "$OUT/c-hosted.x86_64.txt") <(tail -n +2 "$OUT/m4f-example.txt") >&2 || true
    log "DIFFERENT: the examples on the M4F vs examples/c-hosted on x86-64"
    IDENTICAL=false
fi
M4F_DECISIONS=$(grep -c ' ms: ' "$OUT/m4f-example.txt" || true)
static_ram() { arm-none-eabi-size -A "$1" | awk '$1 ~ /^\.(data|bss|uninit)$/ { s += $2 } END { print s + 0 }'; }
M4F_RAM=$(static_ram "$OUT/m4f-example.elf")

log "no-panic link check (one build per pair: its panic handler references an undefined symbol)"
# Every pair's event path must stay panic-free: a panic path fails the check (and CI).
build_firmware no-panic-linkable tias,best-fit no-panic
PANIC_SITES=$(arm-none-eabi-objdump -d --no-show-raw-insn -C "$OUT/no-panic-linkable.elf" \
    | grep -cE '\s(bl|b|b\.w)\s+[0-9a-f]+ <core::(panicking::|slice::index::|option::(unwrap|expect)_failed|result::unwrap_failed)' || true)
NO_PANIC=true
NO_PANIC_LINKED=""
PANIC_REACHABLE=""
for pair in $PAIRS; do
    o=${pair%%:*}; p=${pair##*:}
    link_log="$OUT/no-panic-link-$o-$p.log"
    if (cd "$FW_DIR" && cargo build --release --bin no-panic --no-default-features \
            --features "$o,$p,no-panic-check" > "$link_log" 2>&1); then
        NO_PANIC_LINKED="$NO_PANIC_LINKED $pair"
        continue
    fi
    grep -q gantry_panic_is_reachable "$link_log" || { cat "$link_log" >&2; exit 1; }
    PANIC_REACHABLE="$PANIC_REACHABLE $pair"
    log "PANIC REACHABLE from construction or handle: $pair (see $link_log)"
    NO_PANIC=false
done
NO_PANIC_LINKED=${NO_PANIC_LINKED# }
PANIC_REACHABLE=${PANIC_REACHABLE# }

field() { # file key
    sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" | head -n 1
}
text_field() { # file key (a string value)
    sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1
}
# The most expensive event of a stream, as "kind #index (frame F, t=T ms, D decisions)".
worst_event() { # fw.json
    printf '%s #%s (frame %s, t=%s ms, %s decisions)' "$(text_field "$1" insn_max_kind)" \
        "$(field "$1" insn_max_event)" "$(field "$1" insn_max_frame)" \
        "$(field "$1" insn_max_now_ms)" "$(field "$1" insn_max_decisions)"
}
flash() { # elf: vector table + .text + .rodata + .data
    arm-none-eabi-size -A "$1" | awk '$1 ~ /^\.(vector_table|isr_vector|text|rodata|data|ARM\.exidx|init_array|fini_array|preinit_array)$/ { s += $2 } END { print s }'
}
soft_float() { arm-none-eabi-nm "$1" | grep -c ' __aeabi_d' || true; }

# Checkpoint/restore on the device, over every stream the checkpointing firmware ran.
CKPT_JSON=$(ls "$OUT"/*.ckpt.json)
sum_field() { for f in $CKPT_JSON; do field "$f" "$1"; done | awk '{ s += $1 } END { print s + 0 }'; }
max_field() { for f in $CKPT_JSON; do field "$f" "$1"; done | awk '$1 > m { m = $1 } END { print m + 0 }'; }
RESTORES=$(sum_field restores)
if grep -q '"checkpoint_error":true' $CKPT_JSON || [ "$RESTORES" -eq 0 ]; then
    IDENTICAL=false
    log "a snapshot or restore failed on the device (or none ran)"
fi

TIAS=$OUT/tias-best-fit.fw.json
LAS=$OUT/las-best-fit.fw.json
SOFT_FLOAT=$(( $(soft_float "$OUT/fw-all.elf") + $(soft_float "$OUT/fw-tias-best-fit.elf") ))

AARCH64_JSON=""
if [ "$AARCH64" = 1 ]; then
    # The C library for aarch64 Linux (a Jetson): built with the size profile, linked by the
    # Debian cross compiler, run under qemu-aarch64; its output must equal x86's.
    log "C library and examples/c-hosted on aarch64 Linux (qemu-aarch64) against x86-64"
    rustup target add aarch64-unknown-linux-gnu >&2
    start=$SECONDS
    make -s -C examples/c-hosted run TARGET=aarch64-unknown-linux-gnu CC=aarch64-linux-gnu-gcc \
        RUN="qemu-aarch64 -L /usr/aarch64-linux-gnu" > "$OUT/c-hosted.aarch64.txt"
    aarch64_s=$((SECONDS - start))
    AARCH64_IDENTICAL=false
    if [ -s "$OUT/c-hosted.x86_64.txt" ] && cmp -s "$OUT/c-hosted.x86_64.txt" "$OUT/c-hosted.aarch64.txt"; then
        AARCH64_IDENTICAL=true
    else
        diff "$OUT/c-hosted.x86_64.txt" "$OUT/c-hosted.aarch64.txt" >&2 || true
        log "DIFFERENT: examples/c-hosted on aarch64 vs x86-64"
        IDENTICAL=false
    fi
    AARCH64_JSON=",\"aarch64_c_identical\":$AARCH64_IDENTICAL,\"aarch64_c_lines\":$(wc -l < "$OUT/c-hosted.aarch64.txt"),\"aarch64_s\":$aarch64_s"
fi

# Budgets: over any of them the check fails, after printing the JSON. The instruction
# budgets are what a firmware integrator asks for (TIAS worst event 60,000 instructions,
# average 10,000) and a flash of at most 46 KiB (47,104 B, docs/firmware.md says where it
# goes).
# Override with the environment.
# The stack of each call and the RAM are the part's limits (memory.x: 128 KiB of RAM): the
# deepest stack over every Rust firmware run plus its static data must fit, and each call
# keeps to its declared budget whatever the stream.
TIAS_INSN_MAX_BUDGET=${TIAS_INSN_MAX_BUDGET:-60000}
TIAS_INSN_AVG_BUDGET=${TIAS_INSN_AVG_BUDGET:-10000}
FLASH_BUDGET=${FLASH_BUDGET:-47104}
CONSTRUCT_STACK_BUDGET=${CONSTRUCT_STACK_BUDGET:-4096}
HANDLE_STACK_BUDGET=${HANDLE_STACK_BUDGET:-4096}
# The exact placer's dynamic program keeps its G-entry cost tables on the stack.
OPTIMAL_HANDLE_STACK_BUDGET=${OPTIMAL_HANDLE_STACK_BUDGET:-5120}
SNAPSHOT_STACK_BUDGET=${SNAPSHOT_STACK_BUDGET:-4096}
RESTORE_STACK_BUDGET=${RESTORE_STACK_BUDGET:-4096}
RAM_BUDGET=${RAM_BUDGET:-131072}
FW_JSON=$(ls "$OUT"/*.fw.json "$OUT"/*.ckpt.json)
max_fw() { for f in $FW_JSON; do field "$f" "$1"; done | awk '$1 > m { m = $1 } END { print m + 0 }'; }
# `handle`'s stack by placer kind: the exact placer, and every other.
handle_stack() { # optimal|other
    for f in $FW_JSON; do
        kind=other
        [ "$(text_field "$f" placer)" = optimal ] && kind=optimal
        if [ "$kind" = "$1" ]; then field "$f" handle_stack_bytes; fi
    done | awk '$1 > m { m = $1 } END { print m + 0 }'
}
RAM_BYTES=$(for f in $FW_JSON; do
    echo $(( $(field "$f" ram_static_bytes) + $(field "$f" stack_peak_bytes) ))
done | sort -n | tail -n 1)
OVER_BUDGET=""
over_budget() { # label value budget
    if [ -z "$2" ] || [ "$2" -gt "$3" ]; then
        log "OVER BUDGET: $1 = ${2:-missing} > $3"
        OVER_BUDGET="$OVER_BUDGET $1"
    fi
}
over_budget tias_insn_max "$(field "$TIAS" insn_max)" "$TIAS_INSN_MAX_BUDGET"
over_budget tias_insn_avg "$(field "$TIAS" insn_avg)" "$TIAS_INSN_AVG_BUDGET"
over_budget flash_bytes "$(flash "$OUT/fw-tias-best-fit.elf")" "$FLASH_BUDGET"
over_budget construct_stack_bytes "$(max_fw construct_stack_bytes)" "$CONSTRUCT_STACK_BUDGET"
over_budget handle_stack_bytes "$(handle_stack other)" "$HANDLE_STACK_BUDGET"
over_budget optimal_handle_stack_bytes "$(handle_stack optimal)" "$OPTIMAL_HANDLE_STACK_BUDGET"
over_budget snapshot_stack_bytes "$(max_fw snapshot_stack_bytes)" "$SNAPSHOT_STACK_BUDGET"
over_budget restore_stack_bytes "$(max_fw restore_stack_bytes)" "$RESTORE_STACK_BUDGET"
over_budget ram_bytes "$RAM_BYTES" "$RAM_BUDGET"
over_budget m4f_example_static_ram_bytes "$M4F_RAM" "$RAM_BUDGET"

cat <<EOF
{"streams":$STREAMS,"identical":$IDENTICAL,"sched_bytes":$(field "$TIAS" sched_bytes),"construct_stack_bytes":$(max_fw construct_stack_bytes),"handle_stack_bytes":$(handle_stack other),"optimal_handle_stack_bytes":$(handle_stack optimal),"ram_bytes":$RAM_BYTES,"ram_budget":$RAM_BUDGET,"flash_bytes":$(flash "$OUT/fw-tias-best-fit.elf"),"tias_insn_avg":$(field "$TIAS" insn_avg),"tias_insn_max":$(field "$TIAS" insn_max),"tias_insn_max_event":"$(worst_event "$TIAS")","tias_events":$(field "$TIAS" events),"las_insn_avg":$(field "$LAS" insn_avg),"las_insn_max":$(field "$LAS" insn_max),"las_insn_max_event":"$(worst_event "$LAS")","soft_float_symbols":$SOFT_FLOAT,"no_panic_link":$NO_PANIC,"no_panic_pairs":"$NO_PANIC_LINKED","panic_reachable_pairs":"$PANIC_REACHABLE","panic_call_sites":$PANIC_SITES,"c_abi_identical":$C_IDENTICAL,"c_pairs":$C_PAIRS,"c_restores":$(field "$C_CKPT_JSON" c_restores | grep . || echo 0),"restores":$RESTORES,"snapshot_bytes":$(max_field snapshot_bytes),"snapshot_insn_max":$(max_field snapshot_insn),"restore_insn_max":$(max_field restore_insn),"restore_stack_bytes":$(max_fw restore_stack_bytes),"snapshot_stack_bytes":$(max_fw snapshot_stack_bytes),"c_flash_bytes":$(flash "$OUT/gantry-c.elf"),"m4f_example_flash_bytes":$(flash "$OUT/m4f-example.elf"),"m4f_example_static_ram_bytes":$M4F_RAM,"m4f_example_decisions":$M4F_DECISIONS,"c_m4f_example_flash_bytes":$(flash "$OUT/c-m4f-example.elf"),"c_m4f_example_identical":$C_M4F_IDENTICAL,"bad_frame_faults":$(field "$OUT/corrupt.fw.json" faults)$AARCH64_JSON}
EOF
[ "$IDENTICAL" = true ] && [ "$C_IDENTICAL" = true ] || { log "answers differ from x86"; exit 1; }
[ "$NO_PANIC" = true ] || { log "a panic path is reachable from handle"; exit 1; }
[ -z "$OVER_BUDGET" ] || { log "over budget:$OVER_BUDGET"; exit 1; }
