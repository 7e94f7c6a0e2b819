"""Runs every object call of Google's Python client (google-cloud-storage) against a running
emulator, unchanged, and checks the bytes and metadata that come back.

Usage: STORAGE_EMULATOR_HOST=http://127.0.0.1:PORT python google_cloud_storage_calls.py
Prints one `ok <step>` line per step and `all <n> steps passed` at the end; any failure
raises (a traceback, exit status 1).
"""

import base64
import gzip
import os

import google_crc32c
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

steps = 0


def ok(step):
    global steps
    steps += 1
    print("ok", step, flush=True)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def refused(call, error, message):
    try:
        call()
    except error:
        return
    raise AssertionError(message)


def payload(size, seed):
    state = seed
    out = bytearray(size)
    for i in range(size):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = state >> 23 & 0xFF
    return bytes(out)


def crc32c(data):
    return base64.b64encode(google_crc32c.Checksum(data).digest()).decode()


host = os.environ["STORAGE_EMULATOR_HOST"]
client = storage.Client(
    project="test", credentials=AnonymousCredentials(), client_options={"api_endpoint": host}
)

# Buckets: insert, get, list, patch, delete.
bucket = client.create_bucket("py-calls")
other = client.create_bucket("py-calls-other")
expect(client.get_bucket("py-calls").name == "py-calls", "get_bucket")
names = [b.name for b in client.list_buckets()]
expect("py-calls" in names and "py-calls-other" in names, "list_buckets: %r" % names)
refused(lambda: client.create_bucket("py-calls"), exceptions.Conflict, "a second create_bucket is a conflict")
refused(lambda: client.get_bucket("py-calls-missing"), exceptions.NotFound, "get_bucket of a missing bucket")
ok("buckets")

# Uploads: multipart (small), resumable (chunked), then downloads and ranges.
small = payload(1000, 1)
blob = bucket.blob("dir/small.bin")
blob.upload_from_string(small, content_type="application/x-test")
expect(blob.crc32c == crc32c(small), "multipart crc32c")
expect(bucket.blob("dir/small.bin").download_as_bytes(checksum="crc32c") == small, "multipart bytes")
ok("multipart upload and download")

large = payload(700_000, 2)
blob = bucket.blob("dir/large.bin", chunk_size=256 * 1024)
blob.upload_from_string(large)
expect(bucket.get_blob("dir/large.bin").size == len(large), "resumable size")
expect(bucket.blob("dir/large.bin").download_as_bytes(checksum="md5") == large, "resumable bytes")
ok("resumable upload and download")

expect(bucket.blob("dir/large.bin").download_as_bytes(start=10, end=99) == large[10:100], "range")
expect(bucket.blob("dir/large.bin").download_as_bytes(start=699_990) == large[699_990:], "open range")
ok("range downloads")

# An object stored gzip-compressed (Content-Encoding: gzip): the client asks for it with
# Accept-Encoding: gzip, checks the stored bytes and decodes them; raw_download keeps them.
text = b"".join(b"line %d of a compressible object\n" % i for i in range(5000))
compressed = gzip.compress(text, mtime=0)
blob = bucket.blob("dir/page.txt")
blob.content_encoding = "gzip"
blob.upload_from_string(compressed, content_type="text/plain")
expect(bucket.get_blob("dir/page.txt").content_encoding == "gzip", "gzip object's encoding")
expect(bucket.blob("dir/page.txt").download_as_bytes(checksum="crc32c") == text, "gzip object decoded")
expect(bucket.blob("dir/page.txt").download_as_bytes(raw_download=True) == compressed, "gzip object raw")
ok("gzip object download")

# Patch and reload.
blob = bucket.get_blob("dir/small.bin")
blob.metadata = {"colour": "blue"}
blob.cache_control = "no-cache"
blob.patch()
again = bucket.get_blob("dir/small.bin")
expect(again.metadata == {"colour": "blue"} and again.cache_control == "no-cache", "patch fields")
expect(again.metageneration == 2, "patch bumps the metageneration")
expect(again.content_type == "application/x-test", "patch keeps the content type")
ok("patch")

