import CloudStorage
import Foundation

/// `cloud-storage sign gs://BUCKET/PATH`: prints a V4 signed URL for the object.
struct SignCommand {
    static let usage = """
        usage: cloud-storage sign [options] gs://BUCKET/[PATH[#GENERATION]]

        Prints a V4 signed URL: anyone holding it may perform METHOD on the object
        (on the bucket when PATH is empty; on that generation of it, for GET and
        DELETE, with #GENERATION) without credentials until it expires.
        With --key-file the URL is signed here with that service account's key and
        nothing is contacted. Without it, Application Default Credentials sign: a key
        file they find signs here; on Compute Engine, Cloud Run or GKE the metadata
        server's account signs through IAM signBlob.

        Options:
          --method M          GET (default), PUT, POST (starts a resumable upload;
                              send x-goog-resumable: start) or DELETE
          --expires T         how long the URL is valid: SECONDS or a number followed
                              by s, m, h or d (default 1h; at most 7d)
          --key-file FILE     a service account's JSON key file (client_email, private_key);
                              default: Application Default Credentials
          --header K:V        a header the request must carry with this value (repeatable)
          --virtual-hosted    https://BUCKET.storage.googleapis.com/PATH instead of
                              https://storage.googleapis.com/BUCKET/PATH
          --endpoint URL      sign for this host instead (an emulator); by default
                              $STORAGE_EMULATOR_HOST, else Google Cloud Storage

        Exit status: 0 printed, 2 usage (bad arguments, an unreadable key file),
        1 other (no credentials that can sign, among others).
        """

    let bucket: String
    let path: String
    /// The generation `#GENERATION` names; nil for the live object.
    let generation: Int64?
    let method: SignedURLMethod
    let expiresIn: Duration
    let headers: [String: String]
    let style: SignedURLStyle
    let endpoint: StorageEndpoint
    /// `--key-file`'s service account, whose key signs; Application Default Credentials without it.
    let authorization: StorageAuthorization

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words, valued: ["--method", "--expires", "--key-file", "--header", "--endpoint"],
            flags: ["--virtual-hosted"])
        guard arguments.positional.count == 1 else { throw UsageError("sign needs one gs://BUCKET/PATH") }
        let target = try ObjectAddress(arguments.positional[0], role: "the object")
        bucket = target.bucket
        path = target.path
        generation = target.generation

        let methodText = arguments.value("--method") ?? "GET"
        guard let method = SignedURLMethod(rawValue: methodText.uppercased()) else {
            throw UsageError("--method: \(methodText) is not GET, PUT, POST or DELETE")
        }
        self.method = method
        let expiresText = arguments.value("--expires") ?? "1h"
        guard let seconds = Self.seconds(expiresText), (1...604_800).contains(seconds) else {
            throw UsageError("--expires: \(expiresText) is not a time from 1s to 7d (such as 900, 15m, 2h or 7d)")
        }
        expiresIn = .seconds(seconds)

        var headers: [String: String] = [:]
        for text in arguments.values("--header") {
            guard let colon = text.firstIndex(of: ":"), colon > text.startIndex else {
                throw UsageError("--header: \(text) is not NAME:VALUE")
            }
            let name = String(text[..<colon])
            guard headers.keys.allSatisfy({ $0.lowercased() != name.lowercased() }) else {
                throw UsageError("--header: \(name) is given twice")
            }
            headers[name] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        style = arguments.has("--virtual-hosted") ? .virtualHosted : .pathStyle

        if let text = arguments.value("--endpoint") {
            endpoint = .gcs(try StorageOptions.url(text))
        } else {
            // Google's libraries sign for STORAGE_EMULATOR_HOST when it is set; the Firebase
            // emulator's variable names a server that does not take signed URLs.
            let variable = environment.filter { $0.key == "STORAGE_EMULATOR_HOST" }
            endpoint = try StorageOptions.endpoint(fromEnvironment: variable) ?? .googleCloudStorage
        }
        authorization = try arguments.value("--key-file").map(Self.authorization(keyFile:)) ?? .applicationDefault
    }

    /// `900`, `90s`, `15m`, `2h`, `7d` in seconds; nil for anything else (or an overflow).
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let found = units[last] {
            unit = found
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(digits)
        else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: unit)
        return overflow ? nil : product
    }

    /// The authorization of a service account's JSON key file, read and checked now, so that a
    /// wrong file fails before anything else happens.
    static func authorization(keyFile path: String) throws(UsageError) -> StorageAuthorization {
        do {
            return try StorageAuthorization.serviceAccount(keyFile: URL(fileURLWithPath: path))
        } catch {
            throw UsageError("--key-file: \(error.message)", showsUsage: false)
        }
    }

    /// The signed URL, as of now.
    func signedURL() async throws(StorageError) -> URL {
        let storage = Storage(bucket: bucket, endpoint: endpoint, authorization: authorization)
        // No signer: the Storage's credential signs (a key file's key, or IAM for the metadata server's account).
        let reference = ObjectAddress(bucket: bucket, path: path).reference(in: storage).atGeneration(generation)
        return try await reference.signedURL(
            method: method, expiresIn: expiresIn, headers: headers, style: style)
    }

    /// Prints the URL to standard output (through `output`).
    func run(output: (String) -> Void = { print($0) }) async -> ExitCode {
        do {
            output(try await signedURL().absoluteString)
            return .success
        } catch {
            report(error.message)
            if error.code == .unauthenticated || error.message.contains("cannot sign.") {
                report("give --key-file FILE (a service account's JSON key) to sign with a key of your own")
            }
            return ExitCode(error)
        }
    }
}
