package import Foundation

/// What an OAuth 2 token endpoint's error answer says (RFC 6749 §5.2), or Google's JSON error
/// form, read the same way by the SDK's token fetches and its calls that meet one.
package enum OAuthErrorAnswer {
    /// `error` and `error_description` of an OAuth 2 error answer, or of Google's
    /// `{"error": {"message": …}}`.
    package static func fields(in body: Data) -> (code: String?, description: String?)? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return nil }
        if let nested = object["error"] as? [String: Any] {
            return (nested["status"] as? String, nested["message"] as? String)
        }
        let code = object["error"] as? String
        let description = object["error_description"] as? String ?? code
        return code == nil && description == nil ? nil : (code, description)
    }
}
