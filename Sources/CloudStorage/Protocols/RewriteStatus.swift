import Foundation

/// One answer of a rewrite (`storage#rewriteResponse`): how far the copy is, and either the
/// token that continues it or, when done, the new object's resource.
///
/// Read strictly, so that the copy loop can trust what it compares: every count present and
/// in range, a token whenever the copy goes on, a resource whenever it is done.
struct RewriteStatus: Sendable, Equatable {
    /// Bytes copied so far.
    var totalBytesRewritten: Int64
    /// The size of the object being copied.
    var objectSize: Int64
    /// What comes next.
    var next: Next

    enum Next: Sendable, Equatable {
        /// Call again with this token.
        case continueWith(token: String)
        /// The copy is complete; the destination's metadata.
        case done(StorageMetadata)
    }

    /// Reads an answer's body.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the body is not a rewrite answer:
    ///   not JSON, `done` missing, a count missing, negative or above the object's size, an
    ///   unfinished copy without a token, a finished one whose bytes are not all copied or
    ///   whose `resource` is missing, malformed, or of another size.
    init(json body: Data) throws(StorageError) {
        struct Answer: Decodable {
            var done: Bool
            var totalBytesRewritten: FlexibleInt64
            var objectSize: FlexibleInt64
            var rewriteToken: String?
            var resource: NestedObjectResource?
        }
        let answer: Answer
        do {
            answer = try JSONDecoder().decode(Answer.self, from: body)
        } catch {
            throw .protocolViolation(
                "The server's answer is not a rewrite status: it could not be decoded as one.", underlyingError: error)
        }
        let total = answer.totalBytesRewritten.value
        let size = answer.objectSize.value
        guard size >= 0, (0...size).contains(total) else {
            throw .protocolViolation(
                "The server's rewrite status is out of range: \(total) bytes copied of an object of \(size).")
        }
        totalBytesRewritten = total
        objectSize = size
        guard answer.done else {
            guard let token = answer.rewriteToken, !token.isEmpty else {
                throw .protocolViolation("The server's rewrite status says the copy goes on but gives no token.")
            }
            next = .continueWith(token: token)
            return
        }
        guard total == size else {
            throw .protocolViolation(
                "The server says the copy is done after copying \(total) bytes of an object of \(size).")
        }
        guard let metadata = answer.resource?.metadata else {
            throw .protocolViolation("The server says the copy is done but does not describe the new object.")
        }
        guard metadata.size == size else {
            throw .protocolViolation(
                "The server says it copied an object of \(size) bytes, but the copy has \(metadata.size).")
        }
        next = .done(metadata)
    }
}
