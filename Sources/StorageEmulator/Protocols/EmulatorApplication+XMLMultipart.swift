import Foundation
import HTTP1

/// Cloud Storage's XML API multipart uploads, with the JSON API's credentials (a bearer
/// token): initiate `POST /<bucket>/<object>?uploads`, upload a part `PUT ?partNumber=&uploadId=`,
/// complete `POST ?uploadId=` with a `CompleteMultipartUpload` document, abort `DELETE ?uploadId=`,
/// list parts `GET ?uploadId=`, and list the bucket's uploads `GET /<bucket>?uploads`.
///
/// Strict as Cloud Storage is: part numbers 1–10,000; a part at most 5 GiB; every part of a
/// Complete but the last at least ``EmulatorApplication/Settings/minimumPartSize`` (5 MiB);
/// Complete names parts in ascending order, each with the ETag its upload answered; no
/// preconditions (the service does not take them here). The final object is an ordinary
/// object with a CRC32C and, as on Cloud Storage, no MD5; Complete and Abort remove every
/// part, used or not. Errors are the XML API's documents (`NoSuchUpload`, `InvalidPart`,
/// `InvalidPartOrder`, `EntityTooSmall`, `MalformedXML`, `BadDigest`).
extension EmulatorApplication {
    /// The largest part Cloud Storage takes: 5 GiB.
    static let maximumPartSize: Int64 = 5 * 1024 * 1024 * 1024
    /// Part numbers run from 1 to this.
    static let maximumPartNumber = 10_000

    /// `POST /<bucket>/<object>?uploads`: a new upload; the headers are the final object's metadata.
    func xmlInitiateMultipart(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        try Self.refusePreconditions(request)
        do {
            try NameRules.validateObjectName(name)
        } catch {
            throw httpError(error)
        }
        try requireBucket(bucket)
        let attributes = try Self.xmlAttributes(request)
        let shared = try store.makeStagingWriter(bucket: bucket)
        shared.relinquish()
        let upload = multipartUploads.initiate(
            bucket: bucket, name: name, attributes: attributes, shared: shared, now: settings.now())
        do {
            // Bounded and expired with the resumable sessions (`--max-sessions`, the session lifetime).
            try sessions.add(MultipartUploadLease(id: upload.id, table: multipartUploads))
        } catch {
            multipartUploads.remove(upload.id)
            throw error
        }
        return Self.xmlReply(
            "InitiateMultipartUploadResult",
            "<Bucket>\(Self.escaped(bucket))</Bucket><Key>\(Self.escaped(name))</Key>"
                + "<UploadId>\(upload.id)</UploadId>")
    }

    /// `PUT ?partNumber=&uploadId=`: stores one part (a part of the same number is replaced).
    func xmlUploadPart(_ request: any ServerRequest, _ body: BodyReader, bucket: String, name: String) throws -> Reply {
        let upload = try multipartUpload(request, bucket: bucket, name: name)
        guard let number = request.query("partNumber").flatMap(Self.partNumber) else {
            throw HTTPError(
                400, "Part number must be an integer between 1 and \(Self.maximumPartNumber), inclusive.",
                reason: "InvalidArgument")
        }
        var expected = ExpectedHashes()
        try expected.merge(googHash: request.headers.values("x-goog-hash"))
        var checksums = Checksums(computingMD5: store.computesMD5 || expected.md5 != nil)
        let length = request.contentLength.flatMap { $0 <= Self.maximumPartSize ? $0 : nil }
        let place = multipartUploads.claimPlace(for: number, length: length, in: upload.id)
        let writer = try place.map { _ in upload.shared } ?? store.makeStagingWriter(bucket: bucket)
        do {
            _ = try body.stream { chunk in
                guard checksums.count + Int64(chunk.count) <= Self.maximumPartSize else {
                    throw HTTPError(
                        400, "Your proposed upload exceeds the maximum allowed size.", reason: "EntityTooLarge")
                }
                if let place {
                    try writer.write(chunk, at: place + checksums.count)
                } else {
                    try writer.write(chunk)
                }
                checksums.update(chunk)
            }
            if place == nil { writer.relinquish() }
            do {
                try expected.verify(checksums)
            } catch let error as HTTPError {
                throw HTTPError(400, error.message, reason: "BadDigest")
            }
        } catch {
            if place != nil { multipartUploads.release(number, in: upload.id) } else { writer.discard() }
            throw error
        }
        // An MD5's hex, as Cloud Storage's part ETags are; without MD5 (the discard backing), a
        // value as unique: the CRC32C and the size.
        let tag =
            checksums.md5Digest.map { $0.map { String(format: "%02x", $0) }.joined() }
            ?? String(format: "%08x%016llx", checksums.crc32c, UInt64(checksums.count))
        let part = MultipartUploadTable.Part(
            writer: writer, offset: place ?? 0, size: checksums.count, isPlaced: place != nil, etag: "\"\(tag)\"",
            crc32c: checksums.crc32c, lastModified: settings.now())
        guard multipartUploads.store(part, number: number, in: upload.id) else { throw Self.noSuchUpload }
        var reply = Reply(status: 200)
        reply.headers.set("ETag", part.etag)
        var hash = "crc32c=\(ChecksumEncoding.base64(crc32c: checksums.crc32c))"
        if let md5 = checksums.md5Digest { hash += ",md5=\(md5.base64EncodedString())" }
        reply.headers.set("x-goog-hash", hash)
        return reply
    }

