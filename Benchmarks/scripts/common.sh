# Shared by the benchmark scripts (sourced, not run): finding the `cloud-storage` tool and
# starting its emulator on a free port.

# find_tool ROOT: sets $tool to $CLOUD_STORAGE, else .build/release/cloud-storage, else
# .build/debug/cloud-storage; exits 1 when none is executable.
find_tool() {
    tool=${CLOUD_STORAGE:-}
    if [[ -z "$tool" ]]; then
        for candidate in "$1/.build/release/cloud-storage" "$1/.build/debug/cloud-storage"; do
            if [[ -x "$candidate" ]]; then tool=$candidate; break; fi
        done
    fi
    [[ -x "$tool" ]] || { echo "no cloud-storage executable; build it first" >&2; exit 1; }
}

# start_emulator LOG [ARGS...]: starts `$tool emulator --port 0 ARGS` in the background, logging
# to LOG; sets $emulator_pid, and $endpoint once it listens (exits 1 if it never does).
start_emulator() {
    local log=$1
    shift
    "$tool" emulator --port 0 "$@" > "$log" 2>&1 &
    emulator_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$log" 2>/dev/null && break
        sleep 0.1
    done
    endpoint=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$log")
    [[ -n "$endpoint" ]] || { cat "$log" >&2; exit 1; }
}
