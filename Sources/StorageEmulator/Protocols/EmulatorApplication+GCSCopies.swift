import CloudStorageWire
import Foundation
import HTTP1

/// An operation that Google's clients `POST` under an object's path: `copyTo`, `rewriteTo`,
/// `compose` and `moveTo`.
///
/// The clients percent-encode object names (a `/` as `%2F`), so the operation's keyword is a
/// segment of its own; an object whose name merely contains such a segment is still read,
/// patched and deleted by the other methods, which never take these paths.
enum GCSObjectOperation: Equatable {
    case copy(source: String, destinationBucket: String, destination: String)
    case rewrite(source: String, destinationBucket: String, destination: String)
    case compose(destination: String)
    case move(source: String, destination: String)

    /// The bucket a copy or rewrite writes to, when it is named apart from the path's.
    var destinationBucket: String? {
        switch self {
        case .copy(_, let bucket, _), .rewrite(_, let bucket, _): bucket
        case .compose, .move: nil
        }
    }

    /// Parses the path segments after `/storage/v1/b/{bucket}/o/`, still percent-encoded.
    ///
    /// - Returns: Nil when they name no operation.
    /// - Throws: ``HTTPError`` (400) for a segment that is not valid percent-encoding.
    init?(_ segments: ArraySlice<Substring>) throws {
        let parts = Array(segments)
        func name(_ range: Range<Int>) throws -> String? {
            range.isEmpty ? nil : try URLText.decode(parts[range].joined(separator: "/")[...])
        }
        for index in parts.indices.dropFirst() {
            switch parts[index] {
            case "copyTo", "rewriteTo":
                guard parts.count >= index + 5, parts[index + 1] == "b", parts[index + 3] == "o",
                    let source = try name(0..<index), let destination = try name(index + 4..<parts.count)
                else { continue }
                let bucket = try URLText.decode(parts[index + 2])
                self =
                    parts[index] == "copyTo"
                    ? .copy(source: source, destinationBucket: bucket, destination: destination)
                    : .rewrite(source: source, destinationBucket: bucket, destination: destination)
                return
            case "moveTo":
                guard parts.count >= index + 3, parts[index + 1] == "o", let source = try name(0..<index),
                    let destination = try name(index + 2..<parts.count)
                else { continue }
                self = .move(source: source, destination: destination)
                return
            case "compose" where index == parts.count - 1:
                guard let destination = try name(0..<index) else { return nil }
                self = .compose(destination: destination)
                return
            default:
                continue
            }
        }
        return nil
    }
}

/// Server-side copies of the GCS JSON API: objects made from stored objects without the
/// client sending their bytes.
///
/// Every copy streams the sources' bytes through a fresh staging writer into a new object,
/// committed as an upload is (checksums computed on the way, the destination's preconditions
/// checked by the store as it replaces the object); a move is the store's own atomic rename.
extension EmulatorApplication {
    /// The most uploaded objects a composite object may be made of.
    static let maxComponentCount = 1024

    func gcsObjectOperation(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, _ operation: GCSObjectOperation
    ) throws -> Reply {
        let base = base(request)
        switch operation {
        case .copy(let source, let destinationBucket, let destination):
            let record = try copySource(request, bucket: bucket, name: source)
            let options = try WriteOptions(request, destination: true)
            let attributes = try destinationAttributes(body, source: record, options: options)
            let copied = try writeCopy(
                of: [record], bucket: destinationBucket, name: destination, attributes: attributes,
                componentCount: record.componentCount, preconditions: try ObjectPreconditions(request))
            return Reply.json(200, ObjectJSON.gcsResource(copied, base: base, keySHA256: options.customerKeySHA256))
        case .rewrite(let source, let destinationBucket, let destination):
            return try rewrite(request, body, from: (bucket, source), to: (destinationBucket, destination))
        case .compose(let destination):
            let options = try WriteOptions(request, destination: false)
            let composed = try compose(request, body, bucket: bucket, destination: destination, options: options)
            return Reply.json(
                200, ObjectJSON.gcsResource(composed, base: base, keySHA256: options.customerKeySHA256))
        case .move(let source, let destination):
            let moved = try move(request, bucket: bucket, from: source, to: destination)
            return Reply.json(200, ObjectJSON.gcsResource(moved, base: base))
        }
    }

