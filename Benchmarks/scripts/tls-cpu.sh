#!/usr/bin/env bash
# Client CPU per GiB and peak RSS over https against curl, as medians of interleaved rounds:
# `cloud-storage cp` uploads (putFile: one stream, and parts over parallel connections) and
# downloads to tmpfs (as `cp` chooses: sliced when its probe finds one connection too slow; and
# on one stream, `--slices 1`), and curl doing the same. Both take their ciphers from the host's OpenSSL
# configuration. The sinks are TLS `cloud-storage emulator`s of a fixed build, each in its own
# process, so their costs never mix with the client's: one-stream uploads (the SDK's and curl's)
# go to one that counts and drops the bytes (`--discard`), so that storing them never limits a
# client; parallel uploads (their parts are composed) and downloads use one with directory storage
# on tmpfs. Each client process is
# measured alone with `perf stat` (task-clock: CPU seconds of all its threads, user and system)
# and `/usr/bin/time -f %M` (peak resident set, file-backed pages included).
#
#   Benchmarks/scripts/tls-cpu.sh SIZE_MIB ROUNDS CLIENT...
#       e.g. SINK=/tmp/old/cloud-storage tls-cpu.sh 1024 5 /tmp/old/cloud-storage .build/release/cloud-storage
#
# $SINK is the emulator's tool (default: the first CLIENT). Needs perf. Runs only on loopback.
# Check `uptime` first: CPU seconds on a loaded 2-core machine move by ±20 %, so run several rounds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
read_size_rounds_clients "$@"
tool=${SINK:-${clients[0]}}
tls_bench_workspace tls-cpu "$size_mib"
start_emulator "$work/discard.log" --discard --tls-cert "$certificates/localhost.pem" \
    --tls-key "$certificates/localhost.key"
upload_endpoint=$endpoint
start_tls_emulator "$work/emulator.log" "$work/store"
echo "sinks: $tool (one-stream uploads $upload_endpoint, the rest $endpoint); payload $size_mib MiB on tmpfs;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
curl_base=(curl -sS --fail --cacert "$certificates/test-ca.pem")
"${curl_base[@]}" -X POST -T "$work/payload" \
    "$endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=source" > /dev/null

# row LABEL COMMAND...: runs COMMAND under perf stat and /usr/bin/time; appends "LABEL wall cpu"
# to rows and "LABEL rss-kB" to rss.
row() {
    local label=$1
    shift
    local start end
    start=$(date +%s.%N)
    perf stat -x, -e task-clock -o "$work/stat" -- /usr/bin/time -f %M -o "$work/rss-now" "$@" > /dev/null
    end=$(date +%s.%N)
    awk -F, -v l="$label" -v s="$start" -v e="$end" '
        $3 == "task-clock" { cpu = $1 / 1000 }
        END { printf "%s\t%.3f\t%.4f\n", l, e - s, cpu }' "$work/stat" >> "$work/rows"
    printf '%s\t%s\n' "$label" "$(tail -1 "$work/rss-now")" >> "$work/rss"
    tail -1 "$work/rows" | awk -F'\t' -v m="$size_mib" -v r="$(tail -1 "$work/rss-now")" '{
        printf "  %-28s %6.2f s wall %8.1f MB/s %6.3f CPU-s/GiB %6.1f MB peak RSS\n",
            $1, $2, m * 1.048576 / $2, $3 * 1024 / m, r * 1.024 / 1000 }'
}

copy=(cp --quiet --token bench --ca-file "$certificates/test-ca.pem")
for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    turn_order "$round"
    for i in "${order[@]}"; do
        row "upload client $i" "${clients[$i]}" "${copy[@]}" --endpoint "$endpoint" \
            "$work/payload" "gs://bench/up-$i"
        row "upload client $i one stream" "${clients[$i]}" "${copy[@]}" --endpoint "$upload_endpoint" \
            --parallel-threshold off \
            "$work/payload" "gs://bench/up-$i"
    done
    row "upload curl" "${curl_base[@]}" -X POST -T "$work/payload" \
        "$upload_endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=up-curl"
    for i in "${order[@]}"; do
        rm -f "$work/down"
        row "download client $i" "${clients[$i]}" "${copy[@]}" --endpoint "$endpoint" gs://bench/source "$work/down"
        cmp -s "$work/down" "$work/payload" || { echo "client $i downloaded wrong bytes" >&2; exit 1; }
        rm -f "$work/down"
        row "download client $i one stream" "${clients[$i]}" "${copy[@]}" --endpoint "$endpoint" --slices 1 \
            gs://bench/source "$work/down"
        cmp -s "$work/down" "$work/payload" || { echo "client $i downloaded wrong bytes" >&2; exit 1; }
    done
    rm -f "$work/down"
    row "download curl -o" "${curl_base[@]}" -o "$work/down" "$endpoint/download/storage/v1/b/bench/o/source?alt=media"
    cmp -s "$work/down" "$work/payload" || { echo "curl downloaded wrong bytes" >&2; exit 1; }
done

echo "== medians of $rounds rounds"
print_medians "$work/rows" "$size_mib"
echo "== median peak RSS"
cut -f1 "$work/rss" | sort -u | while IFS= read -r label; do
    awk -F'\t' -v l="$label" '$1 == l { print $2 }' "$work/rss" | median |
        awk -v l="$label" '{ printf "  %-40s %6.1f MB\n", l, $1 * 1.024 / 1000 }'
done
