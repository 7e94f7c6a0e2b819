# Shared by the benchmark scripts (sourced, not run): finding the `cloud-storage` tool and
# starting its emulator on a free port.
emulator_pids=()

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
# to LOG; sets $emulator_pid (and adds it to $emulator_pids), and $endpoint once it listens (exits 1
# if it never does).
start_emulator() {
    local log=$1
    shift
    "$tool" emulator --port 0 "$@" > "$log" 2>&1 &
    emulator_pid=$!
    emulator_pids+=("$emulator_pid")
    for _ in $(seq 100); do
        grep -q "listening on" "$log" 2>/dev/null && break
        sleep 0.1
    done
    endpoint=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$log")
    [[ -n "$endpoint" ]] || { cat "$log" >&2; exit 1; }
}

# tls_bench_workspace NAME SIZE_MIB: a fresh tmpfs directory $work holding $work/payload, SIZE_MIB
# random MiB; it and every emulator started after it (start_emulator) go when the script exits.
# Sets $certificates, the test CA and the emulator's certificate for --tls-cert/--ca-file.
tls_bench_workspace() {
    work=$(mktemp -d "/dev/shm/$1.XXXXXX")
    certificates="$root/Tests/TLSTestCertificates"
    trap 'stop_emulators; rm -rf "$work"' EXIT
    head -c $(($2 * 1048576)) /dev/urandom > "$work/payload"
}

# start_tls_emulator LOG STORE: start_emulator keeping objects in STORE, serving https with the
# test certificate (clients trust it with --ca-file "$certificates/test-ca.pem").
start_tls_emulator() {
    mkdir -p "$2"
    start_emulator "$1" --dir "$2" --tls-cert "$certificates/localhost.pem" --tls-key "$certificates/localhost.key"
}

# stop_emulators: stops every emulator start_emulator started.
stop_emulators() {
    local pid
    for pid in "${emulator_pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    return 0
}

# read_size_rounds_clients SIZE_MIB ROUNDS CLIENT...: sets $size_mib, $rounds and the $clients
# array from a script's arguments; exits 2 when one is missing.
read_size_rounds_clients() {
    size_mib=${1:?SIZE_MIB}
    rounds=${2:?ROUNDS}
    shift 2
    clients=("$@")
    [[ ${#clients[@]} -gt 0 ]] || { echo "name at least one cloud-storage CLIENT" >&2; exit 2; }
}

# gcloud_environment ENDPOINT CONFIG_DIR: points `gcloud storage`, unchanged, at an emulator:
# anonymous, no prompts, no update checks, its own configuration directory.
gcloud_environment() {
    mkdir -p "$2"
    export CLOUDSDK_CONFIG="$2"
    export CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE="${1%/}/"
    export CLOUDSDK_AUTH_DISABLE_CREDENTIALS=True
    export CLOUDSDK_CORE_PROJECT=emulator-bench
    export CLOUDSDK_CORE_DISABLE_PROMPTS=1
    export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
    export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
}

# python_storage ROOT: sets $python to the interpreter of the virtualenv the test suite uses for
# Google's Python client (ROOT/.build/google-cloud-storage, the same pinned version and marker
# file, under the same lock), installing it with pip first if needed; returns 1 (with a
# message) when python3 or pip fails.
python_storage() {
    local requirement="google-cloud-storage==3.17.1" directory="$1/.build/google-cloud-storage"
    python="$directory/venv/bin/python"
    mkdir -p "$directory"
    (
        flock 9
        # The marker the test suite writes: the requirements, then what its locate step printed (nothing).
        [[ "$(cat "$directory/installed" 2>/dev/null)" == "$requirement" ]] && exit 0
        rm -rf "$directory/venv" "$directory/installed"
        python3 -m venv "$directory/venv" && "$directory/venv/bin/pip" install --quiet "$requirement" \
            > "$directory/install.log" 2>&1 && printf '%s\n\n' "$requirement" > "$directory/installed"
    ) 9> "$directory/install.lock" || { echo "cannot install $requirement (see $directory/install.log)" >&2; return 1; }
}

# median: the median of the numbers on standard input, one a line.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# turn_order ROUND: sets $order to the indices of $clients, first to last in odd rounds and last
# to first in even ones. Each transfer frees or allocates as much memory as the file, which the
# next one pays for in page faults (on a VM, host faults too): no client always follows another.
turn_order() {
    local i
    order=("${!clients[@]}")
    if (($1 % 2 == 0)); then
        order=()
        for ((i = ${#clients[@]} - 1; i >= 0; i--)); do order+=("$i"); done
    fi
}

# print_medians ROWS SIZE_MIB: for each label in ROWS (lines "LABEL<TAB>WALL<TAB>CPU", both in
# seconds, for SIZE_MIB MiB moved), the median speed and CPU seconds per GiB, by label.
print_medians() {
    local label wall cpu
    cut -f1 "$1" | sort -u | while IFS= read -r label; do
        wall=$(awk -F'\t' -v l="$label" '$1 == l { print $2 }' "$1" | median)
        cpu=$(awk -F'\t' -v l="$label" '$1 == l { print $3 }' "$1" | median)
        awk -v l="$label" -v w="$wall" -v c="$cpu" -v m="$2" 'BEGIN {
            printf "  %-40s %8.1f MB/s %6.3f CPU-s/GiB\n", l, m * 1.048576 / w, c * 1024 / m }'
    done
}
