#!/usr/bin/env bash
# Where a `cloud-storage cp` upload over https spends its CPU: `perf record` of the client alone
# (the sink is a TLS `cloud-storage emulator` in its own process, on tmpfs), then the top symbols
# and the system-call counts (`strace -c`) of a second upload of the same file.
#
#   Benchmarks/scripts/tls-upload-profile.sh SIZE_MIB CLIENT
#       e.g. tls-upload-profile.sh 1024 .build/release/cloud-storage
#
# $SINK is the emulator's tool (default: CLIENT). Needs perf and strace. Runs only on loopback.
set -euo pipefail
size_mib=${1:?SIZE_MIB}
client=${2:?CLIENT}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
tool=${SINK:-$client}
tls_bench_workspace tls-upload-profile "$size_mib"
start_tls_emulator "$work/emulator.log" "$work/store"
upload=("$client" cp --quiet --token bench --ca-file "$certificates/test-ca.pem" --endpoint "$endpoint" "$work/payload")

perf record -F 999 -g -o "$work/perf.data" -- "${upload[@]}" gs://bench/profiled > /dev/null 2>&1
echo "== top symbols of $client (999 Hz samples of the client process only)"
perf report -i "$work/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null \
    | grep -E '^ +[0-9]' | head -20 | cut -c1-120
echo "== system calls"
strace -f -c -o "$work/strace.txt" "${upload[@]}" gs://bench/counted > /dev/null 2>&1
head -12 "$work/strace.txt"
