#!/usr/bin/env bash
# Prints the Cortex-M4F figures table of docs/firmware.md from the JSON object that
# `scripts/firmware-check.sh` prints last, so the doc shows one current value per figure.
#
#   scripts/firmware-check.sh --ci --install | tail -1 > /tmp/fw.json
#   scripts/firmware-table.sh /tmp/fw.json
#
# A figure the JSON does not carry (a check that was not run) is left out of the table.
set -euo pipefail
json=${1:?usage: scripts/firmware-table.sh FIRMWARE_CHECK_JSON}
jq -r '
  def n: tostring | if test("^[0-9]+$") then (tonumber | tostring | [scan("[0-9]")] | reverse | [range(0; length; 3) as $i | .[$i:$i+3] | reverse | join("")] | reverse | join(",")) else . end;
  def row($name; $value; $budget): "| \($name) | \($value) | \($budget) |";
  [
    "| figure (TIAS + best-fit firmware unless named) | measured | budget |",
    "|---|---|---|",
    row("streams answered byte-identical to x86 (Rust firmware)"; (if .identical then "all \(.streams)" else "NOT all of \(.streams)" end); "all"),
    (if .c_pairs then row("streams byte-identical through the C ABI"; (if .c_abi_identical then "all \(.c_pairs) pairs" else "NOT all \(.c_pairs) pairs" end); "all") else empty end),
    row("`size_of` the scheduler (64 GPUs, 256 jobs, gangs of 8)"; "\(.sched_bytes | n) B"; "32,768 B"),
    row("flash (opt-level \"s\", LTO)"; "\(.flash_bytes | n) B"; "47,104 B enforced"),
    row("stack of `init_in_place` (construction), worst over the runs"; "\(.construct_stack_bytes | n) B"; "4,096 B enforced"),
    row("stack of `handle`, worst over every event of every pair: other placers / exact-optimal"; "\(.handle_stack_bytes | n) / \(.optimal_handle_stack_bytes | n) B"; "4,096 / 5,120 B enforced"),
    row("stack of `snapshot` / `restore_in_place`, worst"; "\(.snapshot_stack_bytes | n) / \(.restore_stack_bytes | n) B"; "4,096 B each, enforced"),
    row("RAM: static data + deepest stack, largest firmware (two schedulers and a snapshot buffer on the stack)"; "\(.ram_bytes | n) B"; "\(.ram_budget | n) B (memory.x) enforced"),
    row("TIAS instructions per event, average / worst"; "\(.tias_insn_avg | n) / \(.tias_insn_max | n) (`\(.tias_insn_max_event)`)"; "10,000 / 60,000 enforced"),
    row("LAS instructions per event, average / worst"; "\(.las_insn_avg | n) / \(.las_insn_max | n) (`\(.las_insn_max_event)`)"; "10,000 average"),
    row("events in the TIAS stream"; "\(.tias_events | n)"; "—"),
    row("snapshot, largest"; "\(.snapshot_bytes | n) B"; "—"),
    row("restores that decided as the uninterrupted run (Rust / C)"; "\(.restores) / \(.c_restores)"; "—"),
    row("instructions of a snapshot / a restore, worst"; "\(.snapshot_insn_max | n) / \(.restore_insn_max | n)"; "—"),
    row("C firmware flash (library + newlib-nano)"; "\(.c_flash_bytes | n) B"; "—"),
    (if .m4f_example_flash_bytes then row("examples/m4f: flash / static RAM (scheduler, restore target, snapshot buffer)"; "\(.m4f_example_flash_bytes | n) / \(.m4f_example_static_ram_bytes | n) B"; "524,288 / 131,072 B") else empty end),
    (if .c_m4f_example_flash_bytes then row("examples/c-m4f: flash (library + newlib)"; "\(.c_m4f_example_flash_bytes | n) B"; "524,288 B") else empty end),
    (if .m4f_example_decisions then row("examples on the M4F (Rust, C) print what examples/c-hosted prints on x86-64"; (if .c_m4f_example_identical then "yes (\(.m4f_example_decisions) decisions)" else "NO" end); "yes") else empty end),
    (if .aarch64_c_lines then row("examples/c-hosted on aarch64 Linux (qemu-aarch64) prints what it prints on x86-64"; (if .aarch64_c_identical then "yes (\(.aarch64_c_lines) lines)" else "NO" end); "yes") else empty end),
    row("soft-float symbols linked"; "\(.soft_float_symbols)"; "0"),
    row("pairs whose link proves no panic path"; "\(.no_panic_pairs)"; "all"),
    row("bad frames answered with a fault"; "\(.bad_frame_faults)"; "all")
  ] | .[]
' "$json"
