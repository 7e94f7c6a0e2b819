#!/usr/bin/env bash
# Time and client CPU of `cloud-storage cp gs://… FILE` with its download sliced into N ranged
# requests against one stream (--slices 1), rows interleaved round by round: each slice count
# runs once in a round before any runs twice. The emulator is a separate process (directory
# storage on tmpfs) so its CPU never counts as the client's; the download goes to tmpfs too.
#
#   Benchmarks/scripts/sliced-download.sh SIZE_MIB ROUNDS SLICES...
#       e.g. sliced-download.sh 1024 5 1 4 8
#
# $EMULATOR_ARGS are passed to the emulator (e.g. a network shape, where the emulator has one);
# $CLOUD_STORAGE picks the tool (default .build/release/cloud-storage). Every row prints wall
# seconds, user and system CPU seconds of the client process alone (/usr/bin/time), MB/s and
# CPU-seconds per GiB, and the downloaded file is compared with the payload.
# Runs only on loopback. Check `uptime` first: on a loaded machine the numbers mean little.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
size_mib=${1:?SIZE_MIB}
rounds=${2:?ROUNDS}
shift 2
slices=("$@")
[[ ${#slices[@]} -gt 0 ]] || { echo "name at least one slice count (1 is one stream)" >&2; exit 2; }
find_tool "$root"
work=$(mktemp -d "/dev/shm/sliced-download.XXXXXX")
trap 'stop_emulators; rm -rf "$work"' EXIT
head -c $((size_mib * 1048576)) /dev/urandom > "$work/payload"
mkdir -p "$work/store"
# shellcheck disable=SC2086
start_emulator "$work/emulator.log" --dir "$work/store" ${EMULATOR_ARGS:-}
echo "tool: $tool; emulator $endpoint ${EMULATOR_ARGS:-}; payload $size_mib MiB on tmpfs; load $(cut -d' ' -f1-3 /proc/loadavg)"
"$tool" cp --quiet --endpoint "$endpoint" "$work/payload" gs://bench/source

for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    for n in "${slices[@]}"; do
        rm -f "$work/down"
        /usr/bin/time -f "%e %U %S" -o "$work/time" \
            "$tool" cp --quiet --slices "$n" --endpoint "$endpoint" gs://bench/source "$work/down" > /dev/null
        read -r wall user system < "$work/time"
        cmp -s "$work/down" "$work/payload" || { echo "--slices $n downloaded wrong bytes" >&2; exit 1; }
        awk -v n="$n" -v w="$wall" -v u="$user" -v s="$system" -v m="$size_mib" 'BEGIN {
            printf "download --slices %-3s %7.2f s wall %6.2f user %6.2f sys  %8.1f MB/s  %6.2f CPU-s/GiB\n",
                n, w, u, s, m * 1.048576 / w, (u + s) * 1024 / m }'
    done
done
