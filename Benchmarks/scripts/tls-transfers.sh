#!/usr/bin/env bash
# Client CPU and time of `cloud-storage cp` over https (and http) against curl, with the server in
# a SEPARATE process, so that client and server costs never mix: the sink is a `cloud-storage
# emulator` (directory storage on tmpfs) of a fixed build, the same for every client measured.
# Rows are interleaved round by round: each client of the round runs once before any runs twice,
# the clients in turn order (`turn_order`); the medians of the rounds close the report.
#
#   Benchmarks/scripts/tls-transfers.sh SIZE_MIB ROUNDS CLIENT...
#       e.g. tls-transfers.sh 1024 3 /work/wt-tls-base/.build/release/cloud-storage .build/release/cloud-storage
#
# $SINK is the emulator's tool (default: the first CLIENT); $ONLY, an extended regular expression,
# keeps the rows whose label matches (e.g. ONLY='upload https|putFile https'). Every row prints
# wall seconds, user and system CPU seconds of the client process alone (/usr/bin/time), MB/s
# and CPU-seconds per GiB.
# Runs only on loopback. Check `uptime` first: on a loaded machine the numbers mean little.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
read_size_rounds_clients "$@"
tool=${SINK:-${clients[0]}}
tls_bench_workspace tls-transfers "$size_mib"
start_tls_emulator "$work/tls.log" "$work/tls-store"
https=$endpoint
mkdir -p "$work/plain-store"
start_emulator "$work/plain.log" --dir "$work/plain-store"
http=$endpoint
echo "sink: $tool (https $https, http $http); payload $size_mib MiB on tmpfs; load $(cut -d' ' -f1-3 /proc/loadavg)"

# measure LABEL COMMAND...: runs COMMAND under /usr/bin/time and prints one row.
measure() {
    local label=$1
    shift
    [[ -z "${ONLY:-}" || "$label" =~ $ONLY ]] || return 0
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" > /dev/null
    read -r wall user system < "$work/time"
    printf '%s\t%s\t%s\n' "$label" "$wall" "$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')" >> "$work/rows"
    awk -v l="$label" -v w="$wall" -v u="$user" -v s="$system" -v m="$size_mib" 'BEGIN {
        printf "%-44s %7.2f s wall %6.2f user %6.2f sys  %8.1f MB/s  %6.2f CPU-s/GiB\n",
            l, w, u, s, m * 1.048576 / w, (u + s) * 1024 / m }'
}

# curl_up ENDPOINT NAME: the curl command line of a one-request upload of the payload.
curl_up() {
    curl_command=(curl -sS --fail --cacert "$certificates/test-ca.pem" -X POST -T "$work/payload"
        -H "Content-Type: application/octet-stream" "$1/upload/storage/v1/b/bench/o?uploadType=media&name=$2")
}

# The object every download row reads, stored once.
curl_up "$https" down-source
"${curl_command[@]}" > /dev/null

for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    turn_order "$round"
    for i in "${order[@]}"; do
        measure "putFile https  client $i" "${clients[$i]}" cp --quiet --token bench --ca-file "$certificates/test-ca.pem" --endpoint "$https" "$work/payload" \
            "gs://bench/up-$i"
    done
    curl_up "$https" up-curl
    measure "upload https   curl" "${curl_command[@]}"
    for i in "${order[@]}"; do
        measure "putFile http   client $i" "${clients[$i]}" cp --quiet --endpoint "$http" "$work/payload" \
            "gs://bench/up-$i"
    done
    curl_up "$http" up-curl
    measure "upload http    curl" "${curl_command[@]}"
    for i in "${order[@]}"; do
        rm -f "$work/down"
        measure "download https client $i" "${clients[$i]}" cp --quiet --token bench --ca-file "$certificates/test-ca.pem" --endpoint "$https" "gs://bench/down-source" \
            "$work/down"
        [[ ! -e "$work/down" ]] || cmp -s "$work/down" "$work/payload" || { echo "client $i downloaded wrong bytes" >&2; exit 1; }
    done
    rm -f "$work/down"
    measure "download https curl -o" curl -sS --fail --cacert "$certificates/test-ca.pem" -o "$work/down" \
        "$https/download/storage/v1/b/bench/o/down-source?alt=media"
    [[ ! -e "$work/down" ]] || cmp -s "$work/down" "$work/payload" || { echo "curl downloaded wrong bytes" >&2; exit 1; }
done

echo "== medians of $rounds rounds"
print_medians "$work/rows" "$size_mib"
