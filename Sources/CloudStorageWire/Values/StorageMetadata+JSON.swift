package import Foundation

extension StorageMetadata {
    /// Decodes a GCS object resource, or the Firebase v0 metadata JSON, which
    /// uses the same field names (and adds `downloadTokens`, comma-separated).
    ///
    /// The resource's `name` is the full object name: it becomes ``path``, and
    /// its last segment ``name``. Integers (`size`, `generation`,
    /// `metageneration`) are accepted as JSON strings, as the API sends them,
    /// and as JSON numbers, as some emulators do. Custom `metadata` values
    /// that are strings are kept; numbers and booleans are kept as their JSON
    /// text (`42`, `true`); nulls, arrays and objects are skipped. A date that
    /// is not RFC 3339 is left nil rather than failing a request that
    /// succeeded. Unknown fields are ignored.
    ///
    /// - Parameter json: The response body.
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the body is not a JSON
    ///   object (or is cut short) or a field has the wrong type (a string where a
    ///   number must be, a negative size or generation, `metadata` that is not an
    ///   object); the decoding
    ///   error is the ``StorageError/underlyingError``.
    package init(objectResource json: Data) throws(StorageError) {
        let resource: ObjectResource
        do {
            resource = try JSONDecoder().decode(ObjectResource.self, from: json)
        } catch {
            throw .protocolViolation(
                "The server's answer is not an object resource: it could not be decoded as one.",
                underlyingError: error
            )
        }
        self.init(resource)
    }

    /// The object resource a listing item carries, or nil when the item is only
    /// a name (as some servers answer) or a field is malformed: the listing
    /// stays usable, and the caller can still read that object's metadata on
    /// its own.
    ///
    /// An item counts as a resource when it has `size` and `generation`, which
    /// every GCS object resource has; a name-only item must not pass for an
    /// empty object.
    ///
    /// - Parameter decoder: The decoder positioned at the item.
    /// - Returns: The metadata, or nil.
    package static func listedResource(from decoder: any Decoder) -> StorageMetadata? {
        guard let resource = try? ObjectResource(from: decoder), resource.size != nil, resource.generation != nil
        else { return nil }
        return StorageMetadata(resource)
    }

    /// The GCS JSON API field names that fill a ``StorageMetadata``, comma-separated,
    /// for a `fields=items(…)` selection: the resource minus what the SDK never reads
    /// (`selfLink`, `mediaLink`, `acl`, `kind`), which would add about half to a listing's size.
    package static let gcsResourceFields = ObjectResource.CodingKeys.allCases
        .filter { $0 != .downloadTokens }  // Firebase v0 only; GCS refuses unknown fields.
        .map(\.rawValue).joined(separator: ",")

