import CloudStorageWire
import Foundation
import HTTP1

/// Firebase Storage v0, as the Firebase client SDKs speak it.
///
/// Unlike the Firebase emulator, `X-Goog-Upload-Offset` is honoured: an offset
/// beyond the committed size is a gap (400); an offset below it is a retried
/// request whose bytes up to the committed size are ignored, as GCS ignores
/// re-sent bytes (the JS SDK retries a failed chunk with its original offset).
extension EmulatorApplication {
    func firebaseList(_ request: any ServerRequest, bucket: String) throws -> Reply {
        try requireBucket(bucket)
        let page = try list(
            bucket: bucket, prefix: request.query("prefix") ?? "", delimiter: request.query("delimiter"),
            maxResults: try maxResults(request), pageToken: request.query("pageToken"))
        var json: [String: Any] = [
            "prefixes": page.prefixes,
            "items": page.items.map { ["name": $0.name, "bucket": $0.bucket] },
        ]
        if let token = page.nextPageToken { json["nextPageToken"] = token }
        return Reply.json(200, json)
    }

    /// An object's metadata, or with `alt=media` its bytes.
    func firebaseGetObject(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        guard let record = store.record(bucket: bucket, name: name) else { throw HTTPError(404, "Not Found.") }
        // A `token` parameter stood in for credentials (see Route.Access.firebaseOrDownloadToken):
        // it must be one of the object's download tokens; a wrong one is refused even with auth.
        if let token = request.query("token"), !record.attributes.downloadTokens.contains(token) {
            throw HTTPError(403, "Permission denied. Invalid download token.")
        }
        if request.query("alt") == "media" { return try mediaReply(request, record) }
        return Reply.json(200, ObjectJSON.firebaseResource(record))
    }

