/// The HTTP method a V4 signed URL is good for: the signature covers it, so a URL signed
/// for `GET` cannot be used to `PUT`.
///
/// ```swift
/// let uploadURL = try await ref.signedURL(method: .put, expiresIn: .seconds(900))
/// ```
public enum SignedURLMethod: String, Sendable, Hashable, CaseIterable {
    /// Downloads the object (or, for the bucket's root reference, lists the bucket).
    case get = "GET"
    /// Uploads the request body as the object, replacing any object of that name.
    case put = "PUT"
    /// Starts a resumable upload: the request carries `x-goog-resumable: start` and the
    /// answer's `Location` is the session to send the bytes to.
    case post = "POST"
    /// Deletes the object.
    case delete = "DELETE"
}
