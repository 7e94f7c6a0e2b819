/// A refusal from the token endpoint, answered as OAuth 2.0 error JSON (RFC 6749 §5.2):
/// `{"error": "invalid_grant", "error_description": "…"}`.
struct OAuthRefusal: Error, Equatable {
    let status: Int
    let error: String
    let description: String

    /// The grant is wrong: bad signature, unknown account, expired, wrong audience, bad refresh token.
    static func invalidGrant(_ description: String) -> OAuthRefusal {
        OAuthRefusal(status: 400, error: "invalid_grant", description: description)
    }

    /// The request is malformed: missing or repeated parameters, wrong content type.
    static func invalidRequest(_ description: String) -> OAuthRefusal {
        OAuthRefusal(status: 400, error: "invalid_request", description: description)
    }

    /// The OAuth client is unknown or its secret is wrong (401, as Google answers).
    static func invalidClient(_ description: String) -> OAuthRefusal {
        OAuthRefusal(status: 401, error: "invalid_client", description: description)
    }

    /// The JWT asks for no scope.
    static func invalidScope(_ description: String) -> OAuthRefusal {
        OAuthRefusal(status: 400, error: "invalid_scope", description: description)
    }

    /// A grant type the endpoint does not implement.
    static func unsupportedGrantType(_ description: String) -> OAuthRefusal {
        OAuthRefusal(status: 400, error: "unsupported_grant_type", description: description)
    }

    /// The answer.
    var reply: Reply {
        var reply = Reply.json(status, ["error": error, "error_description": description])
        reply.headers.set("Cache-Control", "no-store")
        return reply
    }
}