    /// The metadata a decoded resource describes; shared by single-object answers, listings
    /// and resources nested in other answers.
    fileprivate init(_ resource: ObjectResource) {
        self.init()
        if let fullName = resource.name {
            path = fullName
            name = StoragePath(exact: fullName).lastComponent
        }
        bucket = resource.bucket
        generation = resource.generation?.value
        metageneration = resource.metageneration?.value
        size = resource.size?.value ?? 0
        contentType = resource.contentType
        md5Hash = resource.md5Hash
        crc32c = resource.crc32c
        timeCreated = resource.timeCreated.flatMap(RFC3339Date.parse)
        updated = resource.updated.flatMap(RFC3339Date.parse)
        cacheControl = resource.cacheControl
        contentDisposition = resource.contentDisposition
        contentEncoding = resource.contentEncoding
        contentLanguage = resource.contentLanguage
        customMetadata = resource.metadata?.compactMapValues(\.text) ?? [:]
        storageClass = resource.storageClass
        customTime = resource.customTime.flatMap(RFC3339Date.parse)
        temporaryHold = resource.temporaryHold
        eventBasedHold = resource.eventBasedHold
        retention = resource.retention
        id = resource.id
        etag = resource.etag
        componentCount = resource.componentCount.map { Int($0.value) }
        kmsKeyName = resource.kmsKeyName
        customerEncryption = resource.customerEncryption
        timeDeleted = resource.timeDeleted.flatMap(RFC3339Date.parse)
        timeStorageClassUpdated = resource.timeStorageClassUpdated.flatMap(RFC3339Date.parse)
        timeFinalized = resource.timeFinalized.flatMap(RFC3339Date.parse)
        softDeleteTime = resource.softDeleteTime.flatMap(RFC3339Date.parse)
        hardDeleteTime = resource.hardDeleteTime.flatMap(RFC3339Date.parse)
        downloadTokens =
            resource.downloadTokens?.split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty } ?? []
    }

    /// The JSON body that starts an upload of this metadata to `name`.
    ///
    /// Holds `name`, the writable fields that are set (``resourceFields``), and `crc32c` as
    /// base64 of four big-endian bytes when given. Keys are sorted at every level, so equal
    /// metadata gives equal bytes.
    ///
    /// - Parameters:
    ///   - name: The object name, already validated.
    ///   - crc32c: The checksum of the whole object, when known in advance.
    /// - Returns: UTF-8 JSON text.
    package func resourceJSON(name: String, crc32c: UInt32?) -> Data {
        var fields: [(String, JSONText.Value)] = [("name", .string(name))] + resourceFields
        if let crc32c { fields.append(("crc32c", .string(CRC32CEncoding.base64(crc32c)))) }
        return Data(JSONText.serialize(.object(fields)).utf8)
    }

    /// The writable fields that are set, as object-resource members: `contentType`,
    /// `cacheControl`, `contentDisposition`, `contentEncoding`, `contentLanguage`,
    /// `storageClass`, `customTime` (RFC 3339), `temporaryHold`, `eventBasedHold`, `retention`,
    /// and `metadata` when ``customMetadata`` is not empty. What an upload, a copy or a
    /// compose sends for the object it creates.
    package var resourceFields: [(String, JSONText.Value)] {
        var fields: [(String, JSONText.Value)] = []
        let strings: [(String, String?)] = [
            ("contentType", contentType),
            ("cacheControl", cacheControl),
            ("contentDisposition", contentDisposition),
            ("contentEncoding", contentEncoding),
            ("contentLanguage", contentLanguage),
            ("storageClass", storageClass),
        ]
        for case (let key, let value?) in strings {
            fields.append((key, .string(value)))
        }
        if let customTime { fields.append(("customTime", customTime.jsonValue)) }
        if let temporaryHold { fields.append(("temporaryHold", .bool(temporaryHold))) }
        if let eventBasedHold { fields.append(("eventBasedHold", .bool(eventBasedHold))) }
        if let retention { fields.append(("retention", retention.jsonValue)) }
        if !customMetadata.isEmpty {
            fields.append(("metadata", .object(customMetadata.map { ($0.key, .string($0.value)) })))
        }
        return fields
    }
}

/// A value that can be a member of a request's JSON body.
package protocol JSONFieldValue {
    /// The value as JSON.
    var jsonValue: JSONText.Value { get }
}

extension String: JSONFieldValue {
    package var jsonValue: JSONText.Value { .string(self) }
}

extension Bool: JSONFieldValue {
    package var jsonValue: JSONText.Value { .bool(self) }
}

extension Date: JSONFieldValue {
    /// The date as the RFC 3339 text the JSON API reads.
    package var jsonValue: JSONText.Value { .string(RFC3339Date.format(self)) }
}

extension StorageMetadata.Retention: JSONFieldValue {
    package var jsonValue: JSONText.Value {
        .object([("mode", .string(mode.rawValue)), ("retainUntilTime", retainUntilTime.jsonValue)])
    }
}

