import HTTP1

extension StorageConfiguration {
    /// How every request names the software that sends it, as Google's own clients do, so that
    /// the service's logs (and its support, when you ask them) can tell this SDK, its version and
    /// your application apart.
    ///
    /// Every request carries:
    /// - `User-Agent: cloud-storage-swift/<version>`, followed by ``applicationSuffix`` when set
    ///   (Google's Go client sends `gcloud-golang-storage/<version>`);
    /// - to the Cloud Storage JSON API, `x-goog-api-client: gl-swift/<compiler> gccl/<version>
    ///   gccl-invocation-id/<uuid> gccl-attempt-count/<n>`: space-separated `name/version` tokens
    ///   for the language and the client library, the form Google's Python and Go clients send
    ///   (`gl-python/3.12.1 … gccl/2.14.0`), then the call's id, the same on every attempt of one
    ///   call (an upload, a metadata read), and which attempt this is; and the call's id again as
    ///   `x-goog-gcs-idempotency-token`, so that the service can tell a retry from a new call;
    /// - to Cloud Storage for Firebase (v0), `X-Firebase-Storage-Version: swift/<version>`, the
    ///   header in which the Firebase SDKs name themselves (`webjs/10.7.0`, `ios/10.13.0`).
    ///
    /// `<version>` is ``sdkVersion``; `<compiler>` is the Swift compiler's major and minor version.
    /// Token requests (to an OAuth 2 token endpoint or the metadata server) carry the same
    /// `User-Agent` and `x-goog-api-client` without the call's tokens.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.identification.setApplicationSuffix("photo-sync/2.4.1")
    /// // User-Agent: cloud-storage-swift/0.1.0 photo-sync/2.4.1
    /// ```
    public struct Identification: Sendable, Hashable {
        /// This SDK's version, as every request names it.
        public static let sdkVersion = "0.1.0"

        /// The longest ``applicationSuffix`` accepted, in characters.
        public static let maxApplicationSuffixLength = 256

        /// What the `User-Agent` names after the SDK: your application, conventionally as
        /// `name/version` tokens separated by spaces (`photo-sync/2.4.1`). Nil (the default) adds
        /// nothing. Set it with ``setApplicationSuffix(_:)``.
        public private(set) var applicationSuffix: String? = nil

        /// Creates the default identification: the SDK's tokens and no application suffix.
        public init() {}

        /// Sets ``applicationSuffix``.
        ///
        /// Only printable ASCII is accepted (a space included), so a suffix can neither break the
        /// header line (a CR or LF would end it and start another header) nor carry bytes a
        /// server would refuse.
        ///
        /// ```swift
        /// try configuration.identification.setApplicationSuffix("photo-sync/2.4.1")
        /// ```
        ///
        /// - Parameter suffix: One or more `name/version` tokens; nil or empty for none.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for a character outside printable ASCII
        ///   (a line break, a control character, anything beyond `~`), or a suffix longer than
        ///   ``maxApplicationSuffixLength``; ``applicationSuffix`` is then unchanged.
        public mutating func setApplicationSuffix(_ suffix: String?) throws(StorageError) {
            guard let suffix, !suffix.isEmpty else {
                applicationSuffix = nil
                return
            }
            guard suffix.utf8.count <= Self.maxApplicationSuffixLength,
                suffix.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
            else {
                throw .invalidSetting(
                    "identification.applicationSuffix",
                    must:
                        "printable ASCII (no line breaks or control characters), at most \(Self.maxApplicationSuffixLength) characters",
                    is: String(reflecting: suffix))
            }
            applicationSuffix = suffix
        }

        /// The `User-Agent` value: the SDK's token, then the application's.
        var userAgent: String {
            let sdk = "cloud-storage-swift/\(Self.sdkVersion)"
            return applicationSuffix.map { "\(sdk) \($0)" } ?? sdk
        }

        /// The `x-goog-api-client` value: the language's token, then the client library's.
        var apiClient: String { "gl-swift/\(Self.compilerVersion) gccl/\(Self.sdkVersion)" }

        /// The `X-Firebase-Storage-Version` value, in the Firebase SDKs' `platform/version` form.
        var firebaseStorageVersion: String { "swift/\(Self.sdkVersion)" }

        /// The major and minor version of the compiler that built the SDK.
        static var compilerVersion: String {
            #if compiler(>=6.5)
            "6.5"
            #elseif compiler(>=6.4)
            "6.4"
            #elseif compiler(>=6.3)
            "6.3"
            #elseif compiler(>=6.2)
            "6.2"
            #elseif compiler(>=6.1)
            "6.1"
            #else
            "6.0"
            #endif
        }
    }
}

extension StorageConfiguration.Identification {
    /// One attempt of one call, as the identification headers name it.
    struct Call: Sendable, Equatable {
        /// The call's id, the same on every attempt (a UUID).
        let id: String
        /// Which attempt this is, from 1.
        let attempt: Int
    }

    /// Sets the identification headers on `headers`.
    ///
    /// - Parameters:
    ///   - wireProtocol: The protocol the request speaks, which decides the protocol's own
    ///     header; nil for requests outside the storage service (token requests).
    ///   - call: The call and attempt the request is, named to Cloud Storage as Google's
    ///     clients name them (`gccl-invocation-id/<id> gccl-attempt-count/<n>` in
    ///     `x-goog-api-client`, and the id as `x-goog-gcs-idempotency-token`).
    func apply(
        to headers: inout HTTPHeaders, speaking wireProtocol: StorageEndpoint.WireProtocol?, call: Call? = nil
    ) {
        headers.set("User-Agent", userAgent)
        switch wireProtocol {
        case .firebaseV0:
            headers.set("X-Firebase-Storage-Version", firebaseStorageVersion)
        case .gcsJSON:
            guard let call else {
                headers.set("x-goog-api-client", apiClient)
                return
            }
            headers.set(
                "x-goog-api-client", "\(apiClient) gccl-invocation-id/\(call.id) gccl-attempt-count/\(call.attempt)")
            headers.set("x-goog-gcs-idempotency-token", call.id)
        case nil:
            headers.set("x-goog-api-client", apiClient)
        }
    }
}