    // MARK: Copy and rewrite

    /// The source of a copy or rewrite (`sourceGeneration`, or the live version), its
    /// preconditions (`ifSourceGenerationMatch` and friends) checked.
    private func copySource(_ request: any ServerRequest, bucket: String, name: String) throws -> ObjectRecord {
        guard store.bucket(bucket) != nil else { throw HTTPError(404, "The specified bucket does not exist.") }
        let generation = try request.query("sourceGeneration").map {
            try RequestNumber.nonNegative($0, field: "sourceGeneration")
        }
        let found = generation.map { store.record(bucket: bucket, name: name, generation: $0) }
        guard let record = found ?? store.record(bucket: bucket, name: name) else {
            throw HTTPError(404, "No such object: \(bucket)/\(name)")
        }
        try ObjectPreconditions(request, source: true).check(record)
        try CustomerKey.check(
            given: try CustomerKey.sha256(request, copySource: true), stored: record.attributes.customerKeySHA256)
        return record
    }

    /// The destination's metadata: the source's when the request body's object resource sets no
    /// writable field, otherwise that resource's alone, as Cloud Storage does: metadata given with
    /// a copy replaces the source's rather than merging with it, so a field the body leaves out is
    /// not set. `name` and `bucket` in the body are the path's business.
    private func destinationAttributes(
        _ body: BodyReader, source: ObjectRecord, options: WriteOptions
    ) throws -> ObjectAttributes {
        let json = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        let setsAField = json.keys.contains { $0 != "name" && $0 != "bucket" && $0 != "kind" }
        var attributes = try ObjectJSON.attributes(from: json)
        if !setsAField {
            // The source's metadata, but the copy is encrypted and stored as the request says.
            attributes = source.attributes
            attributes.kmsKeyName = nil
            attributes.storageClass = nil
        }
        try options.apply(to: &attributes)
        return attributes
    }

    /// `rewriteTo`: copies in calls of at most `maxBytesRewrittenPerCall` bytes, each call but
    /// the last answering a ``RewriteToken`` for the next.
    private func rewrite(
        _ request: any ServerRequest, _ body: BodyReader, from source: (bucket: String, name: String),
        to destination: (bucket: String, name: String)
    ) throws -> Reply {
        var perCall: Int64?
        if let text = request.query("maxBytesRewrittenPerCall") {
            // At most the largest object, so adding it to the bytes done cannot overflow.
            let value = try RequestNumber.byteCount(text, field: "maxBytesRewrittenPerCall")
            guard ProtocolLimits.isRewriteLimit(value) else {
                throw HTTPError.badRequest(
                    "Invalid argument: maxBytesRewrittenPerCall must be a positive multiple of "
                        + "\(ProtocolLimits.rewriteGranularity).")
            }
            perCall = value
        }
        let record = try copySource(request, bucket: source.bucket, name: source.name)
        let preconditions = try ObjectPreconditions(request)
        try preconditions.check(store.record(bucket: destination.bucket, name: destination.name))
        var token = RewriteToken(
            sourceBucket: source.bucket, sourceName: source.name, sourceGeneration: record.generation,
            destinationBucket: destination.bucket, destinationName: destination.name, bytesRewritten: 0)
        if let text = request.query("rewriteToken"), !text.isEmpty {
            guard let sent = RewriteToken(decoding: text) else {
                throw HTTPError.badRequest("Invalid rewrite token.")
            }
            guard sent.sourceBucket == source.bucket, sent.sourceName == source.name,
                sent.destinationBucket == destination.bucket, sent.destinationName == destination.name
            else { throw HTTPError.badRequest("The rewrite token was issued for another rewrite.") }
            guard sent.sourceGeneration == record.generation, sent.bytesRewritten < record.size else {
                throw HTTPError(
                    412, "The source object changed since the rewrite started: start again without the token.")
            }
            token = sent
        }
        let options = try WriteOptions(request, destination: true)
        let attributes = try destinationAttributes(body, source: record, options: options)
        let done = perCall.map { token.bytesRewritten + min($0, record.size - token.bytesRewritten) } ?? record.size
        var json: [String: Any] = [
            "kind": "storage#rewriteResponse", "totalBytesRewritten": String(done),
            "objectSize": String(record.size), "done": done == record.size,
        ]
        if done < record.size {
            token.bytesRewritten = done
            json["rewriteToken"] = token.encoded()
        } else {
            let copied = try writeCopy(
                of: [record], bucket: destination.bucket, name: destination.name, attributes: attributes,
                componentCount: record.componentCount, preconditions: preconditions)
            json["resource"] = ObjectJSON.gcsResource(copied, base: base(request), keySHA256: options.customerKeySHA256)
        }
        return Reply.json(200, json)
    }

