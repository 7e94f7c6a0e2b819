/// The limits Cloud Storage's wire protocols set, written once for both sides: the SDK obeys
/// them and the emulator enforces them.
///
/// Sources: the JSON API's resumable uploads ("Perform resumable uploads": every request but the
/// last carries a multiple of 256 KiB), Firebase Storage v0 (`X-Goog-Upload-Chunk-Granularity`),
/// `objects.compose` (at most 32 source objects per request) and `objects.rewrite`
/// (`maxBytesRewrittenPerCall` is a multiple of 1 MiB).
package enum ProtocolLimits {
    /// The unit of a resumable upload: every request but the last carries a multiple of it,
    /// 256 KiB, on both the JSON API and Firebase Storage v0.
    package static let chunkGranularity: Int64 = 256 * 1024

    /// ``chunkGranularity`` as messages name it: `256 KiB (262144 bytes)`.
    package static let chunkGranularityText = "256 KiB (\(chunkGranularity) bytes)"

    /// Whether `size` may bound every request of a resumable upload but the last: a positive
    /// multiple of ``chunkGranularity``.
    package static func isChunkSize(_ size: Int64) -> Bool {
        size > 0 && size % chunkGranularity == 0
    }

    /// The largest chunk size (``isChunkSize(_:)``) not above `limit`, and never less than one
    /// granule.
    package static func chunkSize(atMost limit: Int64) -> Int64 {
        max(chunkGranularity, limit / chunkGranularity * chunkGranularity)
    }

    /// The most source objects one compose request takes.
    package static let maximumComposeSources = 32

    /// The most entries one page of an object listing holds (`maxResults`).
    package static let maximumListResults = 1000

    /// The unit of a rewrite call: `maxBytesRewrittenPerCall` is a positive multiple of it, 1 MiB.
    package static let rewriteGranularity: Int64 = 1024 * 1024

    /// Whether `limit` may be a rewrite call's `maxBytesRewrittenPerCall`: a positive multiple of
    /// ``rewriteGranularity``.
    package static func isRewriteLimit(_ limit: Int64) -> Bool {
        limit > 0 && limit % rewriteGranularity == 0
    }
}