/// The fields of a GCS object resource the SDK reads.
private struct ObjectResource: Decodable {
    package var name: String?
    package var bucket: String?
    package var generation: FlexibleInt64?
    package var metageneration: FlexibleInt64?
    package var size: FlexibleInt64?
    package var contentType: String?
    package var md5Hash: String?
    package var crc32c: String?
    package var timeCreated: String?
    package var updated: String?
    package var cacheControl: String?
    package var contentDisposition: String?
    package var contentEncoding: String?
    package var contentLanguage: String?
    package var metadata: [String: LooseScalar]?
    package var downloadTokens: String?
    package var storageClass: String?
    package var customTime: String?
    package var temporaryHold: Bool?
    package var eventBasedHold: Bool?
    package var retention: StorageMetadata.Retention?
    package var id: String?
    package var etag: String?
    package var componentCount: FlexibleInt64?
    package var kmsKeyName: String?
    package var customerEncryption: StorageMetadata.CustomerEncryption?
    package var timeDeleted: String?
    package var timeStorageClassUpdated: String?
    package var timeFinalized: String?
    package var softDeleteTime: String?
    package var hardDeleteTime: String?

    package enum CodingKeys: String, CodingKey, CaseIterable {
        case name, bucket, generation, metageneration, size, contentType, md5Hash, crc32c
        case timeCreated, updated, cacheControl, contentDisposition, contentEncoding, contentLanguage
        case metadata, downloadTokens
        case storageClass, customTime, temporaryHold, eventBasedHold, retention, id, etag, componentCount
        case kmsKeyName, customerEncryption, timeDeleted, timeStorageClassUpdated, timeFinalized
        case softDeleteTime, hardDeleteTime
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        bucket = try container.decodeIfPresent(String.self, forKey: .bucket)
        generation = try container.decodeIfPresent(FlexibleInt64.self, forKey: .generation)
        metageneration = try container.decodeIfPresent(FlexibleInt64.self, forKey: .metageneration)
        size = try container.decodeIfPresent(FlexibleInt64.self, forKey: .size)
        for (key, value) in [(CodingKeys.size, size), (.generation, generation), (.metageneration, metageneration)] {
            if let value, value.value < 0 {
                throw DecodingError.dataCorruptedError(
                    forKey: key,
                    in: container,
                    debugDescription: "\(key.stringValue) is negative: \(value.value)"
                )
            }
        }
        contentType = try container.decodeIfPresent(String.self, forKey: .contentType)
        md5Hash = try container.decodeIfPresent(String.self, forKey: .md5Hash)
        crc32c = try container.decodeIfPresent(String.self, forKey: .crc32c)
        timeCreated = try container.decodeIfPresent(String.self, forKey: .timeCreated)
        updated = try container.decodeIfPresent(String.self, forKey: .updated)
        cacheControl = try container.decodeIfPresent(String.self, forKey: .cacheControl)
        contentDisposition = try container.decodeIfPresent(String.self, forKey: .contentDisposition)
        contentEncoding = try container.decodeIfPresent(String.self, forKey: .contentEncoding)
        contentLanguage = try container.decodeIfPresent(String.self, forKey: .contentLanguage)
        metadata = try container.decodeIfPresent([String: LooseScalar].self, forKey: .metadata)
        downloadTokens = try container.decodeIfPresent(String.self, forKey: .downloadTokens)
        storageClass = try container.decodeIfPresent(String.self, forKey: .storageClass)
        customTime = try container.decodeIfPresent(String.self, forKey: .customTime)
        temporaryHold = try container.decodeIfPresent(Bool.self, forKey: .temporaryHold)
        eventBasedHold = try container.decodeIfPresent(Bool.self, forKey: .eventBasedHold)
        retention = try container.decodeIfPresent(RetentionResource.self, forKey: .retention)?.retention
        id = try container.decodeIfPresent(String.self, forKey: .id)
        etag = try container.decodeIfPresent(String.self, forKey: .etag)
        componentCount = try container.decodeIfPresent(FlexibleInt64.self, forKey: .componentCount)
        if let componentCount, componentCount.value < 1 || componentCount.value > Int64(Int32.max) {
            throw DecodingError.dataCorruptedError(
                forKey: .componentCount, in: container,
                debugDescription: "componentCount is out of range: \(componentCount.value)")
        }
        kmsKeyName = try container.decodeIfPresent(String.self, forKey: .kmsKeyName)
        customerEncryption = try container.decodeIfPresent(EncryptionResource.self, forKey: .customerEncryption)
            .map { .init(encryptionAlgorithm: $0.encryptionAlgorithm, keySHA256: $0.keySha256) }
        timeDeleted = try container.decodeIfPresent(String.self, forKey: .timeDeleted)
        timeStorageClassUpdated = try container.decodeIfPresent(String.self, forKey: .timeStorageClassUpdated)
        timeFinalized = try container.decodeIfPresent(String.self, forKey: .timeFinalized)
        softDeleteTime = try container.decodeIfPresent(String.self, forKey: .softDeleteTime)
        hardDeleteTime = try container.decodeIfPresent(String.self, forKey: .hardDeleteTime)
    }