# Copy, across buckets, keeps bytes and metadata.
copied = bucket.copy_blob(again, other, "copied.bin")
expect(copied.download_as_bytes() == small, "copy bytes")
expect(copied.metadata == {"colour": "blue"}, "copy metadata")
expect(copied.generation != again.generation, "copy is a new generation")
ok("copy_blob")

# Rewrite in 1 MiB calls, with the token each call hands back. The client has no setting for
# maxBytesRewrittenPerCall: a destination blob adds it to the query parameters it sends.
class RewriteInMebibytes(storage.Blob):
    @property
    def _query_params(self):
        params = super()._query_params
        params["maxBytesRewrittenPerCall"] = 1024 * 1024
        return params


big = payload(3 * 1024 * 1024 + 5, 3)
bucket.blob("big.bin").upload_from_string(big)
destination = RewriteInMebibytes("rewritten.bin", other)
token, calls = None, 0
while True:
    token, rewritten, total = destination.rewrite(bucket.blob("big.bin"), token=token)
    calls += 1
    expect(total == len(big), "rewrite objectSize")
    if token is None:
        break
    expect(rewritten == calls * 1024 * 1024, "rewrite progress %d after %d calls" % (rewritten, calls))
expect(calls == 4, "rewrite took %d calls" % calls)
expect(other.blob("rewritten.bin").download_as_bytes() == big, "rewrite bytes")
ok("rewrite with tokens")

first_token, _, _ = destination.rewrite(bucket.blob("big.bin"))
tampered = first_token[:-2] + ("AA" if not first_token.endswith("AA") else "BB")
refused(lambda: destination.rewrite(bucket.blob("big.bin"), token=tampered), exceptions.BadRequest, "tampered token")
refused(
    lambda: RewriteInMebibytes("elsewhere.bin", other).rewrite(bucket.blob("big.bin"), token=first_token),
    exceptions.BadRequest,
    "a token for another destination",
)
bucket.blob("big.bin").upload_from_string(b"changed")
refused(
    lambda: destination.rewrite(bucket.blob("big.bin"), token=first_token),
    exceptions.PreconditionFailed,
    "a token after the source changed",
)
ok("rewrite tokens are bound")

# Compose: bytes concatenated, component count, combined CRC32C, no MD5.
parts = [payload(300 + i * 111, 10 + i) for i in range(3)]
sources = []
for i, part in enumerate(parts):
    source = bucket.blob("part-%d" % i)
    source.upload_from_string(part)
    sources.append(source)
composite = bucket.blob("composite.bin")
composite.content_type = "text/plain"
composite.compose(sources)
composite.reload()
whole = b"".join(parts)
expect(composite.download_as_bytes() == whole, "compose bytes")
expect(composite.component_count == 3, "component count %r" % composite.component_count)
expect(composite.crc32c == crc32c(whole), "compose crc32c")
expect(composite.md5_hash is None, "a composite object has no md5Hash")
expect(composite.content_type == "text/plain", "compose destination metadata")
refused(
    lambda: bucket.blob("composite.bin").compose(sources, if_source_generation_match=[1, 2, 3]),
    exceptions.PreconditionFailed,
    "compose with a source's generation not matching",
)
refused(
    lambda: bucket.blob("composite.bin").compose(sources, if_generation_match=0),
    exceptions.PreconditionFailed,
    "compose over an existing object with if_generation_match=0",
)
refused(lambda: bucket.blob("c").compose([sources[0]] * 33), exceptions.BadRequest, "33 sources")
ok("compose")

# Move (atomic, server side) and rename (copy and delete).
moved = bucket.move_blob(bucket.blob("part-0"), "moved-part-0")
expect(moved.download_as_bytes() == parts[0], "move bytes")
expect(bucket.get_blob("part-0") is None, "move removes the source")
refused(
    lambda: bucket.move_blob(bucket.blob("part-1"), "moved-part-1", if_source_generation_match=1),
    exceptions.PreconditionFailed,
    "move with a source precondition",
)
renamed = bucket.rename_blob(bucket.blob("part-1"), "renamed-part-1")
expect(renamed.download_as_bytes() == parts[1], "rename bytes")
expect(bucket.get_blob("part-1") is None, "rename removes the source")
ok("move_blob and rename_blob")

