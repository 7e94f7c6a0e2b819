import CloudStorageWire
import Foundation
import HTTP1

/// The GCS JSON API: uploads (media, multipart, resumable), objects, listing (buckets, server-side
/// copies: see the other `EmulatorApplication+GCS…` files).
extension EmulatorApplication {
    // MARK: Objects

    func gcsList(_ request: any ServerRequest, bucket: String) throws -> Reply {
        try requireBucket(bucket)
        func flag(_ name: String) throws -> Bool {
            // Any case, as Cloud Storage reads them (Python's client sends `True`).
            switch request.query(name)?.lowercased() {
            case nil, "false": return false
            case "true": return true
            case let text?: throw HTTPError.badRequest("Invalid boolean value for \(name): '\(text)'.")
            }
        }
        let delimiter = request.query("delimiter")
        var filter = ListFilter()
        filter.startOffset = request.query("startOffset")
        filter.endOffset = request.query("endOffset")
        filter.glob = try request.query("matchGlob").map { try ObjectNameGlob($0) }
        filter.versions = try flag("versions")
        filter.includeTrailingDelimiter = try flag("includeTrailingDelimiter")
        // Folders exist only in buckets with a hierarchical namespace, which the emulator's are
        // not: there are none to add, but the option is still checked as Cloud Storage does.
        if try flag("includeFoldersAsPrefixes"), delimiter != "/" {
            throw HTTPError.badRequest("includeFoldersAsPrefixes is only supported with the delimiter '/'.")
        }
        let page = try list(
            bucket: bucket, prefix: request.query("prefix") ?? "", delimiter: delimiter,
            maxResults: try maxResults(request), pageToken: request.query("pageToken"), filter: filter)
        var json: [String: Any] = ["kind": "storage#objects"]
        let base = base(request)
        if !page.items.isEmpty { json["items"] = page.items.map { ObjectJSON.gcsResource($0, base: base) } }
        if !page.prefixes.isEmpty { json["prefixes"] = page.prefixes }
        if let token = page.nextPageToken { json["nextPageToken"] = token }
        return Reply.json(200, json)
    }

    /// `objects.get`: the resource, or with `alt=media` the bytes.
    func gcsGetObject(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        let record = try gcsRecord(request, bucket: bucket, name: name)
        try ObjectPreconditions(request).check(record, read: true)
        if request.query("alt") == "media" { return try mediaReply(request, record) }
        // Without a key, a CSEK object's metadata leaves out its hashes; a key must be the right one.
        let key = try CustomerKey.sha256(request)
        if key != nil { try CustomerKey.check(given: key, stored: record.attributes.customerKeySHA256) }
        return Reply.json(200, ObjectJSON.gcsResource(record, base: base(request), keySHA256: key))
    }

    /// `objects.patch` (PATCH) and `objects.update` (PUT, which replaces every writable field).
    func gcsUpdateObject(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, name: String
    ) throws
        -> Reply
    {
        let patch = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        let record = try patchRecord(request, bucket: bucket, name: name) { attributes in
            if request.method == "PUT" {
                var replaced = ObjectAttributes()
                replaced.downloadTokens = attributes.downloadTokens
                // How the object is stored and encrypted is not metadata an update replaces.
                replaced.customerKeySHA256 = attributes.customerKeySHA256
                replaced.kmsKeyName = attributes.kmsKeyName
                replaced.storageClass = attributes.storageClass
                attributes = replaced
            }
            try ObjectJSON.apply(patch: patch, to: &attributes)
            if let tokens = attributes.metadata.removeValue(forKey: "firebaseStorageDownloadTokens") {
                attributes.downloadTokens = tokens.split(separator: ",").map(String.init)
            }
        }
        return Reply.json(200, ObjectJSON.gcsResource(record, base: base(request)))
    }

