import Foundation

/// What a directory-backed emulator records about a resumable upload session when it
/// starts (see ``SessionJournal``): everything but the bytes and how many there are.
///
/// Written once and never updated, so there is no moment at which it disagrees with the
/// staging file: the committed offset and the checksums are derived from the file alone.
struct PersistedSession: Codable, Sendable {
    /// The format; a record of another version is ignored. (Version 1 did not record ``access``.)
    static let currentVersion = 2

    var version = currentVersion
    var id: String
    var bucket: String
    var name: String
    var attributes: ObjectAttributes
    var expected: ExpectedHashes
    var declaredSize: Int64?
    var preconditions: ObjectPreconditions
    /// What each request to the session needs (see ``UploadSession/Access``).
    var access: UploadSession.Access
    /// Whether the session hashes MD5 (the store's choice when it started).
    var computesMD5: Bool
    /// When the session started: it expires a lifetime after that, restarts or not.
    var created: Date
}
