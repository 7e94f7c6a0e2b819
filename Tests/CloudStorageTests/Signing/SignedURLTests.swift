import Foundation
import HTTP1
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

@Suite("V4 signed URLs: arguments, endpoints and signers")
struct SignedURLTests {
    let account: ConformanceServiceAccount
    let signer: SignedURLSigner
    static let time = Date(timeIntervalSince1970: 1_549_011_600)  // 2019-02-01T09:00:00Z

    init() throws {
        account = try ConformanceServiceAccount.load()
        signer = try account.signer()
    }

    /// A transport that answers IAM `signBlob` calls with `statuses` in turn (200 signs with
    /// `key`; the last repeats), and records them.
    static func signBlobTransport(
        statuses: [Int] = [200], key: RSASigningKey, omitsSignature: Bool = false
    ) -> TestTransport {
        let transport = TestTransport()
        transport.answer { request, index in
            let status = statuses[min(index + 1, statuses.count) - 1]
            guard status == 200 else {
                return TestTransport.response(
                    status, body: "{\"error\":{\"code\":\(status),\"message\":\"scripted refusal\"}}")
            }
            let body = try await request.body.collected()
            let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
            let payload = try #require(Data(base64Encoded: json["payload"] ?? ""))
            let blob = Data(try key.sign(Array(payload))).base64EncodedString()
            return TestTransport.response(
                200, body: omitsSignature ? "{\"keyId\":\"k\"}" : "{\"keyId\":\"k\",\"signedBlob\":\"\(blob)\"}")
        }
        return transport
    }

    func sign(
        _ reference: StorageReference, method: SignedURLMethod = .get, expiresIn: Duration = .seconds(60),
        headers: [String: String] = [:], query: [String: String] = [:], style: SignedURLStyle = .pathStyle,
        signer: SignedURLSigner? = nil
    ) async throws(StorageError) -> URL {
        try await reference.signedURL(
            method: method, expiresIn: expiresIn, headers: headers, queryParameters: query, style: style,
            signer: signer ?? self.signer, at: Self.time)
    }

