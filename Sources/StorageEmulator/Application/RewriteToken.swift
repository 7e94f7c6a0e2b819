import Foundation

/// The state of a rewrite that takes more than one call, handed to the client as an opaque
/// `rewriteToken` and back with the next call.
///
/// The token carries what the rewrite is bound to (source and destination, the source's
/// generation) and how many bytes are done, signed with HMAC-SHA256 under a key made when
/// the process starts: a token that was altered, or made by another process, fails the
/// signature; one sent with another source or destination, or after the source changed,
/// does not match the call. Nothing is kept on the server between calls, so a token costs
/// nothing when a client abandons its rewrite: the bytes are copied by the call that finishes.
struct RewriteToken: Codable, Equatable {
    var sourceBucket: String
    var sourceName: String
    var sourceGeneration: Int64
    var destinationBucket: String
    var destinationName: String
    var bytesRewritten: Int64

    /// The signing key, random for each process.
    private static let key: [UInt8] = (0..<32).map { _ in UInt8.random(in: .min ... .max) }

    /// The token text: the payload and its signature, both base64url, joined by a dot.
    func encoded() -> String {
        let payload = Array((try? JSONEncoder().encode(self)) ?? Data())
        return Base64URL.encode(payload) + "." + Base64URL.encode(Self.signature(payload))
    }

    /// The token a client sent back, if it is one this process made and nobody changed.
    init?(decoding text: String) {
        let halves = text.split(separator: ".", omittingEmptySubsequences: false)
        guard halves.count == 2, let payload = Base64URL.decode(halves[0]),
            let signature = Base64URL.decode(halves[1]),
            Self.constantTimeEqual(signature, Self.signature(payload)),
            let token = try? JSONDecoder().decode(RewriteToken.self, from: Data(payload))
        else { return nil }
        self = token
    }

    init(
        sourceBucket: String, sourceName: String, sourceGeneration: Int64, destinationBucket: String,
        destinationName: String, bytesRewritten: Int64
    ) {
        self.sourceBucket = sourceBucket
        self.sourceName = sourceName
        self.sourceGeneration = sourceGeneration
        self.destinationBucket = destinationBucket
        self.destinationName = destinationName
        self.bytesRewritten = bytesRewritten
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under the process's key.
    private static func signature(_ message: [UInt8]) -> [UInt8] {
        func sha256(_ parts: [UInt8]...) -> [UInt8] {
            var hash = SHA256Stream()
            for part in parts { part.withUnsafeBytes { hash.update($0) } }
            return hash.digest()
        }
        let block = key + [UInt8](repeating: 0, count: 64 - key.count)
        let inner = sha256(block.map { $0 ^ 0x36 }, message)
        return sha256(block.map { $0 ^ 0x5C }, inner)
    }

    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
