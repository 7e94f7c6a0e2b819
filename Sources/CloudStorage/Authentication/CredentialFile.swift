import Foundation

/// Reads a Google credentials JSON file — the kind Application Default Credentials finds
/// and `GOOGLE_APPLICATION_CREDENTIALS` names — into the credential its `type` says.
enum CredentialFile {
    /// The credential in `data`.
    ///
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - source: Names the file in messages ("The key file /etc/key.json").
    ///   - expected: The `type` the caller asked for, or nil for any supported one.
    /// - Throws: ``StorageErrorCode/invalidArgument``: not JSON, a missing or unusable field,
    ///   an unsupported or unexpected `type`. Messages name fields, never quote their values
    ///   (a key pasted into the wrong field must not end up in a log), except a `type` that is
    ///   one of the ``knownTypes``, which then is our own text.
    static func credential(
        in data: Data, source: String, expecting expected: String? = nil
    ) throws(StorageError) -> CredentialSource {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .invalidArgument("\(source) is not a JSON object.")
        }
        guard let type = object["type"] as? String else {
            throw .invalidArgument("\(source) has no \"type\" field; it is not a Google credentials file.")
        }
        guard let known = knownTypes.first(where: { $0 == type }) else {
            throw .invalidArgument(
                "\(source) holds credentials of an unknown \"type\" (known: \(knownTypes.joined(separator: ", "))).")
        }
        if let expected, known != expected {
            throw .invalidArgument("\(source) holds \"type\": \"\(known)\" credentials, not \"\(expected)\".")
        }
        switch known {
        case "service_account":
            return .serviceAccount(try ServiceAccountKey(json: object, source: source))
        case "authorized_user":
            return .authorizedUser(try AuthorizedUserCredentials(json: object, source: source))
        default:
            throw .invalidArgument(
                "\(source) holds \"type\": \"\(known)\" credentials, which CloudStorage does not support yet; "
                    + "use a service account key, gcloud's authorized_user credentials, or the metadata server.")
        }
    }

    /// The `type`s of Google credentials files: the first two are supported. A message may
    /// name one of these, since it is then our text, not the file's.
    static let knownTypes = [
        "service_account", "authorized_user", "impersonated_service_account", "external_account",
        "external_account_authorized_user",
    ]

    /// The most bytes a credentials file may have: real ones are a few KiB.
    static let maximumSize = 1 << 20

    /// The bytes of the file at `path`, or nil when nothing exists there. Blocks: call it
    /// off the cooperative pool (or from a synchronous API).
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` when it is not a readable regular file
    ///   (a FIFO is refused without waiting for a writer) or is larger than ``maximumSize``.
    static func read(_ path: String) throws(StorageError) -> Data? {
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(path: path)
        } catch {
            if (error.underlyingError as? POSIXError)?.code == .ENOENT { return nil }
            // The message names the path and what is wrong with it (a directory, a device, …).
            throw .invalidArgument("A credentials file cannot be read: \(error.message)")
        }
        guard file.size <= maximumSize else {
            throw .invalidArgument("The credentials file \(path) is larger than 1 MiB; it is not a credentials file.")
        }
        var data = Data(count: Int(file.size))
        let count = Int(file.size)
        let read = data.withUnsafeMutableBytes { raw -> Result<Int, StorageError> in
            guard let base = raw.baseAddress else { return .success(0) }
            return Result { () throws(StorageError) -> Int in try file.read(into: base, count: count, at: 0) }
        }
        do {
            data.count = try read.get()
        } catch {
            throw .invalidArgument("The credentials file \(path) cannot be read: \(error.message)")
        }
        return data
    }

    /// A non-empty string field, or an error naming it.
    static func requiredString(_ name: String, in object: [String: Any], source: String) throws(StorageError) -> String
    {
        guard let value = object[name] as? String, !value.isEmpty else {
            throw .invalidArgument("\(source) has no \(name).")
        }
        return value
    }

    /// A non-empty string field, or nil.
    static func optionalString(_ name: String, in object: [String: Any]) -> String? {
        (object[name] as? String).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A `token_uri`: an http(s) URL with a host, and never plain HTTP to another machine,
    /// since what is sent there (a signed assertion, a refresh token) is a secret.
    static func tokenURI(_ text: String, source: String) throws(StorageError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.host?.isEmpty == false
        else {
            throw .invalidArgument("\(source) has a token_uri that is not an http(s) URL with a host.")
        }
        guard !url.isPlainHTTPToAnotherMachine else {
            throw .invalidArgument(
                "\(source) has a token_uri on plain HTTP to another machine; secrets are only sent over https or to a loopback address."
            )
        }
        return url
    }
}