# Versioning: noncurrent generations are kept, addressed, listed and deleted.
bucket.versioning_enabled = True
bucket.patch()
expect(client.get_bucket("py-calls").versioning_enabled, "versioning enabled")
v1 = bucket.blob("versioned.txt")
v1.upload_from_string(b"one")
v2 = bucket.blob("versioned.txt")
v2.upload_from_string(b"two")
expect(bucket.blob("versioned.txt", generation=v1.generation).download_as_bytes() == b"one", "old generation")
expect(bucket.blob("versioned.txt").download_as_bytes() == b"two", "live generation")
versions = [b for b in client.list_blobs(bucket, prefix="versioned", versions=True)]
expect([b.generation for b in versions] == [v1.generation, v2.generation], "versions listed")
expect(versions[0].time_deleted is not None and versions[1].time_deleted is None, "timeDeleted")
expect([b.name for b in client.list_blobs(bucket, prefix="versioned")] == ["versioned.txt"], "live listing")
bucket.delete_blob("versioned.txt")
expect(bucket.get_blob("versioned.txt") is None, "deleted live version")
expect(len(list(client.list_blobs(bucket, prefix="versioned", versions=True))) == 2, "both kept noncurrent")
old = bucket.get_blob("versioned.txt", generation=v1.generation)
old.metadata = {"kept": "yes"}
old.patch()
expect(bucket.get_blob("versioned.txt", generation=v1.generation).metadata == {"kept": "yes"}, "patch generation")
bucket.delete_blob("versioned.txt", generation=v1.generation)
bucket.delete_blob("versioned.txt", generation=v2.generation)
expect(len(list(client.list_blobs(bucket, prefix="versioned", versions=True))) == 0, "generations deleted")
ok("versions")

# Listing options.
for name in ["list/a", "list/b/1", "list/b/2", "list/c.txt", "list/d/", "list/e"]:
    bucket.blob(name).upload_from_string(name.encode())


def listed(**options):
    iterator = client.list_blobs(bucket, prefix="list/", **options)
    blobs = [b.name for b in iterator]
    return blobs, sorted(iterator.prefixes)


everything = ["list/a", "list/b/1", "list/b/2", "list/c.txt", "list/d/", "list/e"]
expect(listed()[0] == everything, "flat listing")
expect(listed(delimiter="/") == (["list/a", "list/c.txt", "list/e"], ["list/b/", "list/d/"]), "delimiter")
paged = client.list_blobs(bucket, prefix="list/", max_results=None, page_size=2)
expect([b.name for b in paged] == everything, "pages of 2 without a delimiter")
paged = client.list_blobs(bucket, prefix="list/", delimiter="/", page_size=1)
expect([b.name for b in paged] == ["list/a", "list/c.txt", "list/e"], "pages of 1 with a delimiter")
expect(sorted(paged.prefixes) == ["list/b/", "list/d/"], "prefixes over pages")
expect(listed(start_offset="list/b/2", end_offset="list/d/")[0] == ["list/b/2", "list/c.txt"], "offsets")
expect(listed(match_glob="**/*.txt")[0] == ["list/c.txt"], "matchGlob **")
expect(listed(match_glob="list/[ab]*")[0] == ["list/a"], "matchGlob class")
expect(listed(match_glob="list/b/*")[0] == ["list/b/1", "list/b/2"], "matchGlob *")
trailing = listed(delimiter="/", include_trailing_delimiter=True)
expect(trailing == (["list/a", "list/c.txt", "list/d/", "list/e"], ["list/b/", "list/d/"]), "trailing %r" % (trailing,))
expect(listed(delimiter="/", include_folders_as_prefixes=True)[1] == ["list/b/", "list/d/"], "folders as prefixes")
ok("listing options")

