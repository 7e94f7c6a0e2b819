public import Foundation

/// Where a ``Storage`` sends its requests, and which wire protocol it speaks there.
///
/// ```swift
/// let production = Storage(bucket: "my-bucket")  // .googleCloudStorage
/// let emulator = Storage(
///     bucket: "my-bucket",
///     endpoint: .gcs(URL(string: "http://127.0.0.1:4443")!)
/// )
/// ```
public struct StorageEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The wire protocols the SDK speaks.
    enum WireProtocol: Hashable, Sendable {
        /// The Google Cloud Storage JSON API (`/storage/v1`, `/upload/storage/v1`).
        case gcsJSON
    }

    /// The base URL: scheme, host, port and an optional path prefix.
    public let baseURL: URL
    let wireProtocol: WireProtocol

    /// The Google Cloud Storage JSON API at `baseURL`: the real service, an
    /// emulator such as fake-gcs-server, or a gateway.
    ///
    /// - Parameter baseURL: The scheme, host and port (and an optional path
    ///   prefix) under which `/storage/v1` and `/upload/storage/v1` are served.
    /// - Returns: The endpoint.
    public static func gcs(_ baseURL: URL) -> StorageEndpoint {
        StorageEndpoint(baseURL: baseURL, wireProtocol: .gcsJSON)
    }

    /// Google Cloud Storage itself, `https://storage.googleapis.com`.
    public static let googleCloudStorage = StorageEndpoint.gcs(URL(string: "https://storage.googleapis.com")!)

    /// The base URL.
    public var description: String { baseURL.absoluteString }
}
