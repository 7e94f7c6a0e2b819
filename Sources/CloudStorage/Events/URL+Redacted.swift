import Foundation

extension URL {
    /// Query parameters whose values are shown in events: names, modes and numbers the SDK
    /// sends itself, none of them a capability or a secret.
    static let harmlessQueryNames: Set<String> = [
        "alt", "uploadType", "name", "prefix", "delimiter", "generation", "sourceGeneration",
        "ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch", "ifMetagenerationNotMatch",
        "ifSourceGenerationMatch", "ifSourceGenerationNotMatch", "ifSourceMetagenerationMatch",
        "ifSourceMetagenerationNotMatch", "maxResults", "projection", "fields", "versions", "matchGlob",
        "startOffset", "endOffset", "includeTrailingDelimiter", "includeFoldersAsPrefixes", "softDeleted",
        "upload_protocol", "predefinedAcl", "destinationPredefinedAcl", "maxBytesRewrittenPerCall",
    ]

    /// The URL as events show it: scheme, host, port and path, and of the query only the
    /// values of ``harmlessQueryNames``; every other value (an `upload_id`, a signature, a
    /// download token, a page or rewrite token) is `REDACTED`. No user or password.
    var redactedForEvents: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
            return "(a URL)"
        }
        components.user = nil
        components.password = nil
        components.fragment = nil
        components.percentEncodedQueryItems = components.percentEncodedQueryItems?.map { item in
            Self.harmlessQueryNames.contains(item.name) || item.value == nil
                ? item : URLQueryItem(name: item.name, value: "REDACTED")
        }
        return components.string ?? "(a URL)"
    }
}