    func code(_ body: () async throws(StorageError) -> URL) async -> StorageErrorCode? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error.code
        }
    }

    static let reference = Storage(bucket: "b").reference(withPath: "dir/a b.txt")

    @Test("the expiry is whole seconds from 1 to 604800", arguments: [0, 604_801, -5])
    func expiryOutOfRange(_ seconds: Int64) async {
        #expect(
            await code { () async throws(StorageError) in try await sign(Self.reference, expiresIn: .seconds(seconds)) }
                == .invalidArgument)
    }

    @Test("a fractional expiry is refused; seven days is accepted")
    func expiryBounds() async throws {
        #expect(
            await code { () async throws(StorageError) in try await sign(Self.reference, expiresIn: .milliseconds(1500))
            } == .invalidArgument)
        let url = try await sign(Self.reference, expiresIn: .seconds(604_800))
        #expect(url.absoluteString.contains("&X-Goog-Expires=604800&"))
        let one = try await sign(Self.reference, expiresIn: .seconds(1))
        #expect(one.absoluteString.contains("&X-Goog-Expires=1&"))
    }

    @Test("no signer and an authorization that cannot sign: invalidArgument saying to pass one")
    func noSigner() async {
        do {
            _ = try await Self.reference.signedURL(expiresIn: .seconds(60))
            Issue.record("signed without a signer")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("cannot sign. Pass a signer."))
        }
    }

    @Test(
        "headers and query parameters that cannot be signed are refused",
        arguments: [
            (["Host": "example.com"], [:]),
            (["Foo": "1", "foo": "2"], [:]),
            (["bad:name": "1"], [:]),
            (["bad name": "1"], [:]),
            (["": "1"], [:]),
            (["x-a": "line\r\nInjected: 1"], [:]),
            ([:], ["X-Goog-Signature": "00"]),
            ([:], ["x-goog-credential": "someone"]),
        ] as [([String: String], [String: String])])
    func refusedArguments(_ arguments: ([String: String], [String: String])) async {
        #expect(
            await code { () async throws(StorageError) in
                try await sign(Self.reference, headers: arguments.0, query: arguments.1)
            } == .invalidArgument)
    }

    @Test("an invalid object name is a path error, as for every operation")
    func invalidName() async {
        let reference = Storage(bucket: "b").reference(withPath: "a\nb")
        #expect(await code { () async throws(StorageError) in try await sign(reference) } == .pathError)
    }

    @Test("a signed POST carries x-goog-resumable: start unless the caller signs it otherwise")
    func postSignsResumable() async throws {
        let request = try Self.reference.signingRequest(
            method: .post, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            email: account.clientEmail, at: Self.time)
        #expect(request.canonicalRequest.signedHeaders == "host;x-goog-resumable")
        #expect(request.canonicalRequest.canonicalHeaders.contains("x-goog-resumable:start\n"))
        let get = try Self.reference.signingRequest(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            email: account.clientEmail, at: Self.time)
        #expect(get.canonicalRequest.signedHeaders == "host")
    }

    @Test("an emulator endpoint keeps its scheme, host, port and path prefix; the port is not signed")
    func emulatorEndpoint() async throws {
        let storage = Storage(bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:4443/prefix/")!))
        let url = try await sign(storage.reference(withPath: "dir/a b.txt"), method: .put)
        #expect(url.absoluteString.hasPrefix("http://127.0.0.1:4443/prefix/b/dir/a%20b.txt?X-Goog-Algorithm="))
        let request = try storage.reference(withPath: "x").signingRequest(
            method: .get, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            email: account.clientEmail, at: Self.time)
        #expect(request.canonicalRequest.canonicalHeaders == "host:127.0.0.1\n")
        // A virtual-hosted URL cannot put a bucket in front of an IP address.
        #expect(
            await code { () async throws(StorageError) in
                try await sign(storage.reference(withPath: "x"), style: .virtualHosted)
            } == .invalidArgument)
    }

    @Test("Firebase's production endpoint signs for storage.googleapis.com, whose XML API serves signed URLs")
    func firebaseEndpoint() async throws {
        let firebase = Storage(bucket: "app.appspot.com", endpoint: .firebaseStorage)
        let url = try await sign(firebase.reference(withPath: "x"))
        #expect(url.absoluteString.hasPrefix("https://storage.googleapis.com/app.appspot.com/x?"))
        let virtual = try await sign(firebase.reference(withPath: "x"), style: .virtualHosted)
        #expect(virtual.absoluteString.hasPrefix("https://app.appspot.com.storage.googleapis.com/x?"))
    }

    @Test("a bucket-bound host name must be an http or https URL with a host")
    func bucketBoundHostname() async {
        for text in ["ftp://cdn.example.com", "https://cdn.example.com?x=1", "file:///tmp"] {
            #expect(
                await code { () async throws(StorageError) in
                    try await sign(Self.reference, style: .bucketBoundHostname(URL(string: text)!))
                } == .invalidArgument, "\(text)")
        }
    }

    @Test("iamSignBlob posts the string to sign with the Storage's token and makes the same URL as the key")
    func iamSignBlob() async throws {
        let key = try RSASigningKey(pem: account.privateKey)
        let transport = Self.signBlobTransport(key: key)
        let storage = Storage(
            bucket: "b", endpoint: .firebase(URL(string: "http://127.0.0.1:9199")!),
            authorization: .bearerToken("token-1"), configuration: .init(), transport: transport)
        let reference = storage.reference(withPath: "dir/a b.txt")
        let iam = SignedURLSigner.iamSignBlob(email: account.clientEmail, baseURL: URL(string: "http://127.0.0.1:1")!)
        let viaIAM = try await sign(reference, method: .put, signer: iam)
        let viaKey = try await sign(reference, method: .put)
        #expect(viaIAM == viaKey)

        let sent = try #require(transport.sent.first)
        #expect(transport.sent.count == 1)
        #expect(
            sent.url.absoluteString
                == "http://127.0.0.1:1/v1/projects/-/serviceAccounts/test-iam-credentials%40dummy-project-id.iam.gserviceaccount.com:signBlob"
        )
        // IAM takes OAuth tokens, even from a Storage that speaks Firebase's protocol.
        #expect(sent.header("Authorization") == "Bearer token-1")
        let body = try await sent.request.body.collected()
        let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
        let request = try reference.signingRequest(
            method: .put, expiresIn: .seconds(60), headers: [:], queryParameters: [:], style: .pathStyle,
            email: account.clientEmail, at: Self.time)
        #expect(Data(base64Encoded: json["payload"] ?? "") == Data(request.stringToSign.utf8))
    }

    @Test("iamSignBlob refreshes a token IAM refuses once, and reports 403 as unauthorized")
    func iamSignBlobRefusals() async throws {
        let key = try RSASigningKey(pem: account.privateKey)
        let refreshes = Mutex(0)
        let authorization = StorageAuthorization.tokenProvider { force in
            refreshes.withLock { if force { $0 += 1 } }
            return force ? "fresh" : "stale"
        }
        let base = URL(string: "http://127.0.0.1:1")!
        let retried = Self.signBlobTransport(statuses: [401, 200], key: key)
        let storage = Storage(
            bucket: "b", endpoint: .gcs(base), authorization: authorization, configuration: .init(), transport: retried)
        let iam = SignedURLSigner.iamSignBlob(email: account.clientEmail, baseURL: base)
        _ = try await sign(storage.reference(withPath: "x"), signer: iam)
        #expect(retried.sent.map { $0.header("Authorization") } == ["Bearer stale", "Bearer fresh"])
        #expect(refreshes.withLock { $0 } == 1)

        for (status, expected) in [(403, StorageErrorCode.unauthorized), (404, .invalidArgument)] {
            let refusing = Self.signBlobTransport(statuses: [status], key: key)
            let refused = Storage(
                bucket: "b", endpoint: .gcs(base), authorization: .bearerToken("t"), configuration: .init(),
                transport: refusing)
            #expect(
                await code { () async throws(StorageError) in
                    try await sign(refused.reference(withPath: "x"), signer: iam)
                } == expected)
        }
        let empty = Self.signBlobTransport(key: key, omitsSignature: true)
        let answered = Storage(
            bucket: "b", endpoint: .gcs(base), authorization: .bearerToken("t"), configuration: .init(),
            transport: empty)
        #expect(
            await code { () async throws(StorageError) in
                try await sign(answered.reference(withPath: "x"), signer: iam)
            } == .protocolViolation)
    }

    @Test("a private key signer needs an email and a usable key")
    func privateKeySigner() throws {
        #expect(throws: StorageError.self) { try SignedURLSigner.privateKey(email: "", pem: account.privateKey) }
        #expect(throws: StorageError.self) { try SignedURLSigner.privateKey(email: "a@b", pem: "not a key") }
    }
}