    /// `objects.delete`: the live version, or `generation`.
    func gcsDeleteObject(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        let generation = try generationParameter(request)
        let preconditions = try ObjectPreconditions(request)
        settings.beforeStoreWrite?()
        let deleted: Bool
        do {
            // The store checks the conditions against the version it deletes, in one step.
            deleted = try store.delete(bucket: bucket, name: name, generation: generation, if: preconditions.holds)
        } catch {
            throw httpError(error)
        }
        guard deleted else { throw HTTPError(404, "No such object: \(bucket)/\(name)") }
        return Reply(status: 204)
    }

    func gcsDownload(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        let record = try gcsRecord(request, bucket: bucket, name: name)
        try ObjectPreconditions(request).check(record, read: true)
        return try mediaReply(request, record)
    }

    /// The version a request addresses: `generation` (live or noncurrent), or the live one.
    /// The JSON API and, for signed URLs, the XML API read `generation` alike.
    func gcsRecord(_ request: any ServerRequest, bucket: String, name: String) throws -> ObjectRecord {
        guard let generation = try generationParameter(request) else { return try requireObject(bucket, name) }
        guard store.bucket(bucket) != nil || settings.autoCreateBuckets else {
            throw HTTPError(404, "The specified bucket does not exist.")
        }
        guard let record = store.record(bucket: bucket, name: name, generation: generation) else {
            throw HTTPError(404, "No such object: \(bucket)/\(name)")
        }
        return record
    }

    func generationParameter(_ request: any ServerRequest) throws -> Int64? {
        guard let text = request.query("generation") else { return nil }
        return try RequestNumber.nonNegative(text, field: "generation")
    }

    /// Applies a metadata change to the version the request addresses, bumping its metageneration.
    func patchRecord(
        _ request: any ServerRequest, bucket: String, name: String, _ change: (inout ObjectAttributes) throws -> Void
    ) throws -> ObjectRecord {
        let generation = try generationParameter(request)
        _ = try gcsRecord(request, bucket: bucket, name: name)
        let preconditions = try ObjectPreconditions(request)
        settings.beforeStoreWrite?()
        let updated = try store.updateRecord(bucket: bucket, name: name, generation: generation) { record in
            // Checked under the store's lock, against the record being changed.
            try preconditions.check(record)
            try change(&record.attributes)
            record.metageneration += 1
            record.updated = Date()
        }
        guard let updated else { throw HTTPError(404, "No such object: \(bucket)/\(name)") }
        return updated
    }

    // MARK: Uploads

    /// `objects.insert` with `uploadType` `media`, `multipart` or `resumable` (a session's start).
    func gcsUpload(_ request: any ServerRequest, _ body: BodyReader, bucket: String) throws -> Reply {
        let options = try WriteOptions(request, destination: false)
        let key = options.customerKeySHA256
        switch request.query("uploadType") {
        case "media":
            guard let name = request.query("name"), !name.isEmpty else {
                throw HTTPError(400, "Required", reason: "required")
            }
            var attributes = ObjectAttributes()
            attributes.contentType = request.headers["Content-Type"] ?? "application/octet-stream"
            try options.apply(to: &attributes)
            var expected = ExpectedHashes()
            try expected.merge(googHash: request.headers.values("x-goog-hash"))
            let record = try storeObject(
                bucket: bucket, name: name, attributes: attributes, expected: expected,
                preconditions: try ObjectPreconditions(request)
            ) {
                sink in _ = try body.stream(into: sink)
            }
            return Reply.json(200, ObjectJSON.gcsResource(record, base: base(request), keySHA256: key))
        case "multipart":
            let record = try multipartUpload(request, body, bucket: bucket, firebase: false, options: options)
            return Reply.json(200, ObjectJSON.gcsResource(record, base: base(request), keySHA256: key))
        case "resumable":
            let json = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
            let name = try ObjectJSON.objectName(query: request.query("name"), json: json)
            var attributes = try ObjectJSON.attributes(from: json)
            if attributes.contentType == nil {
                attributes.contentType = request.headers["X-Upload-Content-Type"] ?? "application/octet-stream"
            }
            try options.apply(to: &attributes)
            var declared: Int64?
            if let text = request.headers["X-Upload-Content-Length"] {
                declared = try RequestNumber.byteCount(text, field: "X-Upload-Content-Length")
            }
            let session = try startSession(
                bucket: bucket, name: name, attributes: attributes, expected: try ObjectJSON.expectedHashes(json),
                declaredSize: declared, preconditions: try ObjectPreconditions(request), access: .gcs)
            var reply = Reply(status: 200)
            reply.headers.set(
                "Location",
                "\(base(request))/upload/storage/v1/b/\(URLText.encodeComponent(bucket))/o?uploadType=resumable&upload_id=\(session.id)"
            )
            reply.headers.set("X-GUploader-UploadID", session.id)
            return reply
        default:
            throw HTTPError.badRequest("Invalid upload type: '\(request.query("uploadType") ?? "")'.")
        }
    }

