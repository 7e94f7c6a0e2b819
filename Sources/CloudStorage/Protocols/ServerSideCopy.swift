/// What one server-side copy (a rewrite) copies where: the same description goes with every
/// call of the rewrite, as the JSON API requires of calls that continue one with its token.
struct ServerSideCopy: Sendable, Equatable {
    var sourceBucket: String
    var sourceName: String
    /// The generation of the source to copy; nil for the live object.
    var sourceGeneration: Int64? = nil
    var destinationBucket: String
    var destinationName: String
    /// The metadata the copy gets instead of the source's; nil keeps the source's.
    var metadata: StorageMetadata?
    /// Conditions on the destination (the object the copy replaces, if any).
    var preconditions: StoragePreconditions = .none
    /// Conditions on the source.
    var sourcePreconditions: StoragePreconditions = .none
    /// The most bytes the server copies per call; nil lets it choose. For tests that need a
    /// rewrite of several calls from a server that would do it in one.
    var maxBytesRewrittenPerCall: Int64?
    /// The project billed: the source reference's, or else the destination's
    /// (``StorageRequestOptions/userProject``; one call, one project).
    var userProject: String?
    /// The key the source is encrypted with (its reference's ``StorageRequestOptions/encryptionKey``).
    var sourceEncryptionKey: StorageEncryptionKey?
    /// The key the copy is to be encrypted with (the destination reference's).
    var destinationEncryptionKey: StorageEncryptionKey?
    /// The Cloud KMS key of the copy (the destination reference's).
    var destinationKMSKeyName: String?
    /// The ACL of the copy (the destination reference's).
    var destinationPredefinedACL: StoragePredefinedACL?
}

/// One source of a compose: an object of the destination's bucket, live or at one generation.
struct ComposeSource: Sendable, Equatable {
    var name: String
    /// The generation composed (the source object's `generation`), which may be noncurrent; nil
    /// for the live object.
    var generation: Int64? = nil
}
