import Foundation

/// The JSON shapes of objects in both protocols, and the metadata fields clients write.
enum ObjectJSON {
    /// The GCS JSON API object resource.
    ///
    /// - Parameter keySHA256: The digest of the customer-supplied key the request sent, if any:
    ///   as in Cloud Storage, an object encrypted with such a key shows its hashes only to a
    ///   request that carried the key (``CustomerKey`` checked it where it matters).
    static func gcsResource(_ record: ObjectRecord, base: String, keySHA256: String? = nil) -> [String: Any] {
        let bucket = URLText.encodeComponent(record.bucket)
        let name = URLText.encodeComponent(record.name)
        var json: [String: Any] = [
            "kind": "storage#object",
            "id": "\(record.bucket)/\(record.name)/\(record.generation)",
            "selfLink": "\(base)/storage/v1/b/\(bucket)/o/\(name)",
            "mediaLink": "\(base)/download/storage/v1/b/\(bucket)/o/\(name)?generation=\(record.generation)&alt=media",
            "name": record.name,
            "bucket": record.bucket,
            "generation": String(record.generation),
            "metageneration": String(record.metageneration),
            "contentType": record.attributes.contentType ?? "application/octet-stream",
            "storageClass": record.attributes.storageClass?.uppercased() ?? "STANDARD",
            "size": String(record.size),
            "etag": etag(record),
            "timeCreated": Timestamp.format(record.timeCreated),
            "updated": Timestamp.format(record.updated),
            "timeStorageClassUpdated": Timestamp.format(record.timeCreated),
        ]
        if let stored = record.attributes.customerKeySHA256 {
            json["customerEncryption"] = ["encryptionAlgorithm": "AES256", "keySha256": stored]
        }
        if let kms = record.attributes.kmsKeyName { json["kmsKeyName"] = kms }
        if record.attributes.customerKeySHA256 == nil || record.attributes.customerKeySHA256 == keySHA256 {
            json["crc32c"] = ChecksumEncoding.base64(crc32c: record.crc32c)
            if let md5 = record.md5 { json["md5Hash"] = md5.base64EncodedString() }
        }
        if let timeDeleted = record.timeDeleted { json["timeDeleted"] = Timestamp.format(timeDeleted) }
        if let componentCount = record.componentCount { json["componentCount"] = componentCount }
        var metadata = record.attributes.metadata
        if !record.attributes.downloadTokens.isEmpty {
            metadata["firebaseStorageDownloadTokens"] = record.attributes.downloadTokens.joined(separator: ",")
        }
        if !metadata.isEmpty { json["metadata"] = metadata }
        addOptionalFields(record.attributes, to: &json)
        return json
    }

    /// The Firebase Storage v0 metadata JSON.
    static func firebaseResource(_ record: ObjectRecord) -> [String: Any] {
        let lastComponent = record.name.split(separator: "/").last.map(String.init) ?? record.name
        var json: [String: Any] = [
            "name": record.name,
            "bucket": record.bucket,
            "generation": String(record.generation),
            "metageneration": String(record.metageneration),
            "contentType": record.attributes.contentType ?? "application/octet-stream",
            "timeCreated": Timestamp.format(record.timeCreated),
            "updated": Timestamp.format(record.updated),
            "storageClass": "STANDARD",
            "size": String(record.size),
            "crc32c": ChecksumEncoding.base64(crc32c: record.crc32c),
            "etag": etag(record),
            "contentEncoding": record.attributes.contentEncoding ?? "identity",
            "contentDisposition": record.attributes.contentDisposition
                ?? "inline; filename*=utf-8''\(URLText.encodeComponent(lastComponent))",
            "downloadTokens": record.attributes.downloadTokens.joined(separator: ","),
        ]
        if let md5 = record.md5 { json["md5Hash"] = md5.base64EncodedString() }
        if !record.attributes.metadata.isEmpty { json["metadata"] = record.attributes.metadata }
        if let value = record.attributes.cacheControl { json["cacheControl"] = value }
        if let value = record.attributes.contentLanguage { json["contentLanguage"] = value }
        return json
    }

    private static func addOptionalFields(_ attributes: ObjectAttributes, to json: inout [String: Any]) {
        if let value = attributes.cacheControl { json["cacheControl"] = value }
        if let value = attributes.contentDisposition { json["contentDisposition"] = value }
        if let value = attributes.contentEncoding { json["contentEncoding"] = value }
        if let value = attributes.contentLanguage { json["contentLanguage"] = value }
    }

    /// An entity tag that changes with the generation and the metageneration.
    static func etag(_ record: ObjectRecord) -> String {
        Data("\(record.generation):\(record.metageneration)".utf8).base64EncodedString()
    }

    static var stringFields: [(key: String, path: WritableKeyPath<ObjectAttributes, String?>)] {
        [
            ("contentType", \.contentType), ("cacheControl", \.cacheControl),
            ("contentDisposition", \.contentDisposition), ("contentEncoding", \.contentEncoding),
            ("contentLanguage", \.contentLanguage),
        ]
    }

