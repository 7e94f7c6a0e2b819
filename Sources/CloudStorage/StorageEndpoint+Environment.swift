public import Foundation

extension StorageEndpoint {
    /// The emulator endpoint named by the environment, or nil when none is.
    ///
    /// Two variables are read, the ones the Firebase and Google Cloud tools set:
    ///
    /// | Variable | Form | Endpoint |
    /// | --- | --- | --- |
    /// | `FIREBASE_STORAGE_EMULATOR_HOST` | `host:port`, such as `127.0.0.1:9199` | ``firebase(_:)`` at `http://host:port` |
    /// | `STORAGE_EMULATOR_HOST` | `http://host:port`, `https://host:port` or `host:port` (then `http`) | ``gcs(_:)`` |
    ///
    /// When both are set, `FIREBASE_STORAGE_EMULATOR_HOST` wins: it is the
    /// more specific of the two, and `firebase emulators:exec` sets both to the
    /// same emulator, which serves both protocols. A variable that is unset,
    /// empty or blank counts as absent. `FIREBASE_STORAGE_EMULATOR_HOST`
    /// needs a port; it may carry an `http://` or `https://` prefix too.
    /// Hosts are names, IPv4 addresses or IPv6 addresses in brackets
    /// (`[::1]:9199`); a trailing `/` is allowed, any other path, a query or
    /// user information is not.
    ///
    /// ```swift
    /// // FIREBASE_STORAGE_EMULATOR_HOST=127.0.0.1:9199 swift run my-tool
    /// let endpoint = try StorageEndpoint.fromEnvironment() ?? .firebaseStorage
    /// let storage = Storage(bucket: "my-app.appspot.com", endpoint: endpoint)
    ///
    /// // In tests, pass the variables instead:
    /// let local = try StorageEndpoint.fromEnvironment(["STORAGE_EMULATOR_HOST": "localhost:4443"])
    /// assert(local == .gcs(URL(string: "http://localhost:4443")!))
    /// ```
    ///
    /// - Parameter environment: The variables; the process's own by default.
    /// - Returns: The emulator's endpoint, or nil when neither variable is set.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when the variable that
    ///   would be used is set to something that is not an address of the
    ///   accepted forms; the message names the variable.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(StorageError) -> StorageEndpoint? {
        if let value = environment[firebaseEmulatorVariable],
            let url = try EmulatorAddress.parse(value, source: firebaseEmulatorVariable, requiresPort: true)
        {
            return .firebase(url)
        }
        if let value = environment[gcsEmulatorVariable],
            let url = try EmulatorAddress.parse(value, source: gcsEmulatorVariable, requiresPort: false)
        {
            return .gcs(url)
        }
        return nil
    }

    static let firebaseEmulatorVariable = "FIREBASE_STORAGE_EMULATOR_HOST"
    static let gcsEmulatorVariable = "STORAGE_EMULATOR_HOST"
}
