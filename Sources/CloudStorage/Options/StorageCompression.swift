/// How an upload compresses its bytes on the way to the server.
///
/// An opaque value with static members, so that codings can be added later.
public struct StorageCompression: Sendable, Hashable, CustomStringConvertible {
    private let coding: String

    /// gzip (RFC 1952): the object is stored compressed, with `Content-Encoding: gzip`, as
    /// `gcloud storage cp -Z` stores it. Downloads give the original bytes back
    /// (``StorageConfiguration/decompressesDownloads``), and so does Cloud Storage to clients
    /// that do not ask for gzip (decompressive transcoding).
    public static let gzip = StorageCompression(coding: "gzip")

    /// The `Content-Encoding` the object is stored with, such as `gzip`.
    public var description: String { coding }
}
