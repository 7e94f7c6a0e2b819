#!/usr/bin/env bash
# Runs the Google Cloud CLI's `gcloud storage` commands against a running emulator, unchanged,
# and checks what comes back. Usage: gcloud_storage_calls.sh http://127.0.0.1:PORT/ WORKDIR [CLOUD_STORAGE]
# With CLOUD_STORAGE (our CLI's binary), objects gcloud stored gzip-compressed (cp -Z) are also
# downloaded through it (cp and cat) and must come back byte-identical.
# Prints one `ok <step>` line per step and `all <n> steps passed` at the end; the first failure
# prints what went wrong and exits 1.
set -euo pipefail

endpoint=$1
work=$2
ours=${3:-}
mkdir -p "$work/config" "$work/files"
export CLOUDSDK_CONFIG="$work/config"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE="$endpoint"
export CLOUDSDK_AUTH_DISABLE_CREDENTIALS=True
export CLOUDSDK_CORE_PROJECT=emulator-test
export CLOUDSDK_CORE_DISABLE_PROMPTS=1
export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
cd "$work/files"

steps=0
ok() {
    steps=$((steps + 1))
    echo "ok $1"
}
fail() {
    echo "FAILED: $1" >&2
    exit 1
}
g() {
    gcloud storage "$@"
}

# Deterministic files: 1 KB (a multipart upload) and 3 MB (resumable from 1 MiB on, and a
# parallel composite upload of 1 MiB components). The 1 KB file ends in a CR, which gcloud's
# LF-delimited multipart body must keep (1 in 256 random files does).
head -c 1023 /dev/urandom > small.bin
printf '\r' >> small.bin
head -c 3000000 /dev/urandom > large.bin
mkdir -p tree/sub
printf 'alpha\n' > tree/a.txt
printf 'beta\n' > tree/sub/b.txt

b=gs://gcloud-calls
g buckets create $b
g cp small.bin $b/small.bin
CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD=1M g cp large.bin $b/large.bin
CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=True \
    CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_THRESHOLD=1M \
    CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_COMPONENT_SIZE=1M \
    CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD=1M \
    g cp large.bin $b/composite.bin
g cp -r tree $b/
ok "buckets create, cp 1 KB (multipart), 3 MB (resumable, parallel composite), cp -r"

g cp $b/large.bin $b/large-copy.bin
g mv $b/large-copy.bin $b/large-moved.bin
g objects compose $b/tree/a.txt $b/tree/sub/b.txt $b/ab.txt
g objects update $b/tree/a.txt --content-type=text/x-test --custom-metadata=colour=blue
ok "cp gs to gs, mv, objects compose, objects update"

mkdir back
g cp $b/small.bin $b/large.bin $b/composite.bin $b/large-moved.bin $b/ab.txt back/
cmp small.bin back/small.bin || fail "1 KB round trip"
cmp large.bin back/large.bin || fail "3 MB round trip"
cmp large.bin back/composite.bin || fail "parallel composite round trip"
cmp large.bin back/large-moved.bin || fail "gs to gs copy, then mv"
[ "$(cat back/ab.txt)" = "$(printf 'alpha\nbeta')" ] || fail "objects compose"
[ "$(g cat -r 1-3 $b/tree/a.txt)" = "lph" ] || fail "cat -r"
ok "cp back, cat -r"

[ "$(g objects describe $b/composite.bin --format='value(component_count)')" = 3 ] \
    || fail "parallel composite upload: 3 components"
[ "$(g objects describe $b/tree/a.txt --format='value(content_type,custom_fields)')" = \
    "$(printf 'text/x-test\tcolour=blue')" ] || fail "objects update"
listing=$(g ls -a -l -r $b)
grep -q "$b/tree/sub/b.txt#[0-9]" <<<"$listing" || fail "ls -a -l -r: $listing"
grep -q 'TOTAL: 7 objects' <<<"$listing" || fail "ls -a -l -r total: $listing"
if grep -q large-copy <<<"$listing"; then fail "mv left its source: $listing"; fi
ok "objects describe, ls -a -l -r"

hashes=$(g hash small.bin $b/small.bin --format='value(crc32c_hash)')
[ "$(sed -n 1p <<<"$hashes")" = "$(sed -n 2p <<<"$hashes")" ] || fail "hash: $hashes"
du=$(g du -s $b)
grep -q "^$((1024 + 3000000 * 3 + 6 + 5 + 11))" <<<"$du" || fail "du -s: $du"
ok "hash, du"

# cp -Z: stored gzip-compressed with Content-Encoding gzip; every reader gets the original back.
for i in $(seq 1 3000); do echo "const line$i = 'a compressible line of text, number $i';"; done > page.js
g cp -Z page.js $b/gzip/page.js
[ "$(g objects describe $b/gzip/page.js --format='value(content_encoding)')" = gzip ] || fail "cp -Z: encoding"
g cp $b/gzip/page.js back/page.js
cmp page.js back/page.js || fail "cp -Z, then gcloud cp back"
if [ -n "$ours" ]; then
    "$ours" cp --quiet --endpoint "$endpoint" $b/gzip/page.js back/ours.js || fail "cloud-storage cp of a cp -Z object"
    cmp page.js back/ours.js || fail "cloud-storage cp of a cp -Z object: bytes"
    "$ours" cat --endpoint "$endpoint" $b/gzip/page.js > back/ours-cat.js || fail "cloud-storage cat of a cp -Z object"
    cmp page.js back/ours-cat.js || fail "cloud-storage cat of a cp -Z object: bytes"
    "$ours" cp --quiet -Z --endpoint "$endpoint" page.js $b/gzip/ours.js || fail "cloud-storage cp -Z"
    [ "$(g objects describe $b/gzip/ours.js --format='value(content_encoding)')" = gzip ] || fail "ours -Z: encoding"
    g cp $b/gzip/ours.js back/ours-by-gcloud.js
    cmp page.js back/ours-by-gcloud.js || fail "cloud-storage cp -Z, then gcloud cp back"
fi
g rm -r $b/gzip
ok "cp -Z (gzip objects) both ways${ours:+, also through cloud-storage cp and cat}"

g rsync tree $b/synced --recursive
g rsync $b/synced synced.back --recursive
diff -r tree synced.back || fail "rsync both ways"
ok "rsync"

# 20 MB both ways, single resumable and parallel composite (8 MiB components); 200 MB runs in
# Benchmarks/scripts/gcloud-transfers.sh, too slow for the suite.
big=gs://gcloud-calls-20mb
head -c 20000000 /dev/urandom > big.bin
g buckets create $big
CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=False g cp big.bin $big/big.bin
CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=True \
    CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_THRESHOLD=1M \
    CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_COMPONENT_SIZE=8M \
    g cp big.bin $big/composite.bin
g cp $big/big.bin $big/composite.bin back/
cmp big.bin back/big.bin || fail "20 MB round trip"
cmp big.bin back/composite.bin || fail "20 MB parallel composite round trip"
[ "$(g objects describe $big/composite.bin --format='value(component_count)')" = 3 ] \
    || fail "20 MB parallel composite upload: 3 components"
ok "cp 20 MB both ways (resumable, parallel composite)"

g rm -r $b/tree
g rm -r $b $big
if g buckets list --format='value(name)' | grep -q gcloud-calls; then fail "rm -r of the buckets"; fi
ok "rm -r"

echo "all $steps steps passed"
