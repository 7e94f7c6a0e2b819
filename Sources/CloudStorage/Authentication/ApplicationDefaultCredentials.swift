import Foundation
import Synchronization

/// Finds credentials the way Google's client libraries do (Application Default
/// Credentials), on first use, in this order:
/// 1. the file `GOOGLE_APPLICATION_CREDENTIALS` names (set but missing is an error, not a
///    reason to look further: the operator meant that file);
/// 2. gcloud's well-known file, `$CLOUDSDK_CONFIG/application_default_credentials.json`, else
///    `~/.config/gcloud/application_default_credentials.json`;
/// 3. the metadata server (`GCE_METADATA_HOST`, else `169.254.169.254`), if it answers a
///    short probe.
///
/// What it finds is kept for the life of the object; a failure is not, so a file created
/// later is found by the next operation. The metadata probe's verdict is kept either way,
/// so a laptop waits for it at most once.
final class ApplicationDefaultCredentials: Sendable {
    /// The process environment and home directory, or ones a test gives.
    struct Environment: Sendable {
        var variables: [String: String]
        /// The user's home directory, where `~/.config/gcloud` lives; nil for none.
        var homeDirectory: String?

        static var process: Environment {
            let variables = ProcessInfo.processInfo.environment
            let home = variables["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return Environment(variables: variables, homeDirectory: home.isEmpty ? nil : home)
        }
    }

    private struct State {
        var found: CredentialSource?
        /// Nil until probed; then nil inside when a metadata server answered, else why not.
        var metadataVerdict: String??
    }

    private let environment: Environment?
    private let state = Mutex(State())

    /// - Parameter environment: What to read instead of the process's environment and home
    ///   directory (tests); nil reads them at first use.
    init(environment: Environment? = nil) {
        self.environment = environment
    }

    /// The credential found, looking for it if it has not been found yet.
    ///
    /// - Parameter context: The transport for the metadata probe.
    /// - Throws: ``StorageErrorCode/unauthenticated``, naming every place looked at when
    ///   nothing was found, or the file and its problem when a file cannot be used.
    func resolve(context: TokenRequestContext) async throws(StorageError) -> CredentialSource {
        if let found = state.withLock({ $0.found }) { return found }
        let found = try await find(context: context)
        state.withLock { $0.found = found }
        return found
    }

    private func find(context: TokenRequestContext) async throws(StorageError) -> CredentialSource {
        let environment = environment ?? .process
        var looked: [String] = []

        if let path = environment.variables["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            guard let data = try await Self.read(path) else {
                throw StorageError(
                    .unauthenticated,
                    "GOOGLE_APPLICATION_CREDENTIALS names \(path), which does not exist or is not a readable file.")
            }
            return try Self.credential(in: data, source: "The file GOOGLE_APPLICATION_CREDENTIALS names (\(path))")
        }
        looked.append("GOOGLE_APPLICATION_CREDENTIALS is not set")

        if let path = Self.wellKnownFile(environment) {
            if let data = try await Self.read(path) {
                return try Self.credential(in: data, source: "gcloud's credentials file \(path)")
            }
            looked.append("\(path) does not exist")
        } else {
            looked.append("there is no home directory for gcloud's credentials file")
        }

        let server = MetadataServer(environment: environment.variables)
        let verdict: String?
        if let known = state.withLock({ $0.metadataVerdict }) {
            verdict = known
        } else {
            verdict = await server.probe(using: context.transport)
            state.withLock { $0.metadataVerdict = .some(verdict) }
        }
        guard let reason = verdict else { return .metadataServer(server) }
        looked.append(reason)

        throw StorageError(
            .unauthenticated,
            "No Application Default Credentials were found: " + looked.joined(separator: "; ")
                + ". Set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run "
                + "`gcloud auth application-default login`, or run on Google Cloud.")
    }

    /// gcloud's `application_default_credentials.json`: in `$CLOUDSDK_CONFIG` if set, else in
    /// `~/.config/gcloud`.
    static func wellKnownFile(_ environment: Environment) -> String? {
        if let config = environment.variables["CLOUDSDK_CONFIG"], !config.isEmpty {
            return URL(fileURLWithPath: config).appendingPathComponent("application_default_credentials.json").path
        }
        guard let home = environment.homeDirectory else { return nil }
        return URL(fileURLWithPath: home).appendingPathComponent(".config/gcloud/application_default_credentials.json")
            .path
    }

    /// A file found by ADC that cannot be used fails the operation as unauthenticated.
    private static func credential(in data: Data, source: String) throws(StorageError) -> CredentialSource {
        do {
            return try CredentialFile.credential(in: data, source: source)
        } catch {
            throw StorageError(.unauthenticated, error.message)
        }
    }

    /// The file's bytes, or nil when it does not exist. Read off the cooperative pool.
    private static func read(_ path: String) async throws(StorageError) -> Data? {
        do throws(StorageError) {
            return try await BlockingIO.run { () throws(StorageError) -> Data? in try CredentialFile.read(path) }
        } catch  where error.code == .cancelled {
            throw error
        } catch {
            throw StorageError(.unauthenticated, error.message, underlyingError: error.underlyingError)
        }
    }
}
