public import Foundation

extension StorageAuthorization {
    /// Read-write access to Cloud Storage (`https://www.googleapis.com/auth/devstorage.read_write`),
    /// the scope every credential asks for unless told otherwise.
    public static let defaultScopes: [String] = OAuthCredential.defaultScopes

    /// Google's Application Default Credentials with the default scopes: the credentials
    /// the environment provides, found on first use.
    ///
    /// Looked for in Google's documented order:
    /// 1. the JSON file `GOOGLE_APPLICATION_CREDENTIALS` names (a service account key, or
    ///    `authorized_user` credentials);
    /// 2. gcloud's file, `$CLOUDSDK_CONFIG/application_default_credentials.json`, else
    ///    `~/.config/gcloud/application_default_credentials.json` (written by
    ///    `gcloud auth application-default login`);
    /// 3. the metadata server of Compute Engine, Cloud Run, GKE and Cloud Functions
    ///    (`GCE_METADATA_HOST` overrides its address), detected with a short probe.
    ///
    /// What is found is kept for the life of the process; when nothing is, each operation
    /// fails with ``StorageErrorCode/unauthenticated`` and a message listing where it looked.
    /// One value for the whole process: every `Storage` using it shares its token.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "my-bucket", authorization: .applicationDefault)
    /// let metadata = try await storage.reference(withPath: "reports/q3.pdf").putFileAsync(from: fileURL)
    /// ```
    public static let applicationDefault = applicationDefault(scopes: OAuthCredential.defaultScopes)

    /// Google's Application Default Credentials (see ``applicationDefault``) asking for
    /// `scopes`.
    ///
    /// Each call makes a credential with a token cache of its own: create one and share it.
    ///
    /// ```swift
    /// let readOnly = StorageAuthorization.applicationDefault(
    ///     scopes: ["https://www.googleapis.com/auth/devstorage.read_only"])
    /// let storage = Storage(bucket: "my-bucket", authorization: readOnly)
    /// ```
    ///
    /// - Parameter scopes: The OAuth scopes; ``defaultScopes`` by default. An
    ///   `authorized_user` credential keeps the scopes its refresh token was issued with.
    /// - Returns: The authorization.
    public static func applicationDefault(scopes: [String]) -> StorageAuthorization {
        StorageAuthorization(
            kind: .credential(
                OAuthCredential(origin: .applicationDefault(ApplicationDefaultCredentials()), scopes: scopes)))
    }

    /// A service account's JSON key file: a JWT signed with its private key (RS256) is
    /// exchanged for access tokens at the file's own `token_uri`.
    ///
    /// The file is read and checked now; the first token is fetched by the first operation.
    ///
    /// ```swift
    /// let authorization = try StorageAuthorization.serviceAccount(
    ///     keyFile: URL(fileURLWithPath: "/etc/secrets/storage-writer.json"))
    /// let storage = Storage(bucket: "my-bucket", authorization: authorization)
    /// ```
    ///
    /// - Parameters:
    ///   - keyFile: The key file, as the Cloud console or `gcloud iam service-accounts keys
    ///     create` writes it (`"type": "service_account"`).
    ///   - scopes: The OAuth scopes; ``defaultScopes`` by default.
    /// - Returns: The authorization.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when the file is missing or cannot be
    ///   used: not JSON, another `type`, no `client_email`, `private_key` or `token_uri`, a
    ///   private key that is not an RSA key of at least 2048 bits, or a `token_uri` on plain
    ///   HTTP to another machine. The message names the problem, never the key.
    public static func serviceAccount(
        keyFile: URL, scopes: [String] = defaultScopes
    ) throws(StorageError) -> StorageAuthorization {
        let data = try readCredentials(keyFile)
        return try serviceAccount(data, source: "The key file \(keyFile.path)", scopes: scopes)
    }

    /// A service account's JSON key, given as its bytes (from a secret manager, say); see
    /// ``serviceAccount(keyFile:scopes:)``.
    ///
    /// ```swift
    /// let key = try await secrets.value(named: "storage-writer-key")  // the key file's bytes
    /// let storage = Storage(bucket: "my-bucket", authorization: try .serviceAccount(keyJSON: key))
    /// ```
    ///
    /// - Parameters:
    ///   - keyJSON: The key file's contents.
    ///   - scopes: The OAuth scopes; ``defaultScopes`` by default.
    /// - Returns: The authorization.
    /// - Throws: ``StorageErrorCode/invalidArgument`` as ``serviceAccount(keyFile:scopes:)`` does.
    public static func serviceAccount(
        keyJSON: Data, scopes: [String] = defaultScopes
    ) throws(StorageError) -> StorageAuthorization {
        try serviceAccount(keyJSON, source: "The service account key JSON", scopes: scopes)
    }