    /// - Parameter access: What authorized the start, and so what each request to the session needs.
    func startSession(
        bucket: String, name: String, attributes: ObjectAttributes, expected: ExpectedHashes, declaredSize: Int64?,
        preconditions: ObjectPreconditions = ObjectPreconditions(), access: UploadSession.Access
    ) throws -> UploadSession {
        do {
            try NameRules.validateObjectName(name)
        } catch {
            throw httpError(error)
        }
        try requireBucket(bucket)
        // Checked when the session opens, and again when it finalizes.
        try preconditions.check(store.record(bucket: bucket, name: name))
        let id = SessionTable.newID()
        let writer: any StagingWriter
        do throws(StoreError) {
            if let journal {
                writer = try journal.makeWriter(id: id)
            } else {
                writer = try store.makeStagingWriter(bucket: bucket)
            }
        } catch {
            throw httpError(error)
        }
        let session = UploadSession(
            id: id, bucket: bucket, name: name, attributes: attributes, expected: expected,
            declaredSize: declaredSize, preconditions: preconditions, access: access, writer: writer,
            computingMD5: store.computesMD5, journal: journal)
        // An idle session holds no descriptor: the file is reopened by each request.
        writer.relinquish()
        let created = settings.now()
        do {
            // Recorded before the URL goes out, so no client ever holds a session a restart would not know.
            try journal?.save(session.persistedRecord(created: created))
            try sessions.add(session, created: created)
        } catch {
            journal?.remove(id: id)
            writer.discard()
            if let error = error as? StoreError { throw httpError(error) }
            throw error
        }
        return session
    }

    /// A `multipart/related` upload: a JSON metadata part, then the media part.
    ///
    /// - Parameter options: A JSON API upload's key, KMS key and ACL; nil for Firebase.
    func multipartUpload(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, firebase: Bool,
        options: WriteOptions? = nil
    ) throws
        -> ObjectRecord
    {
        guard let boundary = MultipartReader.boundary(contentType: request.headers["Content-Type"]) else {
            throw HTTPError.badRequest("A multipart upload needs Content-Type: multipart/related; boundary=….")
        }
        let reader = MultipartReader(body: body, boundary: boundary)
        guard try reader.nextPart() != nil else { throw HTTPError.badRequest("The multipart body has no parts.") }
        let json = try JSON.decodeObject(try reader.readPartBody(limit: 1024 * 1024))
        guard let mediaHeaders = try reader.nextPart() else {
            throw HTTPError.badRequest("The multipart body has no media part.")
        }
        let name = try ObjectJSON.objectName(query: request.query("name"), json: json)
        var attributes = try ObjectJSON.attributes(from: json)
        if attributes.contentType == nil {
            attributes.contentType = mediaHeaders["content-type"] ?? "application/octet-stream"
        }
        if firebase { attributes.downloadTokens = [UUID().uuidString.lowercased()] }
        try options?.apply(to: &attributes)
        var expected = try ObjectJSON.expectedHashes(json)
        try expected.merge(googHash: request.headers.values("x-goog-hash"))
        return try storeObject(
            bucket: bucket, name: name, attributes: attributes, expected: expected,
            preconditions: firebase ? ObjectPreconditions() : try ObjectPreconditions(request)
        ) { sink in
            try reader.readPartBody(into: sink)
            guard try reader.nextPart() == nil else {
                throw HTTPError.badRequest("A multipart upload has exactly two parts.")
            }
        }
    }