    /// `POST ?uploadId=`: assembles the named parts into the object and ends the upload.
    func xmlCompleteMultipart(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, name: String
    ) throws
        -> Reply
    {
        try Self.refusePreconditions(request)
        let found = try multipartUpload(request, bucket: bucket, name: name)
        // One Complete at a time, and no Abort while it runs: a second finds no upload.
        guard let upload = multipartUploads.beginCompletion(found.id) else { throw Self.noSuchUpload }
        let record: ObjectRecord
        do {
            let listed = try Self.completionParts(try body.readAll(limit: 4 * 1024 * 1024))
            record = try assemble(try namedParts(listed, of: upload), of: upload)
        } catch {
            multipartUploads.endCompletion(upload.id)
            throw error
        }
        sessions.remove(upload.id)
        var reply = Self.xmlReply(
            "CompleteMultipartUploadResult",
            "<Location>\(Self.escaped(base(request) + request.path))</Location>"
                + "<Bucket>\(Self.escaped(bucket))</Bucket><Key>\(Self.escaped(name))</Key>"
                + "<ETag>\"\(ObjectJSON.etag(record))\"</ETag>")
        reply.headers.set("x-goog-generation", String(record.generation))
        reply.headers.set("x-goog-hash", "crc32c=\(ChecksumEncoding.base64(crc32c: record.crc32c))")
        return reply
    }

    /// The parts a Complete names, as stored: in ascending order, each with its upload's ETag,
    /// all but the last at least the minimum part size.
    private func namedParts(
        _ listed: [(number: Int, etag: String)], of upload: MultipartUploadTable.Upload
    ) throws -> [(number: Int, part: MultipartUploadTable.Part)] {
        var parts: [(number: Int, part: MultipartUploadTable.Part)] = []
        for (index, (number, etag)) in listed.enumerated() {
            if index > 0, number <= listed[index - 1].number {
                throw HTTPError(
                    400, "The list of parts was not in ascending order. Parts must be ordered by part number.",
                    reason: "InvalidPartOrder")
            }
            guard let part = upload.parts[number], Self.sameTag(part.etag, etag) else {
                throw HTTPError(
                    400,
                    "One or more of the specified parts could not be found. The part may not have been uploaded,"
                        + " or the specified entity tag may not match the part's entity tag.",
                    reason: "InvalidPart")
            }
            parts.append((number, part))
        }
        if let small = parts.dropLast().first(where: { $0.part.size < settings.minimumPartSize }) {
            throw HTTPError(
                400,
                "Your proposed upload is smaller than the minimum allowed size: every part but the last must be"
                    + " at least \(settings.minimumPartSize) bytes (one is \(small.part.size)).",
                reason: "EntityTooSmall")
        }
        return parts
    }

    /// Commits `parts`, in order, as the upload's object and ends the upload (its other parts go
    /// with it). When the shared writer holds them assembled it becomes the object as it lies;
    /// otherwise each part is appended to a fresh writer. Either way the bytes are not read: the
    /// object's CRC32C is the parts' combined.
    private func assemble(
        _ parts: [(number: Int, part: MultipartUploadTable.Part)], of upload: MultipartUploadTable.Upload
    ) throws -> ObjectRecord {
        let object = parts.reduce(into: StagedObject(size: 0, crc32c: 0, md5: nil)) { object, named in
            object.crc32c = Checksums.combineCRC32C(object.crc32c, named.part.crc32c, secondLength: named.part.size)
            object.size += named.part.size
        }
        let numbers = parts.map(\.number)
        // Taken from the table only as it stands now, unchanged since the parts were looked up
        // and with nothing writing into it: from here on the shared writer is this Complete's.
        let unchanged = { (current: MultipartUploadTable.Upload) -> Bool in
            current.liesAssembled(numbers)
                && parts.allSatisfy { named in
                    current.parts[named.number].map { $0.etag == named.part.etag && $0.size == named.part.size }
                        ?? false
                }
        }
        if upload.liesAssembled(numbers), let taken = multipartUploads.remove(upload.id, if: unchanged) {
            return try commitObject(
                bucket: taken.bucket, name: taken.name, attributes: taken.attributes,
                preconditions: ObjectPreconditions(), into: taken.shared
            ) { writer in
                try writer.truncate(to: object.size)
                return object
            }
        }
        let record = try commitObject(
            bucket: upload.bucket, name: upload.name, attributes: upload.attributes,
            preconditions: ObjectPreconditions()
        ) { writer in
            for (_, part) in parts { try writer.append(contentsOf: part.writer, range: part.range) }
            multipartUploads.countCopied(object.size)
            return object
        }
        multipartUploads.remove(upload.id)
        return record
    }

