import CloudStorageWire
import HTTP1
import HTTPClient

extension StorageRequestOptions {
    /// Header names extra headers may not use: HTTP's framing and routing, the credentials, and
    /// the headers the options themselves set (a key must come from ``encryptionKey``, whose
    /// digest the SDK computes, not from a header that could disagree with it).
    static let reservedHeaderNames: Set<String> = [
        "authorization", "proxy-authorization", "host", "content-length", "transfer-encoding", "connection",
        "expect", "te", "trailer", "upgrade", "keep-alive", "x-goog-user-project", "x-firebase-appcheck",
    ]

    /// Refuses options the endpoint's protocol does not have, a ``chunkSize`` the protocols do not
    /// allow, and extra headers that are not allowed (see ``headers``).
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming the option or the header (never a value).
    func validate(for endpoint: StorageEndpoint) throws(StorageError) {
        for (name, value) in headers {
            let lowered = name.lowercased()
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenByte) else {
                throw .invalidArgument("The extra header name \"\(name)\" is not an HTTP token.")
            }
            guard !Self.reservedHeaderNames.contains(lowered), !lowered.hasPrefix("x-goog-encryption-"),
                !lowered.hasPrefix("x-goog-copy-source-encryption-")
            else {
                throw .invalidArgument(
                    "The extra header \(name) is set by the SDK or by HTTP itself; it cannot be replaced.")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .invalidArgument("The value of the extra header \(name) contains a line break or NUL.")
            }
        }
        if let chunkSize, !ProtocolLimits.isChunkSize(chunkSize) {
            throw .invalidArgument(
                "The option chunkSize must be a positive multiple of \(ProtocolLimits.chunkGranularityText); "
                    + "it is \(chunkSize).")
        }
        switch endpoint.wireProtocol {
        case .gcsJSON:
            if appCheckToken != nil {
                throw .invalidArgument(
                    "App Check tokens are for Firebase endpoints; Google Cloud Storage endpoints take none.")
            }
        case .firebaseV0:
            let unsupported = [
                ("userProject", userProject != nil), ("encryptionKey", encryptionKey != nil),
                ("kmsKeyName", kmsKeyName != nil), ("predefinedACL", predefinedACL != nil),
                ("storageClass", storageClass != nil),
            ].filter(\.1).map(\.0)
            if !unsupported.isEmpty {
                throw .invalidArgument(
                    "Firebase endpoints have no \(unsupported.joined(separator: ", ")); "
                        + "use a Google Cloud Storage endpoint for these options.")
            }
        }
    }

    /// Adds what every request carries: the extra headers where the request has none of that
    /// name, and the App Check token.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` for options the endpoint does not take;
    ///   ``StorageErrorCode/unauthenticated`` when the App Check token provider fails;
    ///   ``StorageErrorCode/cancelled``.
    func prepare(_ request: inout HTTPRequest, for endpoint: StorageEndpoint) async throws(StorageError) {
        try validate(for: endpoint)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) where request.headers[name] == nil {
            request.headers.add(name, value)
        }
        if let appCheckToken {
            let token: String
            do {
                token = try await appCheckToken()
            } catch {
                if Task.isCancelled || error is CancellationError { throw .cancelled() }
                throw StorageError(
                    .unauthenticated, "The App Check token provider failed; see the underlying error.",
                    underlyingError: error)
            }
            guard !token.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .invalidArgument("The App Check token provider returned a token with a line break or NUL.")
            }
            request.headers.set("X-Firebase-AppCheck", token)
        }
    }

    /// Whether `byte` may appear in an HTTP header name (RFC 9110 `tchar`).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
