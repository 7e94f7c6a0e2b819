import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// URLs the SDK signs, used with a plain HTTP client (URLSession, no credentials) against the
/// emulator, which verifies V4 signatures with its configured service accounts' keys and
/// requires a token for every unsigned storage request.
@Suite("V4 signed URLs against the emulator", .timeLimit(.minutes(10)))
struct SignedURLEmulatorTests {
    /// The account of Tests/TestCredentials/service-account.json (whose key is service-account.key).
    static let email = "test-account@cloudstorage-test.iam.gserviceaccount.com"

    /// An emulator that knows the TEST-ONLY service account (with its private key, so it can
    /// signBlob for it) and serves a metadata server for it.
    static func emulator() throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(
            serviceAccounts: [.init(email: email, privateKeyPEM: try TestCredentials.text("service-account.key"))],
            metadataServerAccount: .init(email: email, projectID: "demo"),
            requiresToken: true)
        return try StorageEmulator.start(configuration)
    }

    static func keySigner() throws -> SignedURLSigner {
        try SignedURLSigner.privateKey(email: email, pem: try TestCredentials.text("service-account.key"))
    }

    /// A token for the metadata server's account, as a VM would get it.
    static func metadataToken(_ emulator: StorageEmulator) async throws -> String {
        let url = URL(
            string: emulator.baseURL.absoluteString + "/computeMetadata/v1/instance/service-accounts/default/token")!
        let (status, body, _) = try await TestSupport.send("GET", url, headers: ["Metadata-Flavor": "Google"])
        try #require(status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        return try #require(json["access_token"] as? String)
    }

    /// PUT, GET and DELETE through URLs signed by `signer`, with `storage`'s settings.
    static func roundTrip(_ storage: Storage, signer: SignedURLSigner, name: String) async throws {
        let reference = storage.reference(withPath: name)
        let payload = Data("signed bytes for \(name)".utf8)
        let put = try await reference.signedURL(
            method: .put, expiresIn: .seconds(600), headers: ["Content-Type": "text/plain"], signer: signer)
        let stored = try await TestSupport.send("PUT", put, headers: ["Content-Type": "text/plain"], body: payload)
        #expect(stored.status == 200, "\(String(decoding: stored.body, as: UTF8.self))")

        let get = try await reference.signedURL(expiresIn: .seconds(600), signer: signer)
        let read = try await TestSupport.send("GET", get)
        #expect(read.status == 200)
        #expect(read.body == payload)

        let delete = try await reference.signedURL(method: .delete, expiresIn: .seconds(600), signer: signer)
        #expect(try await TestSupport.send("DELETE", delete).status == 204)
        #expect(try await TestSupport.send("GET", get).status == 404)
    }

    @Test("a key-signed URL PUTs, GETs and DELETEs with no credentials, on a token-requiring emulator")
    func privateKeyRoundTrip() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let storage = Storage(bucket: "signed", endpoint: .gcs(emulator.baseURL))
        try await Self.roundTrip(storage, signer: try Self.keySigner(), name: "dir/a b+c é.txt")
        // The same request unsigned is refused: the signature is what authorized it.
        let plain = URL(string: emulator.baseURL.absoluteString + "/storage/v1/b/signed/o/x?alt=media")!
        #expect(try await TestSupport.send("GET", plain).status == 401)
    }

    /// Whether `URLSession` reaches subdomains of `localhost`, which a virtual-hosted URL for a
    /// localhost endpoint needs: on Linux its libcurl maps `*.localhost` to loopback itself
    /// (since curl 7.78, RFC 6761), whatever the system resolver says; elsewhere it depends
    /// on the resolver.
    static let resolvesLocalhostSubdomains: Bool = {
        #if canImport(FoundationNetworking)
        return true
        #else
        var result: UnsafeMutablePointer<addrinfo>?
        defer { if let result { freeaddrinfo(result) } }
        return getaddrinfo("virtual.localhost", nil, nil, &result) == 0
        #endif
    }()

    @Test(
        "a virtual-hosted URL for a localhost endpoint (<bucket>.localhost) works the same",
        .enabled(if: resolvesLocalhostSubdomains, "this machine does not resolve <name>.localhost"))
    func virtualHostedRoundTrip() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let port = try #require(emulator.baseURL.port)
        let storage = Storage(bucket: "virtual", endpoint: .gcs(URL(string: "http://localhost:\(port)")!))
        let reference = storage.reference(withPath: "dir/v.txt")
        let put = try await reference.signedURL(
            method: .put, expiresIn: .seconds(600), style: .virtualHosted, signer: try Self.keySigner())
        #expect(put.absoluteString.hasPrefix("http://virtual.localhost:\(port)/dir/v.txt?"))
        #expect(try await TestSupport.send("PUT", put, body: Data("v".utf8)).status == 200)
        let get = try await reference.signedURL(
            expiresIn: .seconds(600), style: .virtualHosted, signer: try Self.keySigner())
        #expect(try await TestSupport.send("GET", get).body == Data("v".utf8))
    }

    @Test("a URL signed through the emulator's IAM signBlob, with a metadata-server token, works the same")
    func iamSignBlobRoundTrip() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let token = try await Self.metadataToken(emulator)
        let storage = Storage(
            bucket: "signed", endpoint: .gcs(emulator.baseURL), authorization: .bearerToken(token))
        let signer = SignedURLSigner.iamSignBlob(email: Self.email, baseURL: emulator.baseURL)
        try await Self.roundTrip(storage, signer: signer, name: "via-iam.txt")
        // Both signers sign the same bytes with the same key: the same URL.
        let reference = storage.reference(withPath: "same.txt")
        let time = Date()
        let viaIAM = try await reference.signedURL(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            signer: signer, at: time)
        let viaKey = try await reference.signedURL(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            signer: try Self.keySigner(), at: time)
        #expect(viaIAM == viaKey)
    }

    @Test("a signed POST starts a resumable upload whose session takes the bytes")
    func resumableStart() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let storage = Storage(bucket: "signed", endpoint: .gcs(emulator.baseURL))
        let reference = storage.reference(withPath: "resumable.bin")
        let post = try await reference.signedURL(method: .post, expiresIn: .seconds(600), signer: try Self.keySigner())
        let started = try await TestSupport.send("POST", post, headers: ["x-goog-resumable": "start"], body: Data())
        #expect(started.status == 201)
        let location = try #require(started.headers["Location"] as? String)
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let sent = try await TestSupport.send(
            "PUT", try #require(URL(string: location)),
            headers: ["Content-Range": "bytes 0-\(payload.count - 1)/\(payload.count)"], body: payload)
        #expect(sent.status == 200)
        let get = try await reference.signedURL(expiresIn: .seconds(600), signer: try Self.keySigner())
        #expect(try await TestSupport.send("GET", get).body == payload)
        // Without the signed header the start is refused.
        #expect(try await TestSupport.send("POST", post, body: Data()).status == 403)
    }

    @Test("tampered, expired, not-yet-valid and unknown-account URLs are refused")
    func refusals() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let storage = Storage(bucket: "signed", endpoint: .gcs(emulator.baseURL))
        let reference = storage.reference(withPath: "secret.txt")
        let signer = try Self.keySigner()
        let put = try await reference.signedURL(method: .put, expiresIn: .seconds(600), signer: signer)
        #expect(try await TestSupport.send("PUT", put, body: Data("x".utf8)).status == 200)
        let get = try await reference.signedURL(expiresIn: .seconds(600), signer: signer)

        // Another object, another method, a changed expiry: the signature no longer matches.
        let other = URL(string: get.absoluteString.replacingOccurrences(of: "secret.txt", with: "other.txt"))!
        let tampered = try await TestSupport.send("GET", other)
        #expect(tampered.status == 403)
        #expect(String(decoding: tampered.body, as: UTF8.self).contains("<Code>SignatureDoesNotMatch</Code>"))
        #expect(try await TestSupport.send("DELETE", get).status == 403)
        let longer = URL(
            string: get.absoluteString.replacingOccurrences(of: "X-Goog-Expires=600", with: "X-Goog-Expires=601"))!
        #expect(try await TestSupport.send("GET", longer).status == 403)

        // Signed two minutes ago for one: expired a minute ago, whatever the machine's load.
        let past = try await reference.signedURL(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            signer: signer, at: Date().addingTimeInterval(-120))
        let expired = try await TestSupport.send("GET", past)
        #expect(expired.status == 400)
        #expect(String(decoding: expired.body, as: UTF8.self).contains("<Code>ExpiredToken</Code>"))
        let future = try await reference.signedURL(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            signer: signer, at: Date().addingTimeInterval(3600))
        #expect(try await TestSupport.send("GET", future).status == 400)

        // A key the emulator does not know.
        let stranger = try SignedURLSigner.privateKey(
            email: "stranger@cloudstorage-test.iam.gserviceaccount.com",
            pem: try TestCredentials.text("service-account.key"))
        let unknown = try await reference.signedURL(expiresIn: .seconds(600), signer: stranger)
        #expect(try await TestSupport.send("GET", unknown).status == 403)
        // The object is still there for the right URL.
        #expect(try await TestSupport.send("GET", get).body == Data("x".utf8))
    }

    @Test("cloud-storage sign --key-file prints a URL the emulator serves")
    func commandLine() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let keyFile = TestCredentials.url("service-account.json")
        func sign(_ words: [String]) async throws -> URL {
            let command = try SignCommand(
                words + ["--key-file", keyFile.path, "--endpoint", emulator.baseURL.absoluteString], environment: [:])
            var lines: [String] = []
            #expect(await command.run { lines.append($0) } == .success)
            return try #require(URL(string: lines.first ?? ""))
        }
        let put = try await sign(["gs://cli/from-cli.txt", "--method", "PUT", "--expires", "15m"])
        #expect(try await TestSupport.send("PUT", put, body: Data("cli".utf8)).status == 200)
        let get = try await sign(["gs://cli/from-cli.txt"])
        #expect(try await TestSupport.send("GET", get).body == Data("cli".utf8))
    }
}