    /// Updates an object's metadata (PATCH, or PUT alike).
    func firebaseUpdateObject(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, name: String
    )
        throws -> Reply
    {
        let patch = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        let record = try patchRecord(request, bucket: bucket, name: name) { attributes in
            try ObjectJSON.apply(patch: patch, to: &attributes)
            // As Firebase Storage: `downloadTokens` (comma-separated) replaces the tokens; null removes them.
            if let tokens = patch["downloadTokens"] {
                if tokens is NSNull {
                    attributes.downloadTokens = []
                } else if let text = tokens as? String {
                    attributes.downloadTokens = text.split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }.filter { !$0.isEmpty }
                } else {
                    throw HTTPError.badRequest("Invalid value for field 'downloadTokens'.")
                }
            }
        }
        return Reply.json(200, ObjectJSON.firebaseResource(record))
    }

    /// Deletes an object.
    func firebaseDeleteObject(bucket: String, name: String) throws -> Reply {
        let deleted: Bool
        do {
            deleted = try store.delete(bucket: bucket, name: name, generation: nil)
        } catch {
            throw httpError(error)
        }
        guard deleted else { throw HTTPError(404, "Not Found.") }
        return Reply(status: 204)
    }

    /// An upload: `X-Goog-Upload-Protocol` `resumable` (a session's start), `multipart`, or `raw`.
    func firebaseUpload(_ request: any ServerRequest, _ body: BodyReader, bucket: String) throws -> Reply {
        let protocolName = request.headers["X-Goog-Upload-Protocol"]?.lowercased()
        switch protocolName {
        case "resumable":
            guard request.headers["X-Goog-Upload-Command"]?.lowercased() == "start" else {
                throw HTTPError.badRequest("A resumable upload starts with X-Goog-Upload-Command: start.")
            }
            let json = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
            let name = try ObjectJSON.objectName(query: request.query("name"), json: json)
            var attributes = try ObjectJSON.attributes(from: json)
            if attributes.contentType == nil {
                attributes.contentType =
                    request.headers["X-Goog-Upload-Header-Content-Type"] ?? "application/octet-stream"
            }
            attributes.downloadTokens = [UUID().uuidString.lowercased()]
            var declared: Int64?
            if let text = request.headers["X-Goog-Upload-Header-Content-Length"] {
                declared = try RequestNumber.byteCount(text, field: "X-Goog-Upload-Header-Content-Length")
            }
            let session = try startSession(
                bucket: bucket, name: name, attributes: attributes, expected: try ObjectJSON.expectedHashes(json),
                declaredSize: declared, access: .firebase)
            var reply = Reply(status: 200)
            reply.headers.set("X-Goog-Upload-Status", "active")
            reply.headers.set(
                "X-Goog-Upload-URL",
                "\(base(request))/v0/b/\(URLText.encodeComponent(bucket))/o?name=\(URLText.encodeComponent(name))&upload_id=\(session.id)&upload_protocol=resumable"
            )
            reply.headers.set("X-Goog-Upload-Chunk-Granularity", String(ProtocolLimits.chunkGranularity))
            reply.headers.set("X-GUploader-UploadID", session.id)
            return reply
        case "multipart":
            let record = try multipartUpload(request, body, bucket: bucket, firebase: true)
            return Reply.json(200, ObjectJSON.firebaseResource(record))
        case nil, "raw":
            guard let name = request.query("name"), !name.isEmpty else {
                throw HTTPError.badRequest("The upload needs a name query parameter.")
            }
            var attributes = ObjectAttributes()
            attributes.contentType = request.headers["Content-Type"] ?? "application/octet-stream"
            attributes.downloadTokens = [UUID().uuidString.lowercased()]
            let record = try storeObject(bucket: bucket, name: name, attributes: attributes, expected: ExpectedHashes())
            {
                sink in _ = try body.stream(into: sink)
            }
            return Reply.json(200, ObjectJSON.firebaseResource(record))
        default:
            throw HTTPError.badRequest("Unsupported X-Goog-Upload-Protocol: '\(protocolName ?? "")'.")
        }
    }

    private func uploadStatus(_ status: String, _ state: UploadSession.State) -> Reply {
        var reply = Reply(status: 200)
        reply.headers.set("X-Goog-Upload-Status", status)
        reply.headers.set("X-Goog-Upload-Size-Received", String(state.committed))
        return reply
    }

    private func finalReply(_ record: ObjectRecord) -> Reply {
        var reply = Reply.json(200, ObjectJSON.firebaseResource(record))
        reply.headers.set("X-Goog-Upload-Status", "final")
        reply.headers.set("X-Goog-Upload-Size-Received", String(record.size))
        return reply
    }

    /// The answer to a session id that names no session.
    static let unknownFirebaseSession = HTTPError(404, "Upload not found.")

    /// A session's `X-Goog-Upload-Command`: `upload`, `finalize` (or both), `query` or `cancel`.
    func firebaseSessionCommand(
        _ request: any ServerRequest, _ body: BodyReader, _ session: UploadSession
    ) throws
        -> Reply
    {
        let commands = Set(
            (request.headers["X-Goog-Upload-Command"] ?? "").lowercased().split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        if commands == ["cancel"] {
            sessions.remove(session.id)?.cancel()
            var reply = Reply(status: 200)
            reply.headers.set("X-Goog-Upload-Status", "cancelled")
            return reply
        }
        return try session.withRequest { state in
            if case .cancelled = state.phase { throw HTTPError(404, "Upload not found.") }
            if commands == ["query"] {
                if case .finalized(let record) = state.phase { return finalReply(record) }
                return uploadStatus("active", state)
            }
            let upload = commands.contains("upload")
            let finalize = commands.contains("finalize")
            guard commands.subtracting(["upload", "finalize"]).isEmpty, upload || finalize else {
                throw HTTPError.badRequest(
                    "Unknown X-Goog-Upload-Command: '\(request.headers["X-Goog-Upload-Command"] ?? "")'.")
            }
            if case .finalized(let record) = state.phase { return finalReply(record) }
            let snapshot = state.checksums
            if upload { try receiveChunk(request, body, session, &state, finalize: finalize) }
            guard finalize else { return uploadStatus("active", state) }
            if let declared = session.declaredSize, declared != state.committed {
                UploadSession.rollBack(&state, to: snapshot)
                throw HTTPError.badRequest(
                    "Cannot finalize: \(state.committed) byte(s) received but \(declared) were declared.")
            }
            do {
                let record = try session.finalize(
                    &state, store: store, extra: ExpectedHashes(), beforeStoreWrite: settings.beforeStoreWrite)
                return finalReply(record)
            } catch {
                UploadSession.rollBack(&state, to: snapshot)
                throw error
            }
        }
    }

    /// An `upload` command's bytes, at `X-Goog-Upload-Offset`; a chunk that is not acceptable
    /// leaves the session as it was.
    private func receiveChunk(
        _ request: any ServerRequest, _ body: BodyReader, _ session: UploadSession, _ state: inout UploadSession.State,
        finalize: Bool
    ) throws {
        let snapshot = state.checksums
        guard let text = request.headers["X-Goog-Upload-Offset"] else {
            throw HTTPError.badRequest("An upload command needs a valid X-Goog-Upload-Offset.")
        }
        let offset = try RequestNumber.byteCount(text, field: "X-Goog-Upload-Offset")
        // Bounded like every other number, so `offset + length` below cannot overflow.
        if let length = request.contentLength, length > RequestNumber.maxObjectSize {
            throw HTTPError.badRequest(
                "Invalid Content-Length: \(length) exceeds the largest object size (\(RequestNumber.maxObjectSize) bytes)."
            )
        }
        guard offset <= state.committed else {
            throw HTTPError.badRequest(
                "X-Goog-Upload-Offset is \(offset) but only \(state.committed) byte(s) have been received.")
        }
        if !finalize, let length = request.contentLength, length % ProtocolLimits.chunkGranularity != 0 {
            throw HTTPError.badRequest(
                "Chunks other than the last must be a multiple of \(ProtocolLimits.chunkGranularity) bytes; this one has \(length)."
            )
        }
        if let declared = session.declaredSize, let length = request.contentLength, offset + length > declared {
            throw HTTPError.badRequest("The upload would exceed the declared size of \(declared) bytes.")
        }
        let received = try UploadSession.receive(body, start: offset, into: &state)
        let lengthIsValid =
            finalize || received % ProtocolLimits.chunkGranularity == 0
        if !lengthIsValid || (session.declaredSize.map { offset + received > $0 } ?? false) {
            UploadSession.rollBack(&state, to: snapshot)
            throw HTTPError.badRequest("The chunk of \(received) bytes is not acceptable here.")
        }
    }
}
