public import Foundation

/// Where a ``Storage`` sends its requests, and which wire protocol it speaks there.
///
/// Google Cloud Storage's JSON API (``gcs(_:)``) and Cloud Storage for
/// Firebase's v0 API (``firebase(_:)``) store objects in the same buckets;
/// they differ in URLs, headers and credentials. The endpoint chooses the
/// protocol; everything else about an upload is the same.
///
/// ```swift
/// let production = Storage(bucket: "my-bucket")  // .googleCloudStorage
/// let firebase = Storage(bucket: "my-app.appspot.com", endpoint: .firebaseStorage)
/// let emulator = Storage(
///     bucket: "my-bucket",
///     endpoint: .gcs(URL(string: "http://127.0.0.1:4443")!)
/// )
/// ```
public struct StorageEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The wire protocols the SDK speaks.
    package enum WireProtocol: Hashable, Sendable {
        /// The Google Cloud Storage JSON API (`/storage/v1`, `/upload/storage/v1`).
        case gcsJSON
        /// The Firebase Storage v0 API (`/v0/b/{bucket}/o`).
        case firebaseV0

        /// The scheme of the `Authorization` header that carries a token, for
        /// every request to the service: `Bearer` for the JSON API (OAuth 2
        /// access tokens), `Firebase` for v0 (Firebase ID tokens).
        package var credentialScheme: String {
            switch self {
            case .gcsJSON: "Bearer"
            case .firebaseV0: "Firebase"
            }
        }
    }

    /// The base URL: scheme, host, port and an optional path prefix.
    public let baseURL: URL
    package let wireProtocol: WireProtocol

    /// The Google Cloud Storage JSON API at `baseURL`: the real service, an
    /// emulator such as fake-gcs-server, or a gateway.
    ///
    /// Credentials are sent as `Authorization: Bearer <token>`.
    ///
    /// ```swift
    /// let endpoint = StorageEndpoint.gcs(URL(string: "http://127.0.0.1:4443")!)
    /// let storage = Storage(bucket: "my-bucket", endpoint: endpoint)
    /// ```
    ///
    /// - Parameter baseURL: The scheme, host and port (and an optional path
    ///   prefix) under which `/storage/v1` and `/upload/storage/v1` are served.
    /// - Returns: The endpoint.
    public static func gcs(_ baseURL: URL) -> StorageEndpoint {
        StorageEndpoint(baseURL: baseURL, wireProtocol: .gcsJSON)
    }

    /// The Firebase Storage v0 API at `baseURL`: Cloud Storage for Firebase,
    /// or the Firebase emulator.
    ///
    /// This is the API the Firebase client SDKs use; requests pass the
    /// project's Firebase Security Rules. Credentials are Firebase ID tokens,
    /// sent as `Authorization: Firebase <token>`.
    ///
    /// ```swift
    /// let endpoint = StorageEndpoint.firebase(URL(string: "http://127.0.0.1:9199")!)
    /// let storage = Storage(bucket: "my-app.appspot.com", endpoint: endpoint, authorization: .emulatorOwner)
    /// ```
    ///
    /// - Parameter baseURL: The scheme, host and port (and an optional path
    ///   prefix) under which `/v0/b/…` is served.
    /// - Returns: The endpoint.
    public static func firebase(_ baseURL: URL) -> StorageEndpoint {
        StorageEndpoint(baseURL: baseURL, wireProtocol: .firebaseV0)
    }

    /// Google Cloud Storage itself, `https://storage.googleapis.com`.
    public static let googleCloudStorage = StorageEndpoint.gcs(URL(string: "https://storage.googleapis.com")!)

    /// Cloud Storage for Firebase itself, `https://firebasestorage.googleapis.com`.
    public static let firebaseStorage = StorageEndpoint.firebase(URL(string: "https://firebasestorage.googleapis.com")!)

    /// The base URL.
    public var description: String { baseURL.absoluteString }
}
