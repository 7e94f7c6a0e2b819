import Foundation

/// Who signs a V4 signed URL: a service account, with its private key at hand or through
/// the IAM Credentials API's `signBlob`.
///
/// The URL grants what that account may do, to whoever holds it, until it expires.
///
/// ```swift
/// // With the key from a service account's JSON key file:
/// let signer = try SignedURLSigner.privateKey(email: key.clientEmail, pem: key.privateKey)
/// // Without a key (on Cloud Run, GKE, Compute Engine): IAM signs with the account's
/// // Google-managed key; the Storage's token must belong to an account allowed to
/// // call signBlob for it (roles/iam.serviceAccountTokenCreator).
/// let remote = SignedURLSigner.iamSignBlob(email: "runtime@my-project.iam.gserviceaccount.com")
/// let url = try await ref.signedURL(expiresIn: .seconds(3600), signer: remote)
/// ```
public struct SignedURLSigner: Sendable {
    enum Kind: Sendable {
        case privateKey(RSASigningKey)
        /// IAM Credentials at `baseURL` (Google's, or an emulator in tests), called with
        /// `authorization`'s tokens, or the Storage's own when nil.
        case iamSignBlob(baseURL: URL, authorization: StorageAuthorization?)
    }

    /// The service account whose key signs, named in `X-Goog-Credential`.
    public let email: String
    let kind: Kind


    /// Signs with a service account's RSA private key, here, without any request.
    ///
    /// ```swift
    /// let signer = try SignedURLSigner.privateKey(
    ///     email: "uploader@my-project.iam.gserviceaccount.com",
    ///     pem: privateKeyPEM  // "-----BEGIN PRIVATE KEY-----\n…"
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - email: The service account's email (`client_email` in its key file).
    ///   - pem: Its private key in PEM (`private_key` in the key file): PKCS #8 or PKCS #1.
    /// - Returns: The signer.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when the email is empty or the key cannot be used.
    public static func privateKey(email: String, pem: String) throws(StorageError) -> SignedURLSigner {
        try validate(email: email)
        return SignedURLSigner(email: email, kind: .privateKey(try RSASigningKey(pem: pem)))
    }

    /// Signs through the IAM Credentials API (`projects/-/serviceAccounts/<email>:signBlob`),
    /// for when no private key is at hand, such as with the metadata server's account.
    ///
    /// The request goes out with the ``Storage``'s own access token (and its transport,
    /// retries and refresh after HTTP 401); the token's account needs permission to sign
    /// for `email` (itself included: `roles/iam.serviceAccountTokenCreator`).
    ///
    /// ```swift
    /// let signer = SignedURLSigner.iamSignBlob(email: "runtime@my-project.iam.gserviceaccount.com")
    /// let url = try await ref.signedURL(method: .get, expiresIn: .seconds(600), signer: signer)
    /// ```
    ///
    /// - Parameter email: The service account that signs.
    /// - Returns: The signer. An empty `email` fails when a URL is signed, with
    ///   ``StorageErrorCode/invalidArgument``.
    public static func iamSignBlob(email: String) -> SignedURLSigner {
        iamSignBlob(email: email, baseURL: Storage.defaultIAMCredentialsBaseURL)
    }

    /// ``iamSignBlob(email:)`` against another IAM Credentials server (an emulator).
    static func iamSignBlob(email: String, baseURL: URL) -> SignedURLSigner {
        SignedURLSigner(email: email, kind: .iamSignBlob(baseURL: baseURL, authorization: nil))
    }

    /// The RSA-SHA256 signature of `message` by the account.
    ///
    /// - Parameter storage: Whose token, transport and retry settings a `signBlob` call uses.
    func sign(_ message: [UInt8], for storage: Storage) async throws(StorageError) -> [UInt8] {
        try Self.validate(email: email)
        switch kind {
        case .privateKey(let key):
            return try key.sign(message)
        case .iamSignBlob(let baseURL, let authorization):
            return try await IAMSignBlob(baseURL: baseURL, email: email, authorization: authorization)
                .sign(message, for: storage)
        }
    }

    private static func validate(email: String) throws(StorageError) {
        guard !email.isEmpty, email.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "/") })
        else {
            throw .invalidArgument("The signing account's email \"\(email)\" is not an email address.")
        }
    }
}
