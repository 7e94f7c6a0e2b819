#!/usr/bin/env bash
# The Google Cloud CLI (`gcloud storage`), unchanged, moving 20 MB and 200 MB files through a
# `cloud-storage emulator` started on a free port: a single resumable upload, a parallel
# composite upload, a download (gcloud slices those above 150 MiB into parallel ranges), a
# server-side gs→gs copy and `mv`. Every transfer is checked byte for byte with `cmp`, and the
# composite objects' component counts with `objects describe`. Too large and too slow for CI;
# the CI suite runs the same commands at 1 KB and 3 MB (GCloudStorageTests).
#
#   Benchmarks/scripts/gcloud-transfers.sh [SIZES_MB...]      (default 20 200)
#
# Uses $CLOUD_STORAGE, else .build/release/cloud-storage, else .build/debug/cloud-storage
# (build first: swift build -c release --product cloud-storage). Needs gcloud on PATH.
# Set EMULATOR_ARGS (for example "--dir /tmp/x") to change how the emulator stores objects.
# Prints one line per transfer with its time and rate; exits 1 on the first wrong answer.
set -euo pipefail
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(20 200)
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
find_tool "$root"
command -v gcloud > /dev/null || { echo "gcloud is not installed; nothing to measure" >&2; exit 1; }

work=$(mktemp -d)
emulator_pid=
cleanup() {
    [[ -n "$emulator_pid" ]] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # EMULATOR_ARGS is a list of words on purpose.
start_emulator "$work/emulator.log" ${EMULATOR_ARGS:-}

mkdir -p "$work/files"
gcloud_environment "$endpoint" "$work/config"
cd "$work/files"

now() { date +%s.%N; }
fail() {
    echo "FAILED: $1" >&2
    exit 1
}
# timed LABEL MB COMMAND...: runs the command and prints its time and rate.
timed() {
    local label=$1 megabytes=$2
    shift 2
    local start end
    start=$(now)
    "$@" > "$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "$label"; }
    end=$(now)
    awk -v l="$label" -v m="$megabytes" -v a="$start" -v b="$end" \
        'BEGIN { printf "%-44s %7.2f s  %8.1f MB/s\n", l, b - a, m / (b - a) }'
}

b=gs://gcloud-bench
gcloud storage buckets create $b > /dev/null 2>&1 || fail "buckets create"
echo "gcloud $(gcloud version 2>/dev/null | sed -n 's/^Google Cloud SDK //p') against $tool emulator"
for mb in "${sizes[@]}"; do
    file=f$mb.bin
    head -c $((mb * 1000 * 1000)) /dev/urandom > "$file"
    timed "cp up ${mb} MB (resumable)" "$mb" \
        env CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=False gcloud storage cp "$file" $b/$file
    timed "cp up ${mb} MB (parallel composite, 8 MiB)" "$mb" \
        env CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=True \
        CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_THRESHOLD=1M \
        CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_COMPONENT_SIZE=8M \
        gcloud storage cp "$file" $b/composite-$file
    components=$(gcloud storage objects describe $b/composite-$file --format='value(component_count)')
    # Below two components' worth gcloud uploads one object, with no component count.
    ((mb < 17)) || [[ "$components" -gt 1 ]] || fail "parallel composite upload of $mb MB: $components components"
    timed "cp down ${mb} MB" "$mb" gcloud storage cp $b/$file "back-$file"
    cmp "$file" "back-$file" || fail "download of $mb MB"
    timed "cp down ${mb} MB (the composite object)" "$mb" gcloud storage cp $b/composite-$file "back-composite-$file"
    cmp "$file" "back-composite-$file" || fail "download of the composite $mb MB"
    timed "cp gs to gs ${mb} MB (rewrite)" "$mb" gcloud storage cp $b/$file $b/copy-$file
    timed "mv ${mb} MB" "$mb" gcloud storage mv $b/copy-$file $b/moved-$file
    gcloud storage cp $b/moved-$file "moved-$file" > /dev/null 2>&1 || fail "download of the moved object"
    cmp "$file" "moved-$file" || fail "copy then mv of $mb MB"
    rm -f "back-$file" "back-composite-$file" "moved-$file"
done
echo "all transfers byte-identical"
