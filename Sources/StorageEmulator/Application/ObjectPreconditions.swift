/// The JSON API's object preconditions — `ifGenerationMatch`,
/// `ifGenerationNotMatch`, `ifMetagenerationMatch`, `ifMetagenerationNotMatch` —
/// as Cloud Storage checks them.
///
/// A generation condition of 0 speaks of existence: `ifGenerationMatch=0`
/// holds only when no object exists, `ifGenerationNotMatch=0` only when one
/// does. Every other condition needs a live object to hold. A failed condition
/// is `412 Precondition Failed` (reason `conditionNotMet`), except a failed
/// "not match" on a read (`GET`, `HEAD`), which Cloud Storage answers
/// `304 Not Modified`.
struct ObjectPreconditions: Equatable, Codable {
    var ifGenerationMatch: Int64?
    var ifGenerationNotMatch: Int64?
    var ifMetagenerationMatch: Int64?
    var ifMetagenerationNotMatch: Int64?

    /// The conditions a request's query carries.
    ///
    /// - Parameter source: Read the conditions on a copy's or move's source instead
    ///   (`ifSourceGenerationMatch` and friends).
    /// - Throws: ``HTTPError`` (400) naming the parameter when one is not a non-negative number.
    init(_ request: any ServerRequest, source: Bool = false) throws {
        let prefix = source ? "ifSource" : "if"
        func number(_ condition: String) throws -> Int64? {
            let name = prefix + condition
            return try request.query(name).map { try RequestNumber.nonNegative($0, field: name) }
        }
        ifGenerationMatch = try number("GenerationMatch")
        ifGenerationNotMatch = try number("GenerationNotMatch")
        ifMetagenerationMatch = try number("MetagenerationMatch")
        ifMetagenerationNotMatch = try number("MetagenerationNotMatch")
    }

    init() {}

    var isEmpty: Bool { self == ObjectPreconditions() }

    /// Whether a write's conditions hold for `current` (nil when no object exists): what a
    /// store asks, under its lock, as it replaces or deletes the object.
    func holds(_ current: ObjectRecord?) -> Bool {
        (try? check(current)) != nil
    }

    /// Checks the conditions against the object as it is now (nil when none exists).
    ///
    /// - Parameter read: Whether the request only reads, so a failed "not match" is a 304.
    /// - Throws: ``HTTPError`` 412, or 304 for a read's failed "not match".
    func check(_ current: ObjectRecord?, read: Bool = false) throws {
        let failed = HTTPError(412, "At least one of the pre-conditions you specified did not hold.")
        if let ifGenerationMatch, (current?.generation ?? 0) != ifGenerationMatch { throw failed }
        if let ifMetagenerationMatch, current?.metageneration != ifMetagenerationMatch { throw failed }
        let notModified = read ? HTTPError(304, "Not Modified") : failed
        if let ifGenerationNotMatch {
            guard let current else { throw failed }
            if ifGenerationNotMatch != 0 && current.generation == ifGenerationNotMatch { throw notModified }
        }
        if let ifMetagenerationNotMatch {
            guard let current else { throw failed }
            if current.metageneration == ifMetagenerationNotMatch { throw notModified }
        }
    }
}
