"""One timed upload with the Python google-cloud-storage client, for upload-benchmarks.

upload-benchmarks runs this in a virtualenv under .build/python-gcs/ (never a
global Python) as the comparison point for the SDK's URLSession transport: the
same file, to the same emulator, with the same chunking. The emulator is named
by STORAGE_EMULATOR_HOST and reached with anonymous credentials.

Before the clock starts, the client is created and one small object uploaded,
so the timed upload runs on a warm connection pool, as the SDK's do. Timed:
blob.upload_from_filename(file), which opens the resumable session, sends the
chunks (CRC32C computed along the way, sent as x-goog-hash with the last one)
and checks the server's crc32c. Prints one JSON object on stdout: wall seconds
and CPU seconds (getrusage of this process) of the upload alone, and the size
and crc32c the server answered with, which must equal --expected-size and
--expected-crc32c (else exit status 1).
"""

import argparse
import json
import os
import resource
import sys
import time


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--object", required=True)
    parser.add_argument(
        "--chunk-bytes", type=int, default=0,
        help="blob.chunk_size; 0 leaves it unset (the library's default: 100 MiB chunks above 8 MiB)")
    parser.add_argument("--checksum", default="crc32c", choices=["crc32c", "none"])
    parser.add_argument("--expected-size", type=int, required=True)
    parser.add_argument("--expected-crc32c", required=True)
    arguments = parser.parse_args()
    if not os.environ.get("STORAGE_EMULATOR_HOST"):
        sys.exit("STORAGE_EMULATOR_HOST is not set")

    import google_crc32c
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    from google.cloud.storage import blob as blob_module

    client = storage.Client(project="upload-benchmarks", credentials=AnonymousCredentials())
    bucket = client.bucket(arguments.bucket)
    warm_up = bucket.blob(arguments.object + "-warm-up")
    warm_up.upload_from_string(b"w" * 65536)

    blob = bucket.blob(arguments.object)
    if arguments.chunk_bytes:
        blob.chunk_size = arguments.chunk_bytes
    checksum = None if arguments.checksum == "none" else arguments.checksum
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    blob.upload_from_filename(arguments.file, checksum=checksum, timeout=(10, 300))
    seconds = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before

    result = {
        "seconds": seconds,
        "cpuSeconds": cpu,
        "size": blob.size,
        "crc32c": blob.crc32c,
        "chunkBytes": blob.chunk_size or getattr(blob_module, "_DEFAULT_CHUNKSIZE", None),
        "library": "google-cloud-storage " + storage.__version__,
        "crc32cImplementation": google_crc32c.implementation,
    }
    print(json.dumps(result))
    if blob.size != arguments.expected_size or blob.crc32c != arguments.expected_crc32c:
        sys.exit(
            "verification failed: the server answered size %s, crc32c %s; expected %d, %s"
            % (blob.size, blob.crc32c, arguments.expected_size, arguments.expected_crc32c))


if __name__ == "__main__":
    main()
