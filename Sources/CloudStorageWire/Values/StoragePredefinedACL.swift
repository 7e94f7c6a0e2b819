/// An access control list Cloud Storage gives a new object instead of the bucket's default one
/// (the JSON API's `predefinedAcl` on uploads, `destinationPredefinedAcl` on copies and composes).
///
/// Buckets with uniform bucket-level access refuse them.
///
/// ```swift
/// let publicRef = ref.with(.init(predefinedACL: .publicRead))
/// _ = try await publicRef.putDataAsync(data)
/// ```
public struct StoragePredefinedACL: Sendable, Hashable, CustomStringConvertible {
    /// The JSON API's name, such as `publicRead`.
    public let rawValue: String

    /// An ACL by its JSON API name, for values this type does not name yet.
    ///
    /// - Parameter rawValue: Such as `bucketOwnerRead`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The JSON API's name.
    public var description: String { rawValue }

    /// The owner, and all authenticated users for reading.
    public static let authenticatedRead = Self(rawValue: "authenticatedRead")
    /// The owner, and the bucket's owners in full.
    public static let bucketOwnerFullControl = Self(rawValue: "bucketOwnerFullControl")
    /// The owner, and the bucket's owners for reading.
    public static let bucketOwnerRead = Self(rawValue: "bucketOwnerRead")
    /// The owner only.
    public static let `private` = Self(rawValue: "private")
    /// The owner, and the project's team by role.
    public static let projectPrivate = Self(rawValue: "projectPrivate")
    /// The owner, and everyone for reading.
    public static let publicRead = Self(rawValue: "publicRead")
}