    /// `retention`: both members are required, and the time must be RFC 3339, since a
    /// retention whose end cannot be read says nothing about when the object may go.
    private struct RetentionResource: Decodable {
        package var retention: StorageMetadata.Retention

        private enum CodingKeys: String, CodingKey { case mode, retainUntilTime }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let mode = try container.decode(String.self, forKey: .mode)
            let text = try container.decode(String.self, forKey: .retainUntilTime)
            guard let until = RFC3339Date.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .retainUntilTime, in: container, debugDescription: "\"\(text)\" is not an RFC 3339 time")
            }
            retention = StorageMetadata.Retention(mode: .init(rawValue: mode), retainUntilTime: until)
        }
    }

    /// `customerEncryption`, both members required.
    private struct EncryptionResource: Decodable {
        package var encryptionAlgorithm: String
        package var keySha256: String
    }
}

/// An object resource nested in another answer (a rewrite's `resource`), read as strictly as a
/// whole answer is by ``StorageMetadata/init(objectResource:)``.
package struct NestedObjectResource: Decodable {
    package var metadata: StorageMetadata

    package init(from decoder: any Decoder) throws {
        metadata = StorageMetadata(try ObjectResource(from: decoder))
    }
}

/// An integer sent as a JSON string (the GCS JSON API's form for 64-bit
/// values) or as a JSON number.
package struct FlexibleInt64: Decodable {
    package var value: Int64

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
            return
        }
        let text = try container.decode(String.self)
        guard let number = Int64(text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "\"\(text)\" is not a 64-bit integer"
            )
        }
        value = number
    }
}

/// A custom-metadata value: its text when it is a string, number or boolean;
/// nil (skipped) for null, arrays and objects.
private struct LooseScalar: Decodable {
    package var text: String?

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            text = nil
        } else if let string = try? container.decode(String.self) {
            text = string
        } else if let bool = try? container.decode(Bool.self) {
            text = bool ? "true" : "false"
        } else if let integer = try? container.decode(Int64.self) {
            text = String(integer)
        } else if let double = try? container.decode(Double.self) {
            text = String(double)
        } else {
            text = nil
        }
    }
}

/// A tiny JSON writer for request bodies made only of strings, booleans, nulls, arrays and objects.
///
/// Hand-written because it cannot fail, unlike `JSONSerialization` and
/// `JSONEncoder`, whose errors could only be handled by sending a wrong body;
/// and because its output (sorted keys, no escaped `/`) is byte-for-byte the
/// same on every platform.
package enum JSONText {
    /// A JSON value this writer can produce.
    package indirect enum Value {
        case string(String)
        case bool(Bool)
        case object([(String, Value)])
        case array([Value])
        /// `null`: in a PATCH body, removes the field.
        case null
    }

    /// The JSON text of a value, with object keys sorted by their UTF-8 bytes.
    ///
    /// - Parameter value: The value.
    /// - Returns: Compact JSON text.
    package static func serialize(_ value: Value) -> String {
        var output = ""
        write(value, to: &output)
        return output
    }

    private static func write(_ value: Value, to output: inout String) {
        switch value {
        case .string(let string):
            writeString(string, to: &output)
        case .bool(let value):
            output += value ? "true" : "false"
        case .null:
            output += "null"
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                write(element, to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            let sorted = members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { output += "," }
                writeString(member.0, to: &output)
                output += ":"
                write(member.1, to: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case "\u{00}"..."\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}":
                // Control characters must be escaped; U+007F and the line
                // separators are escaped too, for readers that choke on them.
                let hex = String(scalar.value, radix: 16, uppercase: true)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
