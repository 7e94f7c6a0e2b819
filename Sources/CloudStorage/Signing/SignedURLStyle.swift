public import Foundation

/// Where a V4 signed URL points: which host serves it and how the bucket appears in it.
///
/// ```swift
/// let pathStyle = try await ref.signedURL(expiresIn: .seconds(600))
/// // https://storage.googleapis.com/my-bucket/images/space.jpg?X-Goog-Algorithm=…
/// let virtualHosted = try await ref.signedURL(expiresIn: .seconds(600), style: .virtualHosted)
/// // https://my-bucket.storage.googleapis.com/images/space.jpg?X-Goog-Algorithm=…
/// ```
public enum SignedURLStyle: Sendable, Hashable {
    /// The bucket is the first path segment: `https://storage.googleapis.com/<bucket>/<object>`,
    /// or the same path under an emulator's or gateway's base URL.
    case pathStyle
    /// The bucket is part of the host name: `https://<bucket>.storage.googleapis.com/<object>`.
    /// An endpoint whose host is an IP address cannot be addressed this way.
    case virtualHosted
    /// A host name of the caller's own that maps to the bucket (a CNAME or a load balancer):
    /// `https://cdn.example.com/<object>`.
    ///
    /// - Parameter baseURL: The scheme (`http` or `https`) and host, such as
    ///   `https://cdn.example.com`.
    case bucketBoundHostname(URL)
}
