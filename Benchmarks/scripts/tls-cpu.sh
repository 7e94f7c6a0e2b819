#!/usr/bin/env bash
# Client CPU per GiB over https against curl, as medians of interleaved rounds: `cloud-storage cp`
# uploads (putFile) and downloads to tmpfs, and curl doing the same with OpenSSL's default TLS 1.3
# suite order and with AES-128-GCM first (the order our client offers), so that what the cipher
# saves is told apart from what the client does. The sink is a TLS `cloud-storage emulator` of a
# fixed build in its own process (directory storage on tmpfs), so its costs never mix with the
# client's; each client process is measured alone with `perf stat` (task-clock: CPU seconds of all
# its threads, user and system).
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
start_tls_emulator "$work/emulator.log" "$work/store"
echo "sink: $tool ($endpoint); payload $size_mib MiB on tmpfs; load $(cut -d' ' -f1-3 /proc/loadavg)"
curl_base=(curl -sS --fail --cacert "$certificates/test-ca.pem")
aes128=(--tls13-ciphers "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256")
"${curl_base[@]}" -X POST -T "$work/payload" \
    "$endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=source" > /dev/null

# row LABEL COMMAND...: runs COMMAND under perf stat; appends "LABEL wall cpu" to rows.
row() {
    local label=$1
    shift
    local start end
    start=$(date +%s.%N)
    perf stat -x, -e task-clock -o "$work/stat" -- "$@" > /dev/null
    end=$(date +%s.%N)
    awk -F, -v l="$label" -v s="$start" -v e="$end" '
        $3 == "task-clock" { cpu = $1 / 1000 }
        END { printf "%s\t%.3f\t%.4f\n", l, e - s, cpu }' "$work/stat" >> "$work/rows"
    tail -1 "$work/rows" | awk -F'\t' -v m="$size_mib" '{
        printf "  %-28s %6.2f s wall %8.1f MB/s %6.3f CPU-s/GiB\n", $1, $2, m * 1.048576 / $2, $3 * 1024 / m }'
}

for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    turn_order "$round"
    for i in "${order[@]}"; do
        row "upload client $i" "${clients[$i]}" cp --quiet --token bench --ca-file "$certificates/test-ca.pem" \
            --endpoint "$endpoint" "$work/payload" "gs://bench/up-$i"
    done
    row "upload curl" "${curl_base[@]}" -X POST -T "$work/payload" \
        "$endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=up-curl"
    row "upload curl aes128" "${curl_base[@]}" "${aes128[@]}" -X POST -T "$work/payload" \
        "$endpoint/upload/storage/v1/b/bench/o?uploadType=media&name=up-curl"
    for i in "${order[@]}"; do
        rm -f "$work/down"
        row "download client $i" "${clients[$i]}" cp --quiet --token bench --ca-file "$certificates/test-ca.pem" \
            --endpoint "$endpoint" gs://bench/source "$work/down"
        cmp -s "$work/down" "$work/payload" || { echo "client $i downloaded wrong bytes" >&2; exit 1; }
    done
    for variant in default aes128; do
        rm -f "$work/down"
        extra=()
        [[ $variant == aes128 ]] && extra=("${aes128[@]}")
        label="download curl -o"
        [[ $variant == aes128 ]] && label="download curl -o aes128"
        row "$label" "${curl_base[@]}" "${extra[@]}" -o "$work/down" \
            "$endpoint/download/storage/v1/b/bench/o/source?alt=media"
        cmp -s "$work/down" "$work/payload" || { echo "curl downloaded wrong bytes" >&2; exit 1; }
    done
done

echo "== medians of $rounds rounds"
print_medians "$work/rows" "$size_mib"
