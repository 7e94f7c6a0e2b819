#!/usr/bin/env bash
# Resuming `cloud-storage cp` after `kill -9`: uploads a file (1 GiB by default) to a
# `cloud-storage emulator` (directory-backed, on a free port, a process of its own that stays up:
# only the client dies), kills the client with SIGKILL once about half the bytes are on the
# emulator's disk, runs the same command again, and prints the bytes the emulator received in all
# against the file's size, and the wall time of each phase. The goal: at most 1.6x the size.
#
#   Benchmarks/scripts/cp-resume-kill9.sh [SIZE_MIB] [KILL_AT_FRACTION]      (default 1024 0.5)
#
# Uses $CLOUD_STORAGE, else builds .build/release/cloud-storage (swift build -c release).
# The session record goes to a temporary $XDG_STATE_HOME, the emulator's files to a temporary
# directory; both are removed at the end.
set -euo pipefail
size_mib=${1:-1024}
fraction=${2:-0.5}
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=${CLOUD_STORAGE:-}
if [[ -z "$tool" ]]; then
    (cd "$root" && swift build -c release --product cloud-storage 2>&1 | tail -1) >&2
    tool="$root/.build/release/cloud-storage"
fi
[[ -x "$tool" ]] || { echo "no cloud-storage executable at $tool" >&2; exit 1; }

work=$(mktemp -d)
emulator_pid=
client_pid=
cleanup() {
    [[ -n "$client_pid" ]] && kill -9 "$client_pid" 2>/dev/null
    [[ -n "$emulator_pid" ]] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

size=$((size_mib * 1024 * 1024))
kill_at=$(awk -v s="$size" -v f="$fraction" 'BEGIN { printf "%d", s * f }')
head -c "$size" /dev/urandom > "$work/file.bin"

# shellcheck source=Benchmarks/scripts/common.sh
source "$root/Benchmarks/scripts/common.sh"
start_emulator "$work/emulator.log" --dir "$work/emulator"

export XDG_STATE_HOME="$work/state"
copy=("$tool" cp --quiet --endpoint "$endpoint" "$work/file.bin" gs://bench/resume.bin)
now() { date +%s.%N; }
# The bytes the emulator holds for the open session: its staging file grows as they arrive.
staged() { stat -c %s "$work"/emulator/.upload-sessions/*.data 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

start=$(now)
"${copy[@]}" > "$work/first.log" 2>&1 &
client_pid=$!
# Running, and not a zombie: an unreaped client that already ended still answers kill -0.
running() { [[ "$(ps -o stat= -p "$client_pid" 2>/dev/null)" =~ ^[^Z] ]]; }
while (($(staged) < kill_at)) && running; do sleep 0.005; done
running || { echo "cp ended before it was killed; try a larger size" >&2; exit 1; }
kill -9 "$client_pid" 2>/dev/null || { echo "cp ended before it was killed" >&2; exit 1; }
wait "$client_pid" 2>/dev/null || true
client_pid=
killed=$(now)
at_kill=$(staged)
records=$(ls "$XDG_STATE_HOME/cloud-storage/uploads" 2>/dev/null | wc -l)

"${copy[@]}" > "$work/second.log" 2>&1
second=$(now)

kill -INT "$emulator_pid"
wait "$emulator_pid" 2>/dev/null || true
emulator_pid=
received=$(sed -n 's/.*Stopped after receiving \([0-9]*\) bytes.*/\1/p' "$work/emulator.log")

echo "file: $size bytes; killed at $at_kill staged bytes after $(awk -v a="$start" -v b="$killed" 'BEGIN { printf "%.2f s", b - a }') ($records session record kept)"
echo "rerun: $(awk -v a="$killed" -v b="$second" 'BEGIN { printf "%.2f s", b - a }'); it said: $(sed 's/^cloud-storage: //' "$work/second.log" | tr '\n' ' ')"
awk -v r="$received" -v s="$size" 'BEGIN { printf "emulator received %d bytes in all: %.3f x the file (goal <= 1.6)\n", r, r / s }'
