#!/usr/bin/env bash
# Transfers across a simulated WAN: a release `cloud-storage emulator --shape` (default
# rate=50MB/s,latency=10ms: each connection capped at 50 MB/s each way, a 10 ms round trip
# before each answer) on a free loopback port, and, against it, in interleaved rounds:
#   - a download and an upload of one SIZE_MIB file: `cloud-storage cp` (each CLIENT),
#     `gcloud storage cp` (sliced downloads, parallel composite uploads, as gcloud decides),
#     and python-storage's transfer manager (download_chunks_concurrently and
#     upload_chunks_concurrently, the XML API multipart upload);
#   - an upload of a tree of FILES files of 16 KiB: `cloud-storage cp -r` (each CLIENT) and
#     `gcloud storage cp -r`.
# Every download is checked with cmp. Medians over the rounds close the run: MB/s or files/s,
# and the peak RSS of each cloud-storage client (/usr/bin/time); with two CLIENTs (OLD NEW),
# also NEW's throughput over OLD's.
#
#   Benchmarks/scripts/shaped-transfers.sh SIZE_MIB FILES ROUNDS CLIENT...
#       e.g. shaped-transfers.sh 64 500 3 .build/release/cloud-storage
#            shaped-transfers.sh 2048 10000 3 /work/old/.build/release/cloud-storage .build/release/cloud-storage
#
# Environment: SHAPE (the --shape value; SHAPE=none runs unshaped); SINK, the tool that runs the
# emulator (default: the last CLIENT, which must know --shape); ONLY, an extended regular
# expression that keeps the rows whose label matches (e.g. ONLY='download'); FILE_KIB (16);
# WORK_PARENT, where the payload, the tree and the emulator's objects live (default /dev/shm:
# tmpfs, so that no disk is measured; it needs about (CLIENTs + 3) × SIZE_MIB free).
# gcloud rows are skipped when gcloud is not installed, and the python upload row when the
# emulator does not implement the XML multipart upload. Python's client is installed with pip
# into .build/google-cloud-storage (the test suite's virtualenv) on first use.
# Runs only on loopback. Check `uptime` first: on a loaded machine the numbers mean little.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
size_mib=${1:?SIZE_MIB}
files=${2:?FILES}
shift 2
read_size_rounds_clients "$size_mib" "$@"
shape=${SHAPE:-rate=50MB/s,latency=10ms}
file_kib=${FILE_KIB:-16}
tool=${SINK:-${clients[-1]}}
for client in "${clients[@]}" "$tool"; do
    [[ -x "$client" ]] || { echo "not an executable: $client" >&2; exit 2; }
done

work=$(mktemp -d "${WORK_PARENT:-/dev/shm}/shaped-transfers.XXXXXX")
trap 'stop_emulators; rm -rf "$work"' EXIT
head -c $((size_mib * 1048576)) /dev/urandom > "$work/payload"
mkdir -p "$work/tree" "$work/store"
for ((i = 0; i < files; i++)); do
    head -c $((file_kib * 1024)) /dev/urandom > "$work/tree/f$(printf %05d "$i").bin"
done

shape_arguments=(--shape "$shape")
[[ "$shape" != none ]] || shape_arguments=()
start_emulator "$work/emulator.log" --dir "$work/store" "${shape_arguments[@]}"
echo "emulator: $tool --shape $shape at $endpoint; $size_mib MiB file, $files files of $file_kib KiB;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"

has_gcloud=false
if command -v gcloud > /dev/null; then
    has_gcloud=true
    gcloud_environment "$endpoint" "$work/gcloud-config"
else
    echo "gcloud is not installed: its rows are skipped"
fi
has_python=false
if python_storage "$root"; then has_python=true; else echo "python-storage rows are skipped"; fi
python_upload=$has_python

# measure LABEL UNIT COMMAND...: runs COMMAND under /usr/bin/time, prints the row and records
# wall seconds and peak RSS for the summary. UNIT is MB (the file) or files (the tree).
measure() {
    local label=$1 unit=$2
    shift 2
    [[ -z "${ONLY:-}" || "$label" =~ $ONLY ]] || return 0
    local status=0
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/last.log" 2>&1 || status=$?
    if ((status != 0)); then
        echo "FAILED ($status): $label" >&2
        tail -5 "$work/last.log" >&2
        return "$status"
    fi
    local wall rss
    read -r wall rss < "$work/time"
    printf '%s\t%s\t%s\t%s\n' "$label" "$unit" "$wall" "$rss" >> "$work/results"
    awk -v l="$label" -v u="$unit" -v w="$wall" -v r="$rss" -v m="$size_mib" -v n="$files" 'BEGIN {
        if (u == "MB") printf "%-40s %7.2f s %9.1f MB/s    peak RSS %6.1f MiB\n", l, w, m * 1.048576 / w, r / 1024
        else printf "%-40s %7.2f s %9.1f files/s peak RSS %6.1f MiB\n", l, w, n / w, r / 1024 }'
}

