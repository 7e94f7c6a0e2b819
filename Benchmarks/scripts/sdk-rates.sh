#!/usr/bin/env bash
# The SDK's rates against a baseline build, in one run, clients in turns (medians of rounds): the
# small-object rate (`cloud-storage cp -r` of FILES files of 16 KiB, files per second) and the
# throughput of one large object each way (`cp` of SIZE_MIB MiB up on one stream and down, MB/s and
# CPU-s/GiB),
# over plain http on loopback to `cloud-storage emulator`s of one fixed build: uploads of the large
# object go to one that counts and drops the bytes (`--discard`), the rest to directory storage
# on tmpfs. Each client process runs alone under `perf stat` (task-clock).
#
#   Benchmarks/scripts/sdk-rates.sh SIZE_MIB FILES ROUNDS CLIENT...
#       e.g. sdk-rates.sh 1024 500 5 /tmp/base/cloud-storage .build/release/cloud-storage
#
# $SINK is the emulators' tool (default: the first CLIENT). Needs perf.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
size_mib=${1:?SIZE_MIB}
files=${2:?FILES}
shift 2
read_size_rounds_clients "$size_mib" "$@"
tool=${SINK:-${clients[0]}}
tls_bench_workspace sdk-rates "$size_mib"
mkdir -p "$work/tree"
for ((i = 0; i < files; i++)); do head -c 16384 /dev/urandom > "$work/tree/f$(printf %05d "$i").bin"; done
start_emulator "$work/discard.log" --discard
upload_endpoint=$endpoint
mkdir -p "$work/store"
start_emulator "$work/emulator.log" --dir "$work/store"
echo "sinks: $tool (large uploads $upload_endpoint, the rest $endpoint); $size_mib MiB and $files files" \
    "of 16 KiB on tmpfs; load $(cut -d' ' -f1-3 /proc/loadavg)"
curl -sS --fail -X POST -T "$work/payload" \
    "$endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=source" > /dev/null

# row LABEL COMMAND...: runs COMMAND under perf stat; appends "LABEL wall cpu" to rows.
row() {
    local label=$1 start end
    shift
    start=$(date +%s.%N)
    perf stat -x, -e task-clock -o "$work/stat" -- "$@" > /dev/null
    end=$(date +%s.%N)
    awk -F, -v l="$label" -v s="$start" -v e="$end" '
        $3 == "task-clock" { cpu = $1 / 1000 }
        END { printf "%s\t%.3f\t%.4f\n", l, e - s, cpu }' "$work/stat" >> "$work/rows"
    tail -1 "$work/rows" | awk -F'\t' '{ printf "  %-28s %7.2f s wall %7.3f CPU-s\n", $1, $2, $3 }'
}

copy=(cp --quiet)
for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    turn_order "$round"
    for i in "${order[@]}"; do
        row "small files client $i" "${clients[$i]}" "${copy[@]}" -r --endpoint "$endpoint" \
            "$work/tree" "gs://bench/small-$round-$i"
        row "upload client $i" "${clients[$i]}" "${copy[@]}" --endpoint "$upload_endpoint" \
            --parallel-threshold off "$work/payload" "gs://bench/up-$i"
        rm -f "$work/down"
        row "download client $i" "${clients[$i]}" "${copy[@]}" --endpoint "$endpoint" gs://bench/source "$work/down"
        cmp -s "$work/down" "$work/payload" || { echo "client $i downloaded wrong bytes" >&2; exit 1; }
    done
done

echo "== medians of $rounds rounds"
grep -v '^small' "$work/rows" > "$work/large" || true
print_medians "$work/large" "$size_mib"
grep '^small' "$work/rows" | cut -f1 | sort -u | while IFS= read -r label; do
    awk -F'\t' -v l="$label" '$1 == l { print $2 }' "$work/rows" | median |
        awk -v l="$label" -v n="$files" '{ printf "  %-40s %8.1f files/s\n", l, n / $1 }'
done
