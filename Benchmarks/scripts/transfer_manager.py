"""One transfer with python-storage's transfer manager against an emulator, for
shaped-transfers.sh: `download_chunks_concurrently` or `upload_chunks_concurrently` (the
XML API multipart upload), with the library's defaults (32 MiB chunks, 8 worker
processes) unless PY_CHUNK_MIB, PY_WORKERS or PY_WORKER_TYPE=thread say otherwise.

Usage: python transfer_manager.py download|upload ENDPOINT BUCKET OBJECT FILE
Exit status 3 (with a message) when the emulator refuses the XML multipart upload, so that
the caller can skip the row; any other failure raises.
"""

import os
import sys

from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from google.cloud.storage import transfer_manager
from google.cloud.storage.exceptions import InvalidResponse

operation, endpoint, bucket_name, object_name, path = sys.argv[1:6]
client = storage.Client(
    project="bench", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}
)
blob = client.bucket(bucket_name).blob(object_name)
options = {}
if os.environ.get("PY_CHUNK_MIB"):
    options["chunk_size"] = int(os.environ["PY_CHUNK_MIB"]) * 1024 * 1024
if os.environ.get("PY_WORKERS"):
    options["max_workers"] = int(os.environ["PY_WORKERS"])
# The library's default is processes; PY_WORKER_TYPE=thread runs threads instead.
if os.environ.get("PY_WORKER_TYPE") == "thread":
    options["worker_type"] = transfer_manager.THREAD

if operation == "download":
    transfer_manager.download_chunks_concurrently(blob, path, **options)
else:
    try:
        transfer_manager.upload_chunks_concurrently(path, blob, **options)
    except (InvalidResponse, exceptions.NotFound, exceptions.MethodNotAllowed, exceptions.BadRequest) as error:
        # The initiating POST ...?uploads answered with an error: no XML multipart upload here.
        print("the emulator refused the XML multipart upload: %s" % str(error).splitlines()[0], file=sys.stderr)
        sys.exit(3)
