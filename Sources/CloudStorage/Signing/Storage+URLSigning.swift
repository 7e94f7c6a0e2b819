import Foundation

extension Storage {
    /// The signer the Storage's own authorization provides, for ``StorageReference/signedURL(method:expiresIn:headers:queryParameters:style:signer:)``
    /// called without one: a service account key signs here; the metadata server's account
    /// signs through IAM `signBlob` with the Storage's own token.
    ///
    /// - Parameter iamBaseURL: Where IAM Credentials is (an emulator in tests).
    /// - Throws: ``StorageErrorCode/invalidArgument`` for authorizations that cannot sign
    ///   (tokens, users' credentials, none); what finding the credential throws.
    func defaultURLSigner(
        iamBaseURL: URL = SignedURLSigner.defaultIAMBaseURL
    ) async throws(StorageError) -> SignedURLSigner {
        guard authorization.oauthCredential != nil else {
            throw .invalidArgument("This authorization cannot sign URLs; pass a signer.")
        }
        let context = TokenRequestContext(storage: self, operation: .other)
        let identity = try await authorization.signingIdentity(context: context)
        switch identity {
        case .serviceAccountKey(let email, let key):
            return SignedURLSigner(email: email, kind: .privateKey(key))
        case .metadataServer:
            return .iamSignBlob(email: try await identity.email(context: context), baseURL: iamBaseURL)
        }
    }
}