    /// Upload metadata: the writable fields of a metadata body (unknown fields are ignored, as GCS does).
    static func attributes(from json: [String: Any]) throws -> ObjectAttributes {
        var attributes = ObjectAttributes()
        try apply(patch: json, to: &attributes)
        // Set when an object is written, never by a patch (only a rewrite changes them).
        for (key, path) in [("storageClass", \ObjectAttributes.storageClass), ("kmsKeyName", \.kmsKeyName)] {
            guard let value = json[key], !(value is NSNull) else { continue }
            guard let text = value as? String else { throw HTTPError.badRequest("Invalid value for field '\(key)'.") }
            attributes[keyPath: path] = text
        }
        try WriteOptions.checkStorageClass(attributes.storageClass)
        if let tokens = attributes.metadata.removeValue(forKey: "firebaseStorageDownloadTokens") {
            attributes.downloadTokens = tokens.split(separator: ",").map(String.init)
        }
        return attributes
    }

    /// JSON merge-patch of the writable fields: a string sets, `null` removes;
    /// `metadata` merges key by key (`null` removes a key) and `metadata: null` clears it.
    static func apply(patch json: [String: Any], to attributes: inout ObjectAttributes) throws {
        for field in stringFields {
            guard let value = json[field.key] else { continue }
            if value is NSNull {
                attributes[keyPath: field.path] = nil
            } else if let text = value as? String {
                attributes[keyPath: field.path] = text
            } else {
                throw HTTPError.badRequest("Invalid value for field '\(field.key)'.")
            }
        }
        guard let metadata = json["metadata"] else { return }
        if metadata is NSNull {
            attributes.metadata = [:]
            return
        }
        guard let entries = metadata as? [String: Any] else {
            throw HTTPError.badRequest("Invalid value for field 'metadata'.")
        }
        for (key, value) in entries {
            if value is NSNull {
                attributes.metadata[key] = nil
            } else if let text = value as? String {
                attributes.metadata[key] = text
            } else if let number = value as? NSNumber {
                attributes.metadata[key] = number.stringValue
            } else {
                throw HTTPError.badRequest("Invalid value for metadata key '\(key)'.")
            }
        }
    }

    /// The object name from a metadata body and the `name` query parameter, which must agree.
    static func objectName(query: String?, json: [String: Any]) throws -> String {
        let bodyName = json["name"] as? String
        if let query, let bodyName, !bodyName.isEmpty, query != bodyName {
            throw HTTPError.badRequest("Value '\(bodyName)' in content does not agree with value '\(query)'.")
        }
        guard let name = query ?? bodyName, !name.isEmpty else {
            throw HTTPError(400, "Required", reason: "required")
        }
        return name
    }

    /// Expected checksums from a metadata body (`crc32c`, `md5Hash`).
    static func expectedHashes(_ json: [String: Any]) throws -> ExpectedHashes {
        var expected = ExpectedHashes()
        if let text = json["crc32c"] as? String {
            guard let value = ChecksumEncoding.crc32c(base64: text) else {
                throw HTTPError.badRequest("Invalid crc32c: '\(text)'.")
            }
            expected.crc32c = value
        }
        if let text = json["md5Hash"] as? String {
            guard let value = Data(base64Encoded: text), value.count == 16 else {
                throw HTTPError.badRequest("Invalid md5Hash: '\(text)'.")
            }
            expected.md5 = value
        }
        return expected
    }
}

/// Checksums a client declared for an upload.
struct ExpectedHashes: Sendable, Codable {
    var crc32c: UInt32?
    var md5: Data?

    /// Adds the values of `x-goog-hash` header fields.
    mutating func merge(googHash values: [String]) throws {
        let (crc, md5) = ChecksumEncoding.googHash(values)
        if let crc {
            guard let value = ChecksumEncoding.crc32c(base64: crc) else {
                throw HTTPError.badRequest("Invalid x-goog-hash crc32c value.")
            }
            crc32c = value
        }
        if let md5 {
            guard let value = Data(base64Encoded: md5), value.count == 16 else {
                throw HTTPError.badRequest("Invalid x-goog-hash md5 value.")
            }
            self.md5 = value
        }
    }

    /// Throws 400 with GCS's wording when the computed checksums differ.
    func verify(_ checksums: Checksums) throws {
        if let crc32c, crc32c != checksums.crc32c {
            throw HTTPError(
                400,
                "Provided CRC32C \"\(ChecksumEncoding.base64(crc32c: crc32c))\" doesn't match calculated CRC32C \"\(ChecksumEncoding.base64(crc32c: checksums.crc32c))\".",
                reason: "invalid")
        }
        if let md5 {
            guard let computed = checksums.md5Digest else {
                throw HTTPError(
                    400,
                    "This emulator's discard backing computes no MD5 and cannot verify md5Hash; send crc32c instead.",
                    reason: "invalid")
            }
            guard md5 == computed else {
                throw HTTPError(
                    400,
                    "Provided MD5 hash \"\(md5.base64EncodedString())\" doesn't match calculated MD5 hash \"\(computed.base64EncodedString())\".",
                    reason: "invalid")
            }
        }
    }
}
