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
    row("streams answered byte-identical to x86 (Rust firmware)"; "\(.identical) of \(.streams)"; "all"),
    (if .c_pairs then row("streams byte-identical through the C ABI"; "\(.c_abi_identical) (\(.c_pairs) pairs)"; "all") else empty end),
    row("`size_of` the scheduler (64 GPUs, 256 jobs, gangs of 8)"; "\(.sched_bytes | n) B"; "32,768 B"),
    row("flash (opt-level \"s\", LTO)"; "\(.flash_bytes | n) B"; "47,104 B"),
    row("stack at construction"; "\(.construct_stack_bytes | n) B"; "4,096 B"),
    row("stack of `handle`, TIAS / LAS"; "\(.handle_stack_bytes | n) / \(.las_handle_stack_bytes | n) B"; "4,096 B"),
    row("TIAS instructions per event, average / worst"; "\(.tias_insn_avg | n) / \(.tias_insn_max | n) (`\(.tias_insn_max_event)`)"; "10,000 / 60,000"),
    row("LAS instructions per event, average / worst"; "\(.las_insn_avg | n) / \(.las_insn_max | n) (`\(.las_insn_max_event)`)"; "10,000 average"),
    row("events in the TIAS stream"; "\(.tias_events | n)"; "—"),
    row("snapshot, largest"; "\(.snapshot_bytes | n) B"; "—"),
    row("restores that decided as the uninterrupted run (Rust / C)"; "\(.restores) / \(.c_restores)"; "—"),
    row("stack of `restore` / `restore_in_place`"; "\(.restore_stack_bytes | n) / \(.restore_in_place_stack_bytes | n) B"; "4,096 B"),
    row("instructions of a snapshot / a restore, worst"; "\(.snapshot_insn_max | n) / \(.restore_insn_max | n)"; "—"),
    row("C example firmware flash (library + newlib)"; "\(.c_flash_bytes | n) B"; "—"),
    row("soft-float symbols linked"; "\(.soft_float_symbols)"; "0"),
    row("pairs whose link proves no panic path"; "\(.no_panic_pairs)"; "all"),
    row("bad frames answered with a fault"; "\(.bad_frame_faults)"; "all")
  ] | .[]
' "$json"
