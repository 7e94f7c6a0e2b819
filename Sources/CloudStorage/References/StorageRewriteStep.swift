/// How far one call of a server-side copy got
/// (``StorageReference/rewrite(to:metadata:preconditions:sourcePreconditions:rewriteToken:maxBytesRewrittenPerCall:)``):
/// the token that continues it, or the copy's metadata once it is done.
public struct StorageRewriteStep: Sendable, Equatable {
    /// The bytes copied so far, by this call and the ones before it.
    public var bytesRewritten: Int64
    /// The size of the object being copied.
    public var objectSize: Int64
    /// The token the next call continues from; nil once the copy is done. Opaque: store it as
    /// it is, and send it with the same destination, metadata and conditions.
    public var rewriteToken: String?
    /// The copy's metadata once it is done; nil before.
    public var metadata: StorageMetadata?

    /// Whether the copy is complete (``metadata`` describes it).
    public var isDone: Bool { metadata != nil }
}