    /// A user's credentials as `gcloud auth application-default login` writes them
    /// (`"type": "authorized_user"`): the refresh token is exchanged for access tokens at the
    /// file's `token_uri` (Google's by default).
    ///
    /// ```swift
    /// let file = URL(fileURLWithPath: NSHomeDirectory())
    ///     .appendingPathComponent(".config/gcloud/application_default_credentials.json")
    /// let storage = Storage(bucket: "my-bucket", authorization: try .authorizedUser(file: file))
    /// ```
    ///
    /// - Parameter file: The credentials file.
    /// - Returns: The authorization. Its tokens carry the scopes the user consented to; a
    ///   `quota_project_id` in the file is sent as `x-goog-user-project`.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when the file is missing, is not JSON,
    ///   holds another `type`, or lacks `client_id`, `client_secret` or `refresh_token`.
    public static func authorizedUser(file: URL) throws(StorageError) -> StorageAuthorization {
        let data = try readCredentials(file)
        return try authorizedUser(data, source: "The credentials file \(file.path)")
    }

    /// A user's `authorized_user` credentials given as their JSON bytes; see
    /// ``authorizedUser(file:)``.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "my-bucket", authorization: try .authorizedUser(json: credentialsJSON))
    /// ```
    ///
    /// - Parameter json: The credentials file's contents.
    /// - Returns: The authorization.
    /// - Throws: ``StorageErrorCode/invalidArgument`` as ``authorizedUser(file:)`` does.
    public static func authorizedUser(json: Data) throws(StorageError) -> StorageAuthorization {
        try authorizedUser(json, source: "The authorized_user credentials JSON")
    }

    /// The metadata server's tokens for the service account the workload runs as, on
    /// Compute Engine, Cloud Run, GKE (Workload Identity) and Cloud Functions.
    ///
    /// No detection: every token request goes to the metadata server (`GCE_METADATA_HOST`,
    /// read now, else `169.254.169.254`), and fails with ``StorageErrorCode/unauthenticated``
    /// or ``StorageErrorCode/retryLimitExceeded`` where there is none. Use
    /// ``applicationDefault`` to fall back on it only when no file is configured.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "my-bucket", authorization: .metadataServer())
    /// ```
    ///
    /// - Parameter scopes: The OAuth scopes; ``defaultScopes`` by default (Compute Engine
    ///   grants at most the scopes the instance was created with).
    /// - Returns: The authorization.
    public static func metadataServer(scopes: [String] = defaultScopes) -> StorageAuthorization {
        metadataServer(scopes: scopes, environment: ProcessInfo.processInfo.environment)
    }

    static func metadataServer(scopes: [String], environment: [String: String]) -> StorageAuthorization {
        StorageAuthorization(
            kind: .credential(
                OAuthCredential(
                    origin: .source(.metadataServer(MetadataServer(environment: environment))), scopes: scopes)))
    }

    /// Application Default Credentials reading `environment` instead of the process's (tests).
    static func applicationDefault(
        scopes: [String] = defaultScopes, environment: ApplicationDefaultCredentials.Environment
    ) -> StorageAuthorization {
        StorageAuthorization(
            kind: .credential(
                OAuthCredential(
                    origin: .applicationDefault(ApplicationDefaultCredentials(environment: environment)), scopes: scopes
                )))
    }

    /// The Google credential this value holds, if it holds one.
    var oauthCredential: OAuthCredential? {
        if case .credential(let credential) = kind { return credential }
        return nil
    }

    private static func serviceAccount(
        _ data: Data, source: String, scopes: [String]
    ) throws(StorageError) -> StorageAuthorization {
        let credential = try CredentialFile.credential(in: data, source: source, expecting: "service_account")
        return StorageAuthorization(kind: .credential(OAuthCredential(origin: .source(credential), scopes: scopes)))
    }

    private static func authorizedUser(_ data: Data, source: String) throws(StorageError) -> StorageAuthorization {
        let credential = try CredentialFile.credential(in: data, source: source, expecting: "authorized_user")
        return StorageAuthorization(kind: .credential(OAuthCredential(origin: .source(credential))))
    }

    private static func readCredentials(_ file: URL) throws(StorageError) -> Data {
        guard let data = try CredentialFile.read(file.path) else {
            throw .invalidArgument("The credentials file \(file.path) does not exist.")
        }
        return data
    }
}

extension StorageAuthorization {
    /// Application Default Credentials that look in `environment` and `homeDirectory` instead
    /// of the process's: for the command-line tool, which is given its environment.
    package static func applicationDefault(
        environment: [String: String], homeDirectory: String?
    ) -> StorageAuthorization {
        applicationDefault(
            environment: ApplicationDefaultCredentials.Environment(variables: environment, homeDirectory: homeDirectory)
        )
    }
}