    /// `DELETE ?uploadId=`: ends the upload and removes its parts.
    func xmlAbortMultipart(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        let upload = try multipartUpload(request, bucket: bucket, name: name)
        guard multipartUploads.abort(upload.id) != nil else { throw Self.noSuchUpload }
        sessions.remove(upload.id)
        return Reply(status: 204)
    }

    /// `GET ?uploadId=`: the parts stored so far, by number (`max-parts`, `part-number-marker`).
    func xmlListParts(_ request: any ServerRequest, bucket: String, name: String) throws -> Reply {
        let upload = try multipartUpload(request, bucket: bucket, name: name)
        let marker = try request.query("part-number-marker").map { text in
            guard let value = Int(text), value >= 0 else {
                throw HTTPError(400, "part-number-marker must be a number.", reason: "InvalidArgument")
            }
            return value
        }
        let maxParts = try request.query("max-parts").map { text in
            guard let value = Int(text), value >= 0 else {
                throw HTTPError(400, "max-parts must be a number.", reason: "InvalidArgument")
            }
            return min(value, 1000)
        }
        let numbers = upload.parts.keys.sorted().filter { $0 > (marker ?? 0) }
        let page = numbers.prefix(maxParts ?? 1000)
        let truncated = page.count < numbers.count
        var document =
            "<Bucket>\(Self.escaped(bucket))</Bucket><Key>\(Self.escaped(name))</Key><UploadId>\(upload.id)</UploadId>"
            + "<PartNumberMarker>\(marker ?? 0)</PartNumberMarker>"
            + "<NextPartNumberMarker>\(page.last ?? marker ?? 0)</NextPartNumberMarker>"
            + "<MaxParts>\(maxParts ?? 1000)</MaxParts><IsTruncated>\(truncated)</IsTruncated>"
        for number in page {
            guard let part = upload.parts[number] else { continue }
            document +=
                "<Part><PartNumber>\(number)</PartNumber>"
                + "<LastModified>\(Timestamp.format(part.lastModified))</LastModified>"
                + "<ETag>\(Self.escaped(part.etag))</ETag><Size>\(part.size)</Size></Part>"
        }
        return Self.xmlReply("ListPartsResult", document)
    }

    /// `GET /<bucket>?uploads`: the uploads in progress (`prefix` narrows them).
    func xmlListMultipartUploads(_ request: any ServerRequest, bucket: String) throws -> Reply {
        guard store.bucket(bucket) != nil else {
            throw HTTPError(404, "The specified bucket does not exist.", reason: "NoSuchBucket")
        }
        let prefix = request.query("prefix") ?? ""
        var document = "<Bucket>\(Self.escaped(bucket))</Bucket><IsTruncated>false</IsTruncated>"
        for upload in multipartUploads.uploads(in: bucket) where upload.name.hasPrefix(prefix) {
            document +=
                "<Upload><Key>\(Self.escaped(upload.name))</Key><UploadId>\(upload.id)</UploadId>"
                + "<StorageClass>\(upload.attributes.storageClass ?? "STANDARD")</StorageClass>"
                + "<Initiated>\(Timestamp.format(upload.initiated))</Initiated></Upload>"
        }
        return Self.xmlReply("ListMultipartUploadsResult", document)
    }

    // MARK: - Helpers

    private static let noSuchUpload = HTTPError(
        404,
        "The requested upload was not found. The upload ID may be invalid, or the upload may have been"
            + " aborted or completed.",
        reason: "NoSuchUpload")

    /// A part number as Cloud Storage takes it: decimal digits only (no sign, no spaces), 1–10,000.
    static func partNumber(_ text: some StringProtocol) -> Int? {
        guard let value = RequestNumber.digits(text), (1...Int64(maximumPartNumber)).contains(value) else {
            return nil
        }
        return Int(value)
    }

    /// The upload the request's `uploadId` names for this object.
    private func multipartUpload(
        _ request: any ServerRequest, bucket: String, name: String
    ) throws
        -> MultipartUploadTable.Upload
    {
        // The session table first: it ends an expired upload, and marks a live one used.
        guard let id = request.query("uploadId"), sessions.upload(id) is MultipartUploadLease,
            let upload = multipartUploads.upload(id, bucket: bucket, name: name)
        else { throw Self.noSuchUpload }
        return upload
    }

