/// What a credential can sign with (V4 signed URLs): a service account key signs here; on
/// the metadata server there is no key, so the account's email comes from the server and
/// signing goes through IAM `signBlob`, authorized by the credential's own access token.
enum SigningIdentity: Sendable {
    /// A service account key: its `client_email` and private key.
    case serviceAccountKey(email: String, key: RSASigningKey)
    /// The metadata server's default service account, and the credential (asking for the
    /// cloud-platform scope) whose tokens authorize its `signBlob` calls.
    case metadataServer(MetadataServer, signBlobAuthorization: StorageAuthorization)
}

extension StorageAuthorization {
    /// What this authorization can sign with, finding Application Default Credentials first
    /// if need be.
    ///
    /// - Parameter context: The transport (and retry time) for finding credentials.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for authorizations that cannot sign
    ///   (tokens, `authorized_user` credentials, none); what finding the credential throws.
    func signingIdentity(context: TokenRequestContext) async throws(StorageError) -> SigningIdentity {
        guard let credential = oauthCredential else {
            throw .invalidArgument(Self.cannotSign("\(self)"))
        }
        switch try await credential.source(context: context) {
        case .serviceAccount(let key):
            return .serviceAccountKey(email: key.clientEmail, key: key.signingKey)
        case .metadataServer(let server):
            let signBlobAuthorization = StorageAuthorization(kind: .credential(credential.withCloudPlatformScope()))
            return .metadataServer(server, signBlobAuthorization: signBlobAuthorization)
        case .authorizedUser:
            throw .invalidArgument(Self.cannotSign("authorized_user credentials"))
        }
    }

    private static func cannotSign(_ what: String) -> String {
        "Signing a URL needs a service account (a key file or the metadata server); \(what) cannot sign. Pass a signer."
    }
}
