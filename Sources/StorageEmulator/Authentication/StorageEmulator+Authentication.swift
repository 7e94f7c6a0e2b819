extension StorageEmulator {
    /// Google's authentication servers, emulated on the emulator's own port: the OAuth 2.0
    /// token endpoint (`POST /token`), the Compute Engine metadata server
    /// (`/computeMetadata/v1/…`) and IAM `signBlob`, plus, on request, storage requests that
    /// need an access token the emulator issued.
    ///
    /// The token endpoint verifies a service account's signed JWT (RS256, with the account's
    /// public key; `iss`, `aud`, `scope`, `iat`, `exp` as Google checks them) or an authorized
    /// user's refresh token, and issues opaque, random access tokens that live
    /// ``tokenLifetime``. Point a key file's `token_uri` at `<baseURL>/token` and
    /// `GCE_METADATA_HOST` at `127.0.0.1:<port>`.
    ///
    /// ```swift
    /// var configuration = StorageEmulator.Configuration()
    /// configuration.authentication = .init(
    ///     serviceAccounts: [.init(email: "uploader@demo.iam.gserviceaccount.com", publicKeyPEM: certificatePEM)],
    ///     metadataServerAccount: .init(email: "vm@demo.iam.gserviceaccount.com", projectID: "demo"),
    ///     requiresToken: true)
    /// let emulator = try StorageEmulator.start(configuration)
    /// // token_uri: \(emulator.baseURL)/token   GCE_METADATA_HOST=127.0.0.1:\(emulator.port)
    /// ```
    public struct Authentication: Sendable {
        /// A service account whose signed JWTs the token endpoint accepts.
        ///
        /// ```swift
        /// let account = StorageEmulator.Authentication.ServiceAccount(
        ///     email: "uploader@demo.iam.gserviceaccount.com", publicKeyPEM: publicKeyPEM, privateKeyPEM: privateKeyPEM)
        /// ```
        public struct ServiceAccount: Sendable {
            /// The account's `client_email`: the `iss` of its JWTs.
            public var email: String
            /// PEM text of the key that verifies its JWTs: a `PUBLIC KEY` block, or a
            /// `CERTIFICATE` (as Google publishes account keys). RSA, at least 2048 bits.
            public var publicKeyPEM: String
            /// PEM text of the matching private key (PKCS #8 or PKCS #1, unencrypted), with
            /// which IAM `signBlob` signs for the account; without it `signBlob` is refused.
            public var privateKeyPEM: String?
            /// The key's id (a key file's `private_key_id`): `signBlob` answers it as `keyId`,
            /// and a JWT whose header names another `kid` is refused. When nil, the first 40 hex
            /// digits of the SHA-256 of the public key PEM are used and any `kid` is accepted.
            public var keyID: String?

            /// An account known by its public key (or certificate).
            ///
            /// - Parameters:
            ///   - email: The account's `client_email`.
            ///   - publicKeyPEM: A `PUBLIC KEY` or `CERTIFICATE` PEM block.
            ///   - privateKeyPEM: The private key, for `signBlob`.
            ///   - keyID: The key's `private_key_id`.
            public init(email: String, publicKeyPEM: String, privateKeyPEM: String? = nil, keyID: String? = nil) {
                self.email = email
                self.publicKeyPEM = publicKeyPEM
                self.privateKeyPEM = privateKeyPEM
                self.keyID = keyID
            }

            /// An account known by its private key (as in its key file), which both verifies
            /// its JWTs and signs for `signBlob`.
            ///
            /// ```swift
            /// let account = StorageEmulator.Authentication.ServiceAccount(
            ///     email: keyFile.clientEmail, privateKeyPEM: keyFile.privateKey, keyID: keyFile.privateKeyID)
            /// ```
            ///
            /// - Parameters:
            ///   - email: The account's `client_email`.
            ///   - privateKeyPEM: The account's private key.
            ///   - keyID: The key's `private_key_id`.
            public init(email: String, privateKeyPEM: String, keyID: String? = nil) {
                self.init(email: email, publicKeyPEM: privateKeyPEM, privateKeyPEM: privateKeyPEM, keyID: keyID)
            }
        }

        /// A user credential (gcloud's `authorized_user`) whose refresh token the token endpoint exchanges.
        ///
        /// ```swift
        /// let user = StorageEmulator.Authentication.AuthorizedUser(
        ///     clientID: "client.apps.googleusercontent.com", clientSecret: "secret", refreshToken: "1//refresh")
        /// ```
        public struct AuthorizedUser: Sendable {
            /// The OAuth client's id.
            public var clientID: String
            /// The OAuth client's secret.
            public var clientSecret: String
            /// The user's refresh token.
            public var refreshToken: String

            /// Creates a user credential.
            ///
            /// - Parameters:
            ///   - clientID: The OAuth client's id.
            ///   - clientSecret: The OAuth client's secret.
            ///   - refreshToken: The user's refresh token.
            public init(clientID: String, clientSecret: String, refreshToken: String) {
                self.clientID = clientID
                self.clientSecret = clientSecret
                self.refreshToken = refreshToken
            }
        }

        /// The identity the metadata server speaks for (a Compute Engine VM's default service account).
        ///
        /// ```swift
        /// let vm = StorageEmulator.Authentication.MetadataServerAccount(
        ///     email: "123-compute@developer.gserviceaccount.com", projectID: "demo")
        /// ```
        public struct MetadataServerAccount: Sendable {
            /// The default service account's email (`…/service-accounts/default/email`). When it is
            /// also one of ``Authentication/serviceAccounts`` with a private key, its tokens can
            /// `signBlob`.
            public var email: String
            /// The project id (`/computeMetadata/v1/project/project-id`).
            public var projectID: String

            /// Creates the metadata server's identity.
            ///
            /// - Parameters:
            ///   - email: The default service account's email.
            ///   - projectID: The project id.
            public init(email: String, projectID: String) {
                self.email = email
                self.projectID = projectID
            }
        }

        /// The service accounts whose JWTs `POST /token` accepts (and for which `signBlob` signs).
        public var serviceAccounts: [ServiceAccount]
        /// The user credentials whose refresh tokens `POST /token` accepts.
        public var authorizedUsers: [AuthorizedUser]
        /// The metadata server's identity; nil serves no metadata server (its paths answer `404`).
        public var metadataServerAccount: MetadataServerAccount?
        /// How long an issued access token lives (at least one second): `expires_in` in the answer.
        public var tokenLifetime: Duration
        /// When true, every storage request (GCS JSON API and Firebase v0, each request of a
        /// resumable upload included) needs `Authorization: Bearer <token>` with a live token the
        /// emulator issued; others get `401`. ``Configuration/requiredToken`` (and `owner` when
        /// accepted) keeps opening it as well. Firebase download tokens still open their object.
        public var requiresToken: Bool

        /// Creates an authentication setup.
        ///
        /// ```swift
        /// let authentication = StorageEmulator.Authentication(
        ///     authorizedUsers: [.init(clientID: "id", clientSecret: "secret", refreshToken: "refresh")],
        ///     tokenLifetime: .seconds(600), requiresToken: true)
        /// ```
        ///
        /// - Parameters:
        ///   - serviceAccounts: Accounts whose JWTs are accepted.
        ///   - authorizedUsers: User credentials whose refresh tokens are accepted.
        ///   - metadataServerAccount: The metadata server's identity, or nil for none.
        ///   - tokenLifetime: How long issued tokens live; one hour, as Google's, by default.
        ///   - requiresToken: Whether storage requests need an issued token.
        public init(
            serviceAccounts: [ServiceAccount] = [], authorizedUsers: [AuthorizedUser] = [],
            metadataServerAccount: MetadataServerAccount? = nil, tokenLifetime: Duration = .seconds(3600),
            requiresToken: Bool = false
        ) {
            self.serviceAccounts = serviceAccounts
            self.authorizedUsers = authorizedUsers
            self.metadataServerAccount = metadataServerAccount
            self.tokenLifetime = tokenLifetime
            self.requiresToken = requiresToken
        }
    }

    /// Makes every access token issued so far invalid at once, as if each had just expired:
    /// the next storage request that presents one gets `401`. Tokens issued afterwards work.
    ///
    /// The deterministic way for a test to see a token expire in the middle of an upload:
    ///
    /// ```swift
    /// // … after the first chunk of an upload was accepted:
    /// emulator.expireAllTokens()
    /// // the next chunk with the old token gets 401; the client fetches a new token and goes on.
    /// ```
    public func expireAllTokens() {
        application.settings.authentication?.tokens.expireAll()
    }

    /// How many access tokens the token endpoint and the metadata server have issued.
    ///
    /// ```swift
    /// // 1,000 concurrent uploads through one credential should share one exchange:
    /// #expect(emulator.tokenGrantCount == 1)
    /// ```
    public var tokenGrantCount: Int {
        application.settings.authentication?.tokens.grantCount ?? 0
    }
}