    // MARK: Resumable sessions

    /// The answer to a session id that names no session.
    static let unknownGCSSession = HTTPError(404, "No such upload session.", reason: "notFound")

    /// A request to a session, whichever URL reached it (the JSON API's, or a signed URL's):
    /// `DELETE` cancels it, `PUT` (or `POST`) sends bytes or asks how many it has.
    func gcsSession(_ request: any ServerRequest, _ body: BodyReader, _ session: UploadSession) throws -> Reply {
        if request.method == "DELETE" {
            sessions.remove(session.id)?.cancel()
            return Reply.json(499, ["error": ["code": 499, "message": "Client Closed Request"] as [String: Any]])
        }
        return try session.withRequest { state in
            try gcsSessionPut(request, body, session, &state)
        }
    }

    private func incomplete(_ state: UploadSession.State) -> Reply {
        var reply = Reply(status: 308)
        if state.committed > 0 { reply.headers.set("Range", "bytes=0-\(state.committed - 1)") }
        if let md5 = state.checksums.md5Digest { reply.headers.set("X-Range-MD5", md5.base64EncodedString()) }
        return reply
    }

    /// A request without bytes: `bytes */*` asks; `bytes */N` with N == committed finalises.
    private func gcsSessionStatus(
        _ session: UploadSession, _ state: inout UploadSession.State, total: Int64?, extra: ExpectedHashes,
        base: String, key: String?
    ) throws -> Reply {
        guard let total else { return incomplete(state) }
        if total == state.committed {
            let record = try session.finalize(
                &state, store: store, extra: extra, beforeStoreWrite: settings.beforeStoreWrite)
            return Reply.json(200, ObjectJSON.gcsResource(record, base: base, keySHA256: key))
        }
        if total < state.committed {
            throw HTTPError.badRequest(
                "The total size \(total) is smaller than the \(state.committed) byte(s) already uploaded.")
        }
        return incomplete(state)
    }

    private func gcsSessionPut(
        _ request: any ServerRequest, _ body: BodyReader, _ session: UploadSession, _ state: inout UploadSession.State
    ) throws -> Reply {
        let base = base(request)
        // Cloud Storage needs a CSEK upload's key with every request that carries its bytes; a
        // request without bytes may leave it out, and then sees no hashes.
        let key = try CustomerKey.sha256(request)
        if key != nil || request.contentLength ?? 0 > 0 {
            try CustomerKey.check(given: key, stored: session.attributes.customerKeySHA256)
        }
        switch state.phase {
        case .finalized(let record): return Reply.json(200, ObjectJSON.gcsResource(record, base: base, keySHA256: key))
        case .cancelled: throw HTTPError(404, "No such upload session.")
        case .active: break
        }
        var extra = ExpectedHashes()
        try extra.merge(googHash: request.headers.values("x-goog-hash"))
        let range = try ContentRange.parse(request.headers["Content-Range"], contentLength: request.contentLength)
        if let total = range.total, let declared = session.declaredSize, total != declared {
            throw HTTPError.badRequest(
                "The total size \(total) in Content-Range does not match X-Upload-Content-Length \(declared).")
        }
        guard let first = range.first, let last = range.last else {
            return try gcsSessionStatus(session, &state, total: range.total, extra: extra, base: base, key: key)
        }
        let isFinal = try gcsCheckChunk(
            first: first, last: last, total: range.total, contentLength: request.contentLength,
            committed: state.committed)
        let length = last - first + 1
        let snapshot = state.checksums
        let received = try UploadSession.receive(body, start: first, into: &state)
        guard received == length else {
            UploadSession.rollBack(&state, to: snapshot)
            throw HTTPError.badRequest("The Content-Range says \(length) byte(s) but the body had \(received).")
        }
        guard isFinal else { return incomplete(state) }
        do {
            let record = try session.finalize(
                &state, store: store, extra: extra, beforeStoreWrite: settings.beforeStoreWrite)
            return Reply.json(200, ObjectJSON.gcsResource(record, base: base, keySHA256: key))
        } catch {
            UploadSession.rollBack(&state, to: snapshot)
            throw error
        }
    }