    // MARK: Compose

    /// One entry of `compose`'s `sourceObjects`.
    private struct ComposeSource {
        var name: String
        var generation: Int64?
        var ifGenerationMatch: Int64?

        init(_ value: Any) throws {
            guard let json = value as? [String: Any], let name = json["name"] as? String, !name.isEmpty else {
                throw HTTPError(400, "Required: sourceObjects[].name", reason: "required")
            }
            self.name = name
            generation = try Self.number(json["generation"], field: "sourceObjects[].generation")
            if let conditions = json["objectPreconditions"], !(conditions is NSNull) {
                guard let conditions = conditions as? [String: Any] else {
                    throw HTTPError.badRequest("Invalid value for field 'sourceObjects[].objectPreconditions'.")
                }
                ifGenerationMatch = try Self.number(
                    conditions["ifGenerationMatch"], field: "sourceObjects[].objectPreconditions.ifGenerationMatch")
            }
        }

        /// A JSON int64: a decimal string, as the API writes them, or a number; null is absent.
        private static func number(_ value: Any?, field: String) throws -> Int64? {
            switch value {
            case nil, is NSNull: return nil
            case let text as String: return try RequestNumber.nonNegative(text, field: field)
            case let number as NSNumber: return try RequestNumber.nonNegative(number.stringValue, field: field)
            default: throw HTTPError.badRequest("Invalid value for field '\(field)'.")
            }
        }
    }

    /// `compose`: concatenates up to 32 objects of the bucket into a composite object, whose
    /// CRC32C is combined from theirs and which has no MD5, as in Cloud Storage.
    /// - Parameter options: The composite's key (every source must be encrypted with it, or all
    ///   with none), KMS key and ACL.
    private func compose(
        _ request: any ServerRequest, _ body: BodyReader, bucket: String, destination: String,
        options: WriteOptions
    ) throws -> ObjectRecord {
        guard store.bucket(bucket) != nil else { throw HTTPError(404, "The specified bucket does not exist.") }
        let json = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        guard let list = json["sourceObjects"] as? [Any], !list.isEmpty else {
            throw HTTPError(400, "At least one source object must be specified.", reason: "required")
        }
        guard list.count <= ProtocolLimits.maximumComposeSources else {
            throw HTTPError.badRequest(
                "The number of source components provided (\(list.count)) exceeds the maximum (\(ProtocolLimits.maximumComposeSources))."
            )
        }
        let sources = try list.map { try ComposeSource($0) }
        var records: [ObjectRecord] = []
        for source in sources {
            let found = source.generation.map { store.record(bucket: bucket, name: source.name, generation: $0) }
            guard let record = found ?? store.record(bucket: bucket, name: source.name) else {
                throw HTTPError(404, "Object \(bucket)/\(source.name) not found.")
            }
            if let expected = source.ifGenerationMatch, expected != record.generation {
                throw HTTPError(412, "At least one of the pre-conditions you specified did not hold.")
            }
            try CustomerKey.check(given: options.customerKeySHA256, stored: record.attributes.customerKeySHA256)
            records.append(record)
        }
        let componentCount = records.reduce(0) { $0 + ($1.componentCount ?? 1) }
        guard componentCount <= Self.maxComponentCount else {
            throw HTTPError.badRequest(
                "The composite object would have \(componentCount) components, more than the maximum (\(Self.maxComponentCount))."
            )
        }
        var attributes = ObjectAttributes()
        if let resource = json["destination"], !(resource is NSNull) {
            guard let resource = resource as? [String: Any] else {
                throw HTTPError.badRequest("Invalid value for field 'destination'.")
            }
            attributes = try ObjectJSON.attributes(from: resource)
        }
        try options.apply(to: &attributes)
        let composed = try writeCopy(
            of: records, bucket: bucket, name: destination, attributes: attributes, componentCount: componentCount,
            preconditions: try ObjectPreconditions(request))
        if json["deleteSourceObjects"] as? Bool == true {
            for record in records where record.name != destination {
                _ = try? store.delete(bucket: bucket, name: record.name, generation: record.generation)
            }
        }
        return composed
    }