# Deletes, and a bucket delete that waits for an empty bucket.
refused(lambda: other.delete(), exceptions.Conflict, "deleting a bucket that is not empty")
for blob in client.list_blobs(other, versions=True):
    other.delete_blob(blob.name, generation=blob.generation)
other.delete()
refused(lambda: client.get_bucket("py-calls-other"), exceptions.NotFound, "deleted bucket")
refused(lambda: bucket.delete_blob("nothing-here"), exceptions.NotFound, "deleting a missing object")
ok("deletes")

# Customer-supplied encryption keys: one request and a chunked session (each chunk carries the key).
key = bytes(range(32))
bucket.blob("csek.bin", encryption_key=key).upload_from_string(b"secret bytes")
big = bytes(i % 251 for i in range(600 * 1024))
chunked = bucket.blob("csek-big.bin", encryption_key=key, chunk_size=256 * 1024)
chunked.upload_from_string(big)
expect(bucket.blob("csek.bin", encryption_key=key).download_as_bytes() == b"secret bytes", "read with the key")
expect(bucket.blob("csek-big.bin", encryption_key=key).download_as_bytes() == big, "chunked read with the key")
refused(lambda: bucket.blob("csek.bin").download_as_bytes(), exceptions.BadRequest, "read without the key")
wrong = bytes(32)
refused(lambda: bucket.blob("csek.bin", encryption_key=wrong).download_as_bytes(), exceptions.BadRequest, "wrong key")
keyed = bucket.get_blob("csek.bin", encryption_key=key)
expect(keyed.crc32c is not None, "hashes with the key")
unkeyed = bucket.get_blob("csek.bin")
expect(unkeyed.crc32c is None and unkeyed.md5_hash is None, "no hashes without the key")
rotated = bucket.blob("csek-rotated.bin", encryption_key=wrong)
token, _, _ = rotated.rewrite(bucket.blob("csek.bin", encryption_key=key))
expect(token is None and rotated.download_as_bytes() == b"secret bytes", "rewrite to a new key")
ok("customer-supplied encryption keys")

# Requester pays: every call on the bucket names the project billed.
pays = client.create_bucket("py-calls-pays")
pays.requester_pays = True
pays.patch()
refused(lambda: pays.blob("x").upload_from_string(b"x"), exceptions.BadRequest, "no user project")
billed = client.bucket("py-calls-pays", user_project="py-billing")
billed.blob("x").upload_from_string(b"billed")
expect(billed.blob("x").download_as_bytes() == b"billed", "billed read")
expect([b.name for b in client.list_blobs(billed)] == ["x"], "billed listing")
billed.delete_blob("x")
billed.delete()
ok("requester pays")

# The transfer manager's parallel upload of one file: XML API multipart upload, 5 MiB parts
# (Cloud Storage's smallest but the last) on threads, each part checked by its x-goog-hash.
from google.cloud.storage import transfer_manager
import tempfile

parted = payload(1000, 3) * 11_000 + b"tail"
with tempfile.NamedTemporaryFile() as handle:
    handle.write(parted)
    handle.flush()
    blob = bucket.blob("dir/parted.bin")
    blob.metadata = {"source": "transfer-manager"}
    transfer_manager.upload_chunks_concurrently(
        handle.name, blob, content_type="application/x-parts", chunk_size=5 * 1024 * 1024,
        worker_type=transfer_manager.THREAD, max_workers=3)
stored = bucket.get_blob("dir/parted.bin")
expect(stored.size == len(parted) and stored.crc32c == crc32c(parted), "parallel upload size and crc32c")
expect(stored.md5_hash is None, "an object assembled from parts has no MD5")
expect(stored.content_type == "application/x-parts", "parallel upload content type")
expect(stored.metadata == {"source": "transfer-manager"}, "parallel upload metadata: %r" % stored.metadata)
expect(bucket.blob("dir/parted.bin").download_as_bytes(checksum="crc32c") == parted, "parallel upload bytes")
ok("transfer manager upload_chunks_concurrently")

print("all %d steps passed" % steps, flush=True)