    /// Cloud Storage takes no preconditions on multipart uploads; one sent is refused, never ignored.
    private static func refusePreconditions(_ request: any ServerRequest) throws {
        let names = ["x-goog-if-generation-match", "x-goog-if-metageneration-match", "If-Match", "If-None-Match"]
        if let name = names.first(where: { request.headers[$0] != nil }) {
            throw HTTPError(
                501, "Preconditions are not supported for XML API multipart uploads (\(name)).",
                reason: "NotImplemented")
        }
    }

    /// The final object's metadata from the initiate's headers, as the XML API takes them.
    private static func xmlAttributes(_ request: any ServerRequest) throws -> ObjectAttributes {
        var attributes = ObjectAttributes()
        attributes.contentType = request.headers["Content-Type"] ?? "application/octet-stream"
        attributes.cacheControl = request.headers["Cache-Control"]
        attributes.contentDisposition = request.headers["Content-Disposition"]
        attributes.contentEncoding = request.headers["Content-Encoding"]
        attributes.contentLanguage = request.headers["Content-Language"]
        attributes.storageClass = request.headers["x-goog-storage-class"]?.uppercased()
        for (name, value) in request.headers where name.lowercased().hasPrefix("x-goog-meta-") {
            let key = String(name.dropFirst("x-goog-meta-".count))
            guard !key.isEmpty else {
                throw HTTPError(
                    400, "A custom metadata header needs a name after x-goog-meta-.", reason: "InvalidArgument")
            }
            attributes.metadata[key.lowercased()] = value
        }
        return attributes
    }

    /// The `(PartNumber, ETag)` pairs of a `CompleteMultipartUpload` document, in its order.
    static func completionParts(_ body: Data) throws -> [(number: Int, etag: String)] {
        let malformed = HTTPError(
            400, "The XML you provided was not well-formed or did not validate against our published schema.",
            reason: "MalformedXML")
        guard let text = String(data: body, encoding: .utf8) else { throw malformed }
        var rest = Substring(text)
        if let declaration = rest.range(of: "?>"), rest.hasPrefix("<?xml") { rest = rest[declaration.upperBound...] }
        rest = rest.drop { $0.isWhitespace }
        // The root may carry a namespace; nothing but whitespace may follow it.
        guard rest.hasPrefix("<CompleteMultipartUpload"), let open = rest.firstIndex(of: ">"),
            let close = rest.range(of: "</CompleteMultipartUpload>", options: .backwards),
            rest[close.upperBound...].allSatisfy(\.isWhitespace)
        else { throw malformed }
        var inside = rest[rest.index(after: open)..<close.lowerBound]
        var parts: [(number: Int, etag: String)] = []
        while true {
            inside = inside.drop { $0.isWhitespace }
            if inside.isEmpty { break }
            guard inside.hasPrefix("<Part>"), let end = inside.range(of: "</Part>") else { throw malformed }
            let part = inside[inside.index(inside.startIndex, offsetBy: "<Part>".count)..<end.lowerBound]
            guard let numberText = element("PartNumber", in: part), let number = partNumber(numberText),
                let etag = element("ETag", in: part)
            else { throw malformed }
            parts.append((number, unescaped(etag)))
            inside = inside[end.upperBound...]
        }
        guard !parts.isEmpty, parts.count <= maximumPartNumber else { throw malformed }
        return parts
    }

    /// The text of `<name>…</name>` in `xml`, trimmed.
    private static func element(_ name: String, in xml: Substring) -> String? {
        guard let open = xml.range(of: "<\(name)>"), let close = xml.range(of: "</\(name)>"),
            open.upperBound <= close.lowerBound
        else { return nil }
        return xml[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether a listed ETag names the part's: quoted or not, as clients send them.
    private static func sameTag(_ stored: String, _ listed: String) -> Bool {
        func bare(_ tag: String) -> Substring {
            let trimmed = Substring(tag)
            return trimmed.hasPrefix("\"") && trimmed.hasSuffix("\"") && trimmed.count >= 2
                ? trimmed.dropFirst().dropLast() : trimmed
        }
        return bare(stored) == bare(listed)
    }

    private static func unescaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// A 200 answer with an XML document in the namespace Cloud Storage's answers declare.
    private static func xmlReply(_ root: String, _ content: String) -> Reply {
        let document =
            "<?xml version='1.0' encoding='UTF-8'?><\(root) xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            + content + "</\(root)>"
        var reply = Reply(status: 200, body: Data(document.utf8))
        reply.headers.set("Content-Type", "application/xml; charset=UTF-8")
        return reply
    }
}