    // MARK: Move

    /// `moveTo`: the store renames the object in one step, with both sides' preconditions.
    private func move(
        _ request: any ServerRequest, bucket: String, from source: String, to destination: String
    ) throws
        -> ObjectRecord
    {
        guard store.bucket(bucket) != nil else { throw HTTPError(404, "The specified bucket does not exist.") }
        guard !source.utf8.elementsEqual(destination.utf8) else {
            throw HTTPError.badRequest("The source and destination object names must be different.")
        }
        let sourceConditions = try ObjectPreconditions(request, source: true)
        let destinationConditions = try ObjectPreconditions(request)
        settings.beforeStoreWrite?()
        let moved: ObjectRecord?
        do {
            moved = try store.move(bucket: bucket, from: source, to: destination) { current, replaced in
                sourceConditions.holds(current) && destinationConditions.holds(replaced)
            }
        } catch {
            throw httpError(error)
        }
        guard let moved else { throw HTTPError(404, "No such object: \(bucket)/\(source)") }
        return moved
    }

    // MARK: Bytes

    /// Writes the concatenated bytes of `sources` as a new object: CRC32C computed on the way
    /// (and, for more than one source, checked against the one combined from the sources'),
    /// MD5 only for a plain copy of an object that has one.
    private func writeCopy(
        of sources: [ObjectRecord], bucket: String, name: String, attributes: ObjectAttributes,
        componentCount: Int?, preconditions: ObjectPreconditions
    ) throws -> ObjectRecord {
        do {
            try NameRules.validateObjectName(name)
        } catch {
            throw httpError(error)
        }
        try requireBucket(bucket)
        let keepsMD5 = componentCount == nil && sources.allSatisfy { $0.md5 != nil }
        let writer = try store.makeStagingWriter(bucket: bucket)
        var checksums = Checksums(computingMD5: keepsMD5 && store.computesMD5)
        do {
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            for source in sources {
                let reader = try store.openReader(source)
                defer { reader.close() }
                var offset: Int64 = 0
                while offset < source.size {
                    let count = try buffer.withUnsafeMutableBytes { try reader.read(at: offset, into: $0) }
                    guard count > 0 else { throw StoreError.io("The object \(source.name) ended early.") }
                    try buffer.withUnsafeBytes { raw in
                        let bytes = UnsafeRawBufferPointer(rebasing: raw[0..<count])
                        try writer.write(bytes)
                        checksums.update(bytes)
                    }
                    offset += Int64(count)
                }
            }
            var record = ObjectRecord(bucket: bucket, name: name)
            record.size = checksums.count
            record.crc32c = checksums.crc32c
            record.md5 = checksums.md5Digest
            record.componentCount = componentCount
            record.attributes = attributes
            if sources.count > 1 {
                let combined = sources.dropFirst().reduce(sources[0].crc32c) {
                    Checksums.combineCRC32C($0, $1.crc32c, secondLength: $1.size)
                }
                guard combined == record.crc32c else {
                    throw StoreError.io("A source object's bytes do not match its CRC32C.")
                }
            }
            settings.beforeStoreWrite?()
            return try store.commit(writer, record: record, if: preconditions.holds)
        } catch let error as StoreError {
            writer.discard()
            throw httpError(error)
        } catch {
            writer.discard()
            throw error
        }
    }
}
