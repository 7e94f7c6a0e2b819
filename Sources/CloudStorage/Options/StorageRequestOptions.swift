/// What each request of an operation carries beyond its own arguments: the project billed, an
/// encryption key, how new objects are stored, how uploads are compressed and cut into chunks,
/// whether downloads decompress, extra headers, the retry time and time-outs, and for Firebase
/// an App Check token.
///
/// A ``Storage`` holds the options its calls use by default; ``Storage/with(_:)`` and
/// ``StorageReference/with(_:)`` return a copy whose every call uses them merged with new ones,
/// field by field, the new ones winning (``merging(_:)``). So there is no options parameter on
/// each method, and a handle made for one purpose (a requester-pays bucket, an encrypted
/// folder) can be passed around:
///
/// ```swift
/// let storage = Storage(bucket: "shared-datasets", authorization: .applicationDefault)
///     .with(.init(userProject: "my-billing-project"))
/// let report = storage.reference(withPath: "2024/report.csv")
///     .with(.init(retry: quickRetry, headers: ["X-Request-Reason": "nightly-export"]))
/// let bytes = try await report.data(maxSize: 10 << 20)
/// ```
///
/// Which requests carry what (Google Cloud Storage JSON API endpoints):
/// - ``userProject``: every request, as the `userProject` query parameter.
/// - ``encryptionKey``: every request that reads or writes an object's bytes or reads its
///   metadata (uploads with each of their session requests, downloads, metadata reads, the
///   destination of copies and composes), as `x-goog-encryption-*` headers; the source of a copy
///   sends its own reference's key as `x-goog-copy-source-encryption-*`.
/// - ``kmsKeyName``, ``predefinedACL``, ``storageClass``: requests that create an object
///   (uploads, the destination of copies and composes). An explicit
///   ``StorageMetadata/storageClass`` wins over ``storageClass``.
/// - ``headers``, ``retry``, ``timeouts``: every request.
/// - ``compression``, ``chunkSize``: uploads from `Data` and files (`putData`, `putFile` and
///   their async forms); ``decompressesDownloads``: downloads.
///
/// Firebase endpoints have only ``headers``, ``retry``, ``timeouts``, ``compression``,
/// ``chunkSize``, ``decompressesDownloads`` and ``appCheckToken``;
/// a call on one with any other option set fails with ``StorageErrorCode/invalidArgument``
/// before it sends anything, as does ``appCheckToken`` on a Google Cloud Storage endpoint.
///
/// Secrets never show: the description, debug description and mirror (`dump`) of options
/// name the key only by its digest, and extra headers only by name.
public struct StorageRequestOptions: Sendable {
    /// The project billed for requests to a requester-pays bucket (`userProject`).
    public var userProject: String?
    /// The customer-supplied key the object is (or is to be) encrypted with.
    public var encryptionKey: StorageEncryptionKey?
    /// The Cloud KMS key new objects are encrypted with, such as
    /// `projects/p/locations/l/keyRings/r/cryptoKeys/k`.
    public var kmsKeyName: String?
    /// The access control list new objects get.
    public var predefinedACL: StoragePredefinedACL?
    /// The storage class of new objects, such as `NEARLINE`, unless their metadata names one.
    public var storageClass: String?
    /// Headers added to every request.
    ///
    /// They never replace what the SDK sends: a request that already has a header of the same
    /// name keeps its own. Names the SDK or HTTP owns — `Authorization`, `Host`, the framing
    /// headers (`Content-Length`, `Transfer-Encoding`, `Connection`, `Expect`, `TE`, `Trailer`,
    /// `Upgrade`, `Keep-Alive`), `Proxy-Authorization`, and the encryption, user-project and
    /// App Check headers these options set — are refused with
    /// ``StorageErrorCode/invalidArgument``, as are names that are not HTTP tokens and values
    /// with line breaks or NUL.
    public var headers: [String: String]
    /// The retry rules instead of the ``Storage/configuration``'s.
    public var retry: StorageConfiguration.Retry?
    /// The time-outs instead of the ``Storage/configuration``'s. Only
    /// ``StorageConfiguration/Timeouts/request`` applies per call; connections keep the
    /// connect time-out of the ``Storage`` they were made for.
    public var timeouts: StorageConfiguration.Timeouts?
    /// Gives the Firebase App Check token each request to a Firebase endpoint sends as
    /// `X-Firebase-AppCheck`, as the Firebase SDKs do.
    ///
    /// It is called before every request, so it should return a cached token while that is
    /// valid (as Firebase's `AppCheck.token(forcingRefresh: false)` does). An error it throws
    /// fails the request with ``StorageErrorCode/unauthenticated``, its error attached.
    public var appCheckToken: (@Sendable () async throws -> String)?
    /// How uploads compress their bytes on the way (``StorageCompression/gzip``), as
    /// ``StorageReference/putData(_:metadata:preconditions:compression:)`` does: the object is
    /// stored compressed, with its `Content-Encoding`. Applies to `putData` and `putFile` (and
    /// their async forms); a `putStream` under it fails with ``StorageErrorCode/invalidArgument``.
    public var compression: StorageCompression?
    /// The most bytes one request of a resumable upload carries instead of
    /// ``StorageConfiguration/Uploads/chunkSize``: a positive multiple of 256 KiB, or else every
    /// call fails with ``StorageErrorCode/invalidArgument`` before it sends anything.
    public var chunkSize: Int64?
    /// Whether downloads give an object stored gzip-compressed decompressed, instead of
    /// ``StorageConfiguration/decompressesDownloads``: false gives the stored bytes (python-storage's
    /// `raw_download=True`, Go's `ReadCompressed(true)`).
    public var decompressesDownloads: Bool?

