public import Foundation

extension Storage {
    /// A handle for a bucket on a local Google Cloud Storage emulator, such as
    /// fake-gcs-server, speaking the JSON API.
    ///
    /// ```swift
    /// let storage = Storage.gcsEmulator(bucket: "test-bucket", baseURL: URL(string: "http://127.0.0.1:4443")!)
    /// let metadata = try await storage.reference(withPath: "hello.txt").putDataAsync(Data("hi".utf8))
    /// ```
    ///
    /// - Parameters:
    ///   - bucket: The bucket name.
    ///   - baseURL: The emulator's address, such as `http://127.0.0.1:4443`.
    ///   - authorization: The credentials to send; none by default, which
    ///     emulators of the JSON API accept.
    ///   - configuration: Upload settings.
    /// - Returns: The handle; the same as ``init(bucket:endpoint:authorization:configuration:)``
    ///   with ``StorageEndpoint/gcs(_:)``.
    public static func gcsEmulator(
        bucket: String,
        baseURL: URL,
        authorization: StorageAuthorization = .none,
        configuration: StorageConfiguration = .init()
    ) -> Storage {
        Storage(bucket: bucket, endpoint: .gcs(baseURL), authorization: authorization, configuration: configuration)
    }

    /// A handle for a bucket on the Firebase emulator, speaking Firebase
    /// Storage v0 over plain HTTP.
    ///
    /// By default requests go as the emulator's administrator
    /// (``StorageAuthorization/emulatorOwner``, `Authorization: Firebase owner`),
    /// which bypasses Security Rules as the Firebase Admin SDKs do. Pass
    /// `authorization: .bearerToken(idToken)` with an ID token from the Auth
    /// emulator to have the rules evaluated for that user, or `.none` for an
    /// unauthenticated client.
    ///
    /// ```swift
    /// let storage = try Storage.firebaseEmulator(bucket: "demo-project.appspot.com")
    /// let metadata = try await storage.reference(withPath: "images/space.jpg").putFileAsync(from: fileURL)
    /// ```
    ///
    /// - Parameters:
    ///   - bucket: The bucket name, such as `demo-project.appspot.com`.
    ///   - host: The emulator's host name or IP address; `127.0.0.1` by default.
    ///   - port: The emulator's port; 9199, its default, by default.
    ///   - authorization: The credentials to send; ``StorageAuthorization/emulatorOwner`` by default.
    ///   - configuration: Upload settings.
    /// - Returns: The handle; the same as ``init(bucket:endpoint:authorization:configuration:)``
    ///   with ``StorageEndpoint/firebase(_:)`` at `http://host:port`.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when `host` is not a host
    ///   name or an IP address, or `port` is not 1 to 65535.
    public static func firebaseEmulator(
        bucket: String,
        host: String = "127.0.0.1",
        port: Int = 9199,
        authorization: StorageAuthorization = .emulatorOwner,
        configuration: StorageConfiguration = .init()
    ) throws(StorageError) -> Storage {
        guard let url = EmulatorAddress.url(scheme: "http", host: host, port: port) else {
            throw .invalidArgument(
                "The Firebase emulator's address must be a host name or IP address and a port from 1 to 65535."
            )
        }
        return Storage(
            bucket: bucket, endpoint: .firebase(url), authorization: authorization, configuration: configuration)
    }
}
