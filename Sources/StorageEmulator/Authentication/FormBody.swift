import Foundation

/// An `application/x-www-form-urlencoded` body (the token endpoint's requests), parsed strictly.
enum FormBody {
    /// The body's parameters.
    ///
    /// - Throws: ``OAuthRefusal`` (`invalid_request`) for a parameter without `=`, bad
    ///   percent-encoding, text that is not UTF-8, or a parameter given twice (RFC 6749 §3.2
    ///   forbids repeats, and a repeat would let two parts of a stack read different values).
    static func parse(_ body: Data) throws(OAuthRefusal) -> [String: String] {
        guard let text = String(data: body, encoding: .utf8) else {
            throw .invalidRequest("The request body is not UTF-8.")
        }
        var parameters: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else {
                throw .invalidRequest("Malformed form parameter (no '=').")
            }
            guard let name = decode(pair[..<equals]), let value = decode(pair[pair.index(after: equals)...]) else {
                throw .invalidRequest("Malformed percent-encoding in the form body.")
            }
            guard parameters[name] == nil else {
                throw .invalidRequest("Parameter '\(name)' is given more than once.")
            }
            parameters[name] = value
        }
        return parameters
    }

    private static func decode(_ text: Substring) -> String? {
        String(text.replacingOccurrences(of: "+", with: " ")).removingPercentEncoding
    }
}