    /// Creates options; every field is unset (inherited when merged) by default.
    ///
    /// ```swift
    /// let options = StorageRequestOptions(userProject: "my-billing-project", predefinedACL: .private)
    /// ```
    ///
    /// - Parameters:
    ///   - userProject: The project billed, for requester-pays buckets.
    ///   - encryptionKey: A customer-supplied encryption key.
    ///   - kmsKeyName: A Cloud KMS key for new objects.
    ///   - predefinedACL: An access control list for new objects.
    ///   - storageClass: The storage class of new objects.
    ///   - retry: Retry rules for these calls.
    ///   - timeouts: Time-outs for these calls.
    ///   - headers: Headers added to every request.
    ///   - appCheckToken: Gives the Firebase App Check token.
    ///   - compression: How uploads compress their bytes.
    ///   - chunkSize: The most bytes per request of a resumable upload.
    ///   - decompressesDownloads: Whether downloads decompress gzip-stored objects.
    public init(
        userProject: String? = nil,
        encryptionKey: StorageEncryptionKey? = nil,
        kmsKeyName: String? = nil,
        predefinedACL: StoragePredefinedACL? = nil,
        storageClass: String? = nil,
        retry: StorageConfiguration.Retry? = nil,
        timeouts: StorageConfiguration.Timeouts? = nil,
        headers: [String: String] = [:],
        appCheckToken: (@Sendable () async throws -> String)? = nil,
        compression: StorageCompression? = nil,
        chunkSize: Int64? = nil,
        decompressesDownloads: Bool? = nil
    ) {
        self.userProject = userProject
        self.encryptionKey = encryptionKey
        self.kmsKeyName = kmsKeyName
        self.predefinedACL = predefinedACL
        self.storageClass = storageClass
        self.retry = retry
        self.timeouts = timeouts
        self.headers = headers
        self.appCheckToken = appCheckToken
        self.compression = compression
        self.chunkSize = chunkSize
        self.decompressesDownloads = decompressesDownloads
    }

    /// These options with every field `overrides` sets replacing this one's; headers are merged
    /// by name (case-insensitively), the overriding value winning.
    ///
    /// ```swift
    /// let merged = defaults.merging(.init(userProject: "other-project"))
    /// ```
    ///
    /// - Parameter overrides: The options that win.
    /// - Returns: The merged options.
    public func merging(_ overrides: StorageRequestOptions) -> StorageRequestOptions {
        var merged = self
        if let value = overrides.userProject { merged.userProject = value }
        if let value = overrides.encryptionKey { merged.encryptionKey = value }
        if let value = overrides.kmsKeyName { merged.kmsKeyName = value }
        if let value = overrides.predefinedACL { merged.predefinedACL = value }
        if let value = overrides.storageClass { merged.storageClass = value }
        if let value = overrides.retry { merged.retry = value }
        if let value = overrides.timeouts { merged.timeouts = value }
        if let value = overrides.appCheckToken { merged.appCheckToken = value }
        if let value = overrides.compression { merged.compression = value }
        if let value = overrides.chunkSize { merged.chunkSize = value }
        if let value = overrides.decompressesDownloads { merged.decompressesDownloads = value }
        for (name, value) in overrides.headers {
            for existing in merged.headers.keys where existing.lowercased() == name.lowercased() {
                merged.headers[existing] = nil
            }
            merged.headers[name] = value
        }
        return merged
    }
}

extension StorageRequestOptions: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields set, with the key as its digest and headers by name only.
    public var description: String {
        "StorageRequestOptions(" + visibleFields.map { "\($0.label): \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror of ``description``'s fields, so that `dump` and debuggers show no secret.
    public var customMirror: Mirror {
        Mirror(
            self, children: visibleFields.map { (label: Optional($0.label), value: $0.value as Any) },
            displayStyle: .struct)
    }

    /// What may be shown of each field that is set.
    private var visibleFields: [(label: String, value: String)] {
        var fields: [(String, String)] = []
        if let userProject { fields.append(("userProject", userProject)) }
        if let encryptionKey { fields.append(("encryptionKey", encryptionKey.description)) }
        if let kmsKeyName { fields.append(("kmsKeyName", kmsKeyName)) }
        if let predefinedACL { fields.append(("predefinedACL", predefinedACL.rawValue)) }
        if let storageClass { fields.append(("storageClass", storageClass)) }
        if retry != nil { fields.append(("retry", "set")) }
        if let timeouts { fields.append(("timeouts.request", "\(timeouts.request)")) }
        if !headers.isEmpty { fields.append(("headers", headers.keys.sorted().joined(separator: ","))) }
        if appCheckToken != nil { fields.append(("appCheckToken", "set")) }
        if let compression { fields.append(("compression", compression.description)) }
        if let chunkSize { fields.append(("chunkSize", String(chunkSize))) }
        if let decompressesDownloads { fields.append(("decompressesDownloads", String(decompressesDownloads))) }
        return fields
    }
}