# check FILE WHO: FILE holds the payload's bytes (then goes), or the run stops.
check() {
    [[ ! -e "$1" ]] && return 0
    cmp -s "$1" "$work/payload" || { echo "$2 downloaded wrong bytes" >&2; exit 1; }
    rm -f "$1"
}

# The object every download row reads, stored once (unshaped rows would be faster, but this is
# not measured).
"$tool" cp --quiet --endpoint "$endpoint" "$work/payload" gs://bench/source > /dev/null

for ((round = 1; round <= rounds; round++)); do
    echo "-- round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    turn_order "$round"
    for i in "${order[@]}"; do
        measure "download cp            client $i" MB "${clients[$i]}" cp --quiet --endpoint "$endpoint" \
            gs://bench/source "$work/down"
        check "$work/down" "client $i"
    done
    if $has_gcloud; then
        measure "download gcloud storage cp" MB gcloud storage cp gs://bench/source "$work/down"
        check "$work/down" gcloud
    fi
    if $has_python; then
        measure "download python chunks_concurrently" MB "$python" "$root/Benchmarks/scripts/transfer_manager.py" \
            download "$endpoint" bench source "$work/down"
        check "$work/down" python-storage
    fi
    for i in "${order[@]}"; do
        measure "upload cp              client $i" MB "${clients[$i]}" cp --quiet --endpoint "$endpoint" \
            "$work/payload" "gs://bench/up-cp-$i"
    done
    if $has_gcloud; then
        measure "upload gcloud storage cp" MB env CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=True \
            gcloud storage cp "$work/payload" gs://bench/up-gcloud
    fi
    if $python_upload; then
        status=0
        measure "upload python chunks_concurrently" MB "$python" "$root/Benchmarks/scripts/transfer_manager.py" \
            upload "$endpoint" bench up-python "$work/payload" || status=$?
        if ((status == 3)); then
            echo "python upload_chunks_concurrently skipped: the emulator does not (yet) implement the XML" \
                "multipart upload"
            python_upload=false
        elif ((status != 0)); then
            exit "$status"
        fi
    fi
    for i in "${order[@]}"; do
        measure "cp -r up               client $i" files "${clients[$i]}" cp -r --quiet --endpoint "$endpoint" \
            "$work/tree" "gs://bench/tree-cp-$i/"
    done
    if $has_gcloud; then
        measure "cp -r up gcloud storage cp -r" files gcloud storage cp -r "$work/tree" gs://bench/tree-gcloud/
    fi
done

echo "-- medians of $rounds rounds ($shape)"
cut -f1,2 "$work/results" | awk '!seen[$0]++' | while IFS=$'\t' read -r label unit; do
    wall=$(awk -F'\t' -v l="$label" '$1 == l { print $3 }' "$work/results" | median)
    rss=$(awk -F'\t' -v l="$label" '$1 == l { print $4 }' "$work/results" | median)
    awk -v l="$label" -v u="$unit" -v w="$wall" -v r="$rss" -v m="$size_mib" -v n="$files" 'BEGIN {
        if (u == "MB") printf "%-40s %7.2f s %9.1f MB/s    peak RSS %6.1f MiB\n", l, w, m * 1.048576 / w, r / 1024
        else printf "%-40s %7.2f s %9.1f files/s peak RSS %6.1f MiB\n", l, w, n / w, r / 1024 }'
    printf '%s\t%s\n' "$label" "$wall" >> "$work/medians"
done
if ((${#clients[@]} == 2)); then
    echo "-- client 1 (NEW) over client 0 (OLD), throughput"
    for row in "download cp" "upload cp" "cp -r up"; do
        awk -F'\t' -v r="$row" '
            index($1, r) == 1 && $1 ~ /client 0$/ { old = $2 }
            index($1, r) == 1 && $1 ~ /client 1$/ { new = $2 }
            END { if (old && new) printf "%-40s %6.2fx\n", r, old / new }' "$work/medians"
    done
fi
