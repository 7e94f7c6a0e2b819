import CloudStorageWire
public import Foundation
import SystemCalls

/// A persistable description of a file upload's resumable session, so that another process can
/// finish the upload from the bytes the server already holds.
///
/// A running file upload offers it as ``StorageUploadTask/resumableSession`` once the server has
/// opened the session; save it (``write(to:)``) and, after a crash or a restart, read it back
/// (``init(contentsOf:)``) and hand it to ``Storage/resumeUpload(_:from:)``, which asks the
/// server how many bytes it committed and sends only the rest.
///
/// ```swift
/// let task = storage.reference(withPath: "backups/db.tar").putFile(from: file)
/// if let session = await task.waitForResumableSession() {
///     try session.write(to: recordURL)  // owner-only, atomically
/// }
/// // ... in a new process:
/// let saved = try StorageUploadSession(contentsOf: recordURL)
/// let metadata = try await storage.resumeUpload(saved, from: file).value
/// ```
///
/// > Important: ``sessionURL`` is a bearer capability. Anyone who holds it can write the object
/// > until the session expires (about a week on Google Cloud Storage), with no other credential.
/// > Store descriptions where only their owner can read them: ``write(to:)`` creates the file with
/// > permissions `0600`; whatever else stores the encoded value must be as careful. ``description``
/// > and ``debugDescription`` leave out the session URL's query (its `upload_id`), so logging a
/// > description does not leak it; the encoded JSON contains it in full.
///
/// What it records, and what resuming checks before sending a byte:
/// - the session URL, which must be on the endpoint's host (scheme, host and port): every
///   request to it carries the ``Storage``'s credentials;
/// - the endpoint (base URL and wire protocol: GCS JSON API or Firebase v0), bucket and object
///   path: resuming through a ``Storage`` of another endpoint or bucket is refused with
///   ``StorageErrorCode/bucketMismatch``;
/// - the file's identity (``SourceFile``): its size, modification time to the nanosecond, device
///   and inode; any difference is refused with ``StorageErrorCode/fileChanged``;
/// - the file's CRC32C, when it was known when the description was taken (the SDK computes it
///   while a large file sends, so an early description may lack it): a local file whose CRC32C
///   differs is refused with ``StorageErrorCode/fileChanged``.
///
/// Without a recorded CRC32C, a file rewritten with the same size and modification time is not
/// noticed up front; the upload still ends with the same verification as any other: the CRC32C of
/// the whole local file is compared with the stored object's (Google Cloud Storage also checks it
/// before it finalizes), so bytes committed from the old contents end the upload with
/// ``StorageErrorCode/nonMatchingChecksum`` and no object, never a wrong one.
///
/// Only file uploads through a resumable session have one: an upload small enough to go in one
/// request (``StorageConfiguration/Uploads/multipartThreshold``), one from `Data` (its bytes are
/// gone with the process) and one from a stream (a sequence cannot be read again) do not.
public struct StorageUploadSession: Codable, Sendable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The identity of the file an upload reads: what must be unchanged for it to be resumed.
    public struct SourceFile: Sendable, Hashable {
        /// The file's absolute path when the upload started (resuming may name another path to
        /// the same file: the device and inode decide).
        public let path: String
        /// The file's size in bytes.
        public let size: Int64
        /// The modification time's whole seconds since 1970.
        public let modificationSeconds: Int64
        /// The modification time's nanoseconds, `0..<1_000_000_000`.
        public let modificationNanoseconds: Int64
        /// The device the file is on, where the system reports one.
        public let device: UInt64?
        /// The file's inode number on ``device``, where the system reports one.
        public let inode: UInt64?
    }

    /// The version of the encoded form this SDK writes and reads; another is refused.
    public static let currentFormatVersion = 1
    /// The largest encoded description ``init(contentsOf:)`` reads.
    static let maximumEncodedSize = 64 * 1024

    /// The version of the encoded form: ``currentFormatVersion``.
    public let formatVersion: Int
    /// The session's URL: a bearer capability (see the type's documentation). Never log it.
    public let sessionURL: URL
    /// The service the session belongs to: base URL and wire protocol.
    public let endpoint: StorageEndpoint
    /// The bucket of the object being uploaded.
    public let bucket: String
    /// The object's path in the bucket.
    public let objectPath: String
    /// The file being uploaded, as it was when the upload opened it.
    public let source: SourceFile
    /// The request size the upload used (``StorageConfiguration/Uploads/chunkSize``), or nil when it sent
    /// the rest in one request. A resumed upload uses its own ``Storage``'s setting when it has one.
    public let chunkSize: Int64?
    /// The CRC32C of the whole file, when it was known when this description was taken.
    public let crc32c: UInt32?
    /// For a file sent in parts (``StorageConfiguration/Uploads/Parallel``), the size of its
    /// parts; ``sessionURL`` is then the XML API multipart upload's URL (`…?uploadId=`). Nil for
    /// a resumable session.
    public let partSize: Int64?

    init(
        sessionURL: URL, endpoint: StorageEndpoint, bucket: String, objectPath: String, source: SourceFile,
        chunkSize: Int64?, crc32c: UInt32?, partSize: Int64? = nil
    ) {
        self.partSize = partSize
        self.formatVersion = Self.currentFormatVersion
        self.sessionURL = sessionURL
        self.endpoint = endpoint
        self.bucket = bucket
        self.objectPath = objectPath
        self.source = source
        self.chunkSize = chunkSize
        self.crc32c = crc32c
    }

    /// The file's identity as ``ReadOnlyFile`` captures it.
    var identity: ReadOnlyFile.Identity? {
        guard let device = source.device, let inode = source.inode else { return nil }
        return ReadOnlyFile.Identity(
            device: device, inode: inode, size: source.size, modificationSeconds: source.modificationSeconds,
            modificationNanoseconds: source.modificationNanoseconds)
    }

    // MARK: Describing without the capability

    /// The session URL without its query (where `upload_id` lives), for logs.
    private var redactedSessionURL: String {
        guard var parts = URLComponents(url: sessionURL, resolvingAgainstBaseURL: false) else { return "<redacted>" }
        let hadQuery = parts.query != nil
        parts.query = nil
        parts.fragment = nil
        parts.user = nil
        parts.password = nil
        return (parts.string ?? "<redacted>") + (hadQuery ? "?<redacted>" : "")
    }

    /// The object, the endpoint, the file and the session URL without its query (never the
    /// `upload_id`, which would let a reader of the log write the object).
    public var description: String {
        "StorageUploadSession(gs://\(bucket)/\(objectPath) at \(endpoint), file \(source.path) "
            + "(\(source.size) bytes), session \(redactedSessionURL))"
    }

    /// As ``description``: the session URL's query stays out of debug output too.
    public var debugDescription: String { description }

    // MARK: Coding

    private enum CodingKeys: String, CodingKey {
        case formatVersion, sessionURL, endpoint, wireProtocol, bucket, objectPath, source, chunkSize, crc32c
        case partSize
    }

    private enum SourceKeys: String, CodingKey {
        case path, size, modificationSeconds, modificationNanoseconds, device, inode
    }

    /// Decodes a description, refusing anything this SDK did not write or could not use: an unknown
    /// ``formatVersion``, a session or endpoint URL that is not `http(s)` with a host (or a session
    /// that leaves TLS), an unknown wire protocol, an empty bucket or path, a relative file path,
    /// a negative size, nanoseconds out of range, a chunk size that is not a positive multiple of
    /// 256 KiB, a CRC32C that is not 4 bytes of base64.
    ///
    /// - Throws: `DecodingError.dataCorrupted` saying what is wrong.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .formatVersion)
        guard version == Self.currentFormatVersion else {
            throw Self.refusal(
                .formatVersion,
                "format version \(version) is not one this SDK knows (it reads \(Self.currentFormatVersion)).",
                in: container)
        }
        (endpoint, sessionURL) = try Self.decodeEndpointAndSession(from: container)
        bucket = try container.decode(String.self, forKey: .bucket)
        guard !bucket.isEmpty, bucket.utf8.count <= 222, !bucket.contains("/") else {
            throw Self.refusal(.bucket, "the bucket name is empty, too long or contains a slash.", in: container)
        }
        objectPath = try container.decode(String.self, forKey: .objectPath)
        guard !objectPath.isEmpty, objectPath.utf8.count <= 1024 else {
            throw Self.refusal(.objectPath, "the object path is empty or longer than 1024 bytes.", in: container)
        }
        source = try Self.decodeSource(from: container)
        chunkSize = try container.decodeIfPresent(Int64.self, forKey: .chunkSize)
        if let chunkSize, !ProtocolLimits.isChunkSize(chunkSize) {
            throw Self.refusal(
                .chunkSize, "the chunk size is not a positive multiple of \(ProtocolLimits.chunkGranularityText).",
                in: container)
        }
        if let text = try container.decodeIfPresent(String.self, forKey: .crc32c) {
            guard let value = CRC32CEncoding.parse(text) else {
                throw Self.refusal(.crc32c, "the CRC32C is not 4 bytes of base64.", in: container)
            }
            crc32c = value
        } else {
            crc32c = nil
        }
        partSize = try container.decodeIfPresent(Int64.self, forKey: .partSize)
        if let partSize, partSize <= 0 {
            throw Self.refusal(.partSize, "the part size is not positive.", in: container)
        }
        formatVersion = version
    }

    /// The error that refuses a description because of the field at `key`.
    private static func refusal(
        _ key: CodingKeys, _ problem: String, in container: KeyedDecodingContainer<CodingKeys>
    ) -> DecodingError {
        .dataCorrupted(
            DecodingError.Context(
                codingPath: container.codingPath + [key], debugDescription: "Upload session: \(problem)"))
    }

    /// Decodes the endpoint (its URL and wire protocol) and the session URL, refusing a session
    /// that is not a web URL, leaves TLS, or is on another host than the endpoint.
    private static func decodeEndpointAndSession(
        from container: KeyedDecodingContainer<CodingKeys>
    ) throws -> (StorageEndpoint, URL) {
        let base = try webURL(container.decode(String.self, forKey: .endpoint))
        guard let base else {
            throw refusal(.endpoint, "the endpoint is not an http(s) URL with a host.", in: container)
        }
        let endpoint: StorageEndpoint
        switch try container.decode(String.self, forKey: .wireProtocol) {
        case "gcsJSON": endpoint = .gcs(base)
        case "firebaseV0": endpoint = .firebase(base)
        default: throw refusal(.wireProtocol, "the wire protocol is neither gcsJSON nor firebaseV0.", in: container)
        }
        guard let session = try webURL(container.decode(String.self, forKey: .sessionURL)) else {
            throw refusal(.sessionURL, "the session URL is not an http(s) URL with a host.", in: container)
        }
        guard (try? sessionURLKeepingTLS(session, base: base)) != nil else {
            throw refusal(.sessionURL, "the session URL is not https although the endpoint is.", in: container)
        }
        guard sameOrigin(session, base) else {
            // Every session request carries the Storage's credentials: a description that sends
            // them to another host is refused, whoever edited it.
            throw refusal(.sessionURL, "the session URL is not on the endpoint's host.", in: container)
        }
        return (endpoint, session)
    }

    /// Decodes the file's description, refusing a relative path, a negative size or
    /// nanoseconds out of range.
    private static func decodeSource(from container: KeyedDecodingContainer<CodingKeys>) throws -> SourceFile {
        let file = try container.nestedContainer(keyedBy: SourceKeys.self, forKey: .source)
        let path = try file.decode(String.self, forKey: .path)
        let size = try file.decode(Int64.self, forKey: .size)
        let seconds = try file.decode(Int64.self, forKey: .modificationSeconds)
        let nanoseconds = try file.decode(Int64.self, forKey: .modificationNanoseconds)
        guard path.hasPrefix("/"), !path.contains("\0") else {
            throw refusal(.source, "the file path is not absolute.", in: container)
        }
        guard size >= 0 else { throw refusal(.source, "the file size is negative.", in: container) }
        guard (0..<1_000_000_000).contains(nanoseconds) else {
            throw refusal(.source, "the modification time's nanoseconds are out of range.", in: container)
        }
        return SourceFile(
            path: path, size: size, modificationSeconds: seconds, modificationNanoseconds: nanoseconds,
            device: try file.decodeIfPresent(UInt64.self, forKey: .device),
            inode: try file.decodeIfPresent(UInt64.self, forKey: .inode))
    }

    /// Encodes every field, the session URL included (see the type's warning about storing it).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(formatVersion, forKey: .formatVersion)
        try container.encode(sessionURL.absoluteString, forKey: .sessionURL)
        try container.encode(endpoint.baseURL.absoluteString, forKey: .endpoint)
        let wire =
            switch endpoint.wireProtocol {
            case .gcsJSON: "gcsJSON"
            case .firebaseV0: "firebaseV0"
            }
        try container.encode(wire, forKey: .wireProtocol)
        try container.encode(bucket, forKey: .bucket)
        try container.encode(objectPath, forKey: .objectPath)
        var file = container.nestedContainer(keyedBy: SourceKeys.self, forKey: .source)
        try file.encode(source.path, forKey: .path)
        try file.encode(source.size, forKey: .size)
        try file.encode(source.modificationSeconds, forKey: .modificationSeconds)
        try file.encode(source.modificationNanoseconds, forKey: .modificationNanoseconds)
        try file.encodeIfPresent(source.device, forKey: .device)
        try file.encodeIfPresent(source.inode, forKey: .inode)
        try container.encodeIfPresent(chunkSize, forKey: .chunkSize)
        try container.encodeIfPresent(crc32c.map(CRC32CEncoding.base64), forKey: .crc32c)
        try container.encodeIfPresent(partSize, forKey: .partSize)
    }

    /// Whether two URLs have the same scheme, host and port (the default port of the scheme
    /// when none is written): where a request's credentials go.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int)? {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
            return (scheme, host, url.port ?? (scheme == "https" ? 443 : 80))
        }
        guard let x = origin(a), let y = origin(b) else { return false }
        return x == y
    }

    private static func webURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return nil }
        return url
    }

    // MARK: Files

    /// Reads a description written by ``write(to:)`` (or any JSON encoding of one).
    ///
    /// Blocks while it reads (a few hundred bytes); at most 64 KiB are read.
    ///
    /// - Parameter url: A `file://` URL.
    /// - Throws: ``StorageErrorCode/unreadableFile`` when the file cannot be read;
    ///   ``StorageErrorCode/invalidArgument`` naming the problem when it is not a valid
    ///   description (malformed JSON, an unknown format version, absurd values).
    public init(contentsOf url: URL) throws(StorageError) {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            data = try handle.read(upToCount: Self.maximumEncodedSize + 1) ?? Data()
        } catch {
            throw StorageError(
                .unreadableFile, "The upload session at \(url.path) cannot be read.", underlyingError: error)
        }
        guard data.count <= Self.maximumEncodedSize else {
            throw .invalidArgument("The upload session at \(url.path) is larger than any this SDK writes.")
        }
        self = try Self.decode(data, from: url.path)
    }

    /// Decodes JSON, turning any failure into a clear ``StorageErrorCode/invalidArgument``.
    static func decode(_ data: Data, from origin: String) throws(StorageError) -> StorageUploadSession {
        do {
            return try JSONDecoder().decode(StorageUploadSession.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw .invalidArgument("The upload session at \(origin) is invalid: \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, _) {
            throw .invalidArgument("The upload session at \(origin) lacks \(key.stringValue).")
        } catch let DecodingError.typeMismatch(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .invalidArgument("The upload session at \(origin) has a value of the wrong type at \(field).")
        } catch {
            throw .invalidArgument("The upload session at \(origin) is not valid JSON for an upload session.")
        }
    }

    /// Writes the description as JSON to `url`, atomically and readable by its owner only.
    ///
    /// The JSON goes to a new file next to `url`, created with permissions `0600` (never widened
    /// later), flushed to disk, then renamed over `url`: a reader sees the old description or the
    /// new one, never part of one, and no one else can read the session URL at any moment. Blocks
    /// while it writes.
    ///
    /// - Parameter url: A `file://` URL in an existing directory.
    /// - Throws: ``StorageErrorCode/unwritableFile`` when the file cannot be written.
    public func write(to url: URL) throws(StorageError) {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            data = try encoder.encode(self)
        } catch {
            throw .internalError("The upload session could not be encoded.", underlyingError: error)
        }
        let path = url.path
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp").path
        // Created owner-only: the umask can only remove permissions, never add any.
        do throws(SystemCallError) {
            let flags: SystemCall.OpenFlags = [.writeOnly, .create, .exclusive, .closeOnExec, .noFollow]
            let fd = try SystemCall.open(temporary, flags, mode: 0o600)
            do throws(SystemCallError) {
                // `withUnsafeBytes` rethrows only untyped errors: the write's comes out as a value.
                try data.withUnsafeBytes { raw in
                    Result { () throws(SystemCallError) in try SystemCall.writeAll(fd, raw) }
                }.get()
                try SystemCall.sync(fd)
            } catch {
                try? SystemCall.close(fd)
                throw error
            }
            try SystemCall.close(fd)
            try SystemCall.rename(temporary, to: path)
        } catch {
            SystemCall.removeIfPresent(temporary)
            throw Self.writeError(path, error)
        }
    }

    private static func writeError(_ path: String, _ failure: SystemCallError) -> StorageError {
        StorageError(
            .unwritableFile, "The upload session could not be written to \(path) (\(failure.reason)).",
            underlyingError: POSIXError(POSIXErrorCode(rawValue: failure.errno) ?? .EIO))
    }
}