    /// Checks the bytes `first`-`last` a session chunk's `Content-Range` names (of `total`, when
    /// known) against the session, which holds `committed` bytes: the chunk starts within them,
    /// ends within the total, is a multiple of the granularity unless it is the last, and is as
    /// long as its body (`contentLength`).
    ///
    /// - Returns: Whether the chunk ends the upload.
    /// - Throws: `HTTPError.badRequest` naming the first check that fails.
    private func gcsCheckChunk(
        first: Int64, last: Int64, total: Int64?, contentLength: Int64?, committed: Int64
    ) throws -> Bool {
        // Both bounds are at most RequestNumber.maxObjectSize, so this cannot overflow.
        let length = last - first + 1
        guard first <= committed else {
            throw HTTPError.badRequest(
                "Invalid request. According to the Content-Range header, the upload offset is \(first) byte(s), which exceeds already uploaded size of \(committed) byte(s)."
            )
        }
        if let total, last >= total {
            throw HTTPError.badRequest("The Content-Range \(first)-\(last) goes beyond the total size \(total).")
        }
        let isFinal = total.map { last + 1 == $0 } ?? false
        if !isFinal, length % ProtocolLimits.chunkGranularity != 0 {
            throw HTTPError.badRequest(
                "Invalid request. The number of bytes uploaded is required to be equal or greater than \(ProtocolLimits.chunkGranularity), except for the final request (it's recommended to be the exact multiple of \(ProtocolLimits.chunkGranularity)). The received request contained \(length) bytes, which does not meet this requirement."
            )
        }
        if let contentLength, contentLength != length {
            throw HTTPError.badRequest(
                "The Content-Range says \(length) byte(s) but the body has \(contentLength).")
        }
        return isFinal
    }
}

/// `Content-Range: bytes a-b/N`, `bytes a-b/*`, `bytes */N`, `bytes */*`.
///
/// Every number is at most ``RequestNumber/maxObjectSize``, so sums and differences of them fit in `Int64`.
struct ContentRange {
    var first: Int64?
    var last: Int64?
    var total: Int64?

    /// A missing header means the whole object in one request (`bytes 0-(len-1)/len`).
    static func parse(_ header: String?, contentLength: Int64?) throws -> ContentRange {
        let invalid = HTTPError.badRequest("Invalid Content-Range: '\(header ?? "")'.")
        guard let header else {
            let length = contentLength ?? 0
            guard length <= RequestNumber.maxObjectSize else {
                throw HTTPError.badRequest(
                    "Invalid Content-Length: \(length) exceeds the largest object size (\(RequestNumber.maxObjectSize) bytes)."
                )
            }
            if length == 0 { return ContentRange(first: nil, last: nil, total: 0) }
            return ContentRange(first: 0, last: length - 1, total: length)
        }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("bytes ") else { throw invalid }
        let spec = text.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { throw invalid }
        var range = ContentRange()
        if halves[1] != "*" {
            range.total = try RequestNumber.byteCount(halves[1], field: "Content-Range")
        }
        if halves[0] != "*" {
            let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2 else { throw invalid }
            let first = try RequestNumber.byteCount(bounds[0], field: "Content-Range")
            let last = try RequestNumber.byteCount(bounds[1], field: "Content-Range")
            guard last >= first else { throw invalid }
            range.first = first
            range.last = last
        }
        return range
    }
}
