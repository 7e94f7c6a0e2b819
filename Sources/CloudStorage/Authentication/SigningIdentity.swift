/// What a credential can sign with (V4 signed URLs): a service account key signs here; on
/// the metadata server there is no key, so the account's email comes from the server and
/// signing goes through IAM `signBlob`, authorized by the credential's own access token.
enum SigningIdentity: Sendable {
    /// A service account key: its `client_email` and private key.
    case serviceAccountKey(email: String, key: RSASigningKey)
    /// The metadata server's default service account.
    case metadataServer(MetadataServer, credential: OAuthCredential)

    /// The signing account's email: the key file's, or what the metadata server says.
    func email(context: TokenRequestContext) async throws(StorageError) -> String {
        switch self {
        case .serviceAccountKey(let email, _): email
        case .metadataServer(let server, _): try await server.serviceAccountEmail(context: context)
        }
    }

    /// An access token of the signing account, to authorize an IAM `signBlob` call (from the
    /// credential's shared cache).
    func accessToken(context: TokenRequestContext) async throws(StorageError) -> String {
        switch self {
        case .serviceAccountKey:
            throw .internalError("A service account key signs locally; it needs no signBlob token.")
        case .metadataServer(_, let credential):
            try await credential.token(context: context).value
        }
    }
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
            throw .invalidArgument(
                "Signing needs a service account: a key file or the metadata server (\(self) cannot sign).")
        }
        switch try await credential.source(context: context) {
        case .serviceAccount(let key):
            return .serviceAccountKey(email: key.clientEmail, key: key.signingKey)
        case .metadataServer(let server):
            return .metadataServer(server, credential: credential)
        case .authorizedUser:
            throw .invalidArgument(
                "Signing needs a service account: a key file or the metadata server (authorized_user credentials cannot sign)."
            )
        }
    }
}
