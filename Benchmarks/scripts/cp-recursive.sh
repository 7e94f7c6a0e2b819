#!/usr/bin/env bash
# Files per second of `cloud-storage cp -r` against a shell loop of single `cp`s, both uploading
# the same tree of small files to a `cloud-storage emulator` (in memory) started on a free port.
#
#   Benchmarks/scripts/cp-recursive.sh [FILES] [SIZE_BYTES] [JOBS]      (default 1000 65536 8)
#
# Uses $CLOUD_STORAGE, else .build/release/cloud-storage, else .build/debug/cloud-storage
# (build first: swift build -c release --product cloud-storage). Prints one line per run.
set -euo pipefail
files=${1:-1000}
size=${2:-65536}
jobs=${3:-8}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
find_tool "$root"

work=$(mktemp -d)
emulator_pid=
cleanup() {
    [[ -n "$emulator_pid" ]] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/tree"
for ((i = 0; i < files; i++)); do
    head -c "$size" /dev/urandom > "$work/tree/f$(printf %05d "$i").bin"
done

start_emulator "$work/emulator.log"

now() { date +%s.%N; }
rate() { awk -v n="$files" -v a="$1" -v b="$2" 'BEGIN { printf "%.1f files/s (%.2f s)", n / (b - a), b - a }'; }

start=$(now)
"$tool" cp -r --quiet --jobs "$jobs" --endpoint "$endpoint" "$work/tree" gs://bench/recursive/ > /dev/null
end=$(now)
echo "cp -r --jobs $jobs: $files files of $size bytes: $(rate "$start" "$end")"

start=$(now)
for file in "$work"/tree/*; do
    "$tool" cp --quiet --endpoint "$endpoint" "$file" gs://bench/loop/ > /dev/null
done
end=$(now)
echo "shell loop of cp:   $files files of $size bytes: $(rate "$start" "$end")"
