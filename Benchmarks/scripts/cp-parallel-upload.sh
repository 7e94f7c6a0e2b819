#!/usr/bin/env bash
# cp of one large file to the emulator (in memory, loopback): parallel upload in parts (the SDK's
# defaults, or PARALLEL_ARGS) against one stream (--parallel-threshold off), interleaved rounds.
# Prints per round: wall seconds, CPU seconds (user+system) and peak RSS (MiB) of `cloud-storage cp`.
#
#   Benchmarks/scripts/cp-parallel-upload.sh SIZE_MIB ROUNDS
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/Benchmarks/scripts/common.sh"
find_tool "$root"
size_mib=${1:?SIZE_MIB}
rounds=${2:?ROUNDS}
work=$(mktemp -d "/dev/shm/cp-parallel.XXXXXX")
trap 'stop_emulators; rm -rf "$work"' EXIT
head -c $((size_mib * 1048576)) /dev/urandom > "$work/payload"
start_emulator "$work/emulator.log"
read -r -a parallel_args <<< "${PARALLEL_ARGS:-}"
run() {
    local label=$1
    shift
    /usr/bin/time -f "$label %e %U %S %M" -o "$work/time" \
        "$tool" cp --quiet --endpoint "$endpoint" "$@" "$work/payload" gs://bench/payload
    awk '{ printf "%-9s wall %6.2f s  cpu %6.2f s  rss %5.0f MiB\n", $1, $2, $3 + $4, $5 / 1024 }' "$work/time"
}
for round in $(seq "$rounds"); do
    run parallel "${parallel_args[@]}"
    run single --parallel-threshold off
done
