extension Storage {
    /// The signer the Storage's own authorization provides, for
    /// ``StorageReference/signedURL(method:expiresIn:headers:queryParameters:style:signer:)``
    /// called without one: a service account key signs here; the metadata server's account
    /// signs through IAM `signBlob`, with a token of that same account asking for the
    /// cloud-platform scope, which IAM requires (the Storage's own tokens have storage scopes).
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` for an authorization that cannot sign
    ///   (tokens, a gcloud user login, none); what finding Application Default Credentials throws.
    func defaultURLSigner() async throws(StorageError) -> SignedURLSigner {
        let context = TokenRequestContext(storage: self, operation: .other)
        switch try await authorization.signingIdentity(context: context) {
        case .serviceAccountKey(let email, let key):
            return SignedURLSigner(email: email, kind: .privateKey(key))
        case .metadataServer(let server, let signBlobAuthorization):
            let email = try await server.serviceAccountEmail(context: context)
            return SignedURLSigner(
                email: email,
                kind: .iamSignBlob(baseURL: iamCredentialsBaseURL, authorization: signBlobAuthorization))
        }
    }
}
