import Foundation
import HTTP1
import NativeTLS
import Testing

@testable import StorageEmulator

/// Google's V4 conformance cases, as the emulator's verifier sees them: the URL Google's
/// signers produced, and the headers the case signs.
struct VerifierConformanceCase: Decodable, Sendable, CustomTestStringConvertible {
    var description: String
    var method: String
    var expiration: Int64
    var timestamp: String
    var headers: [String: String]?
    var expectedUrl: String

    var testDescription: String { description }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TestCredentials/conformance")

    private struct File: Decodable { var signingV4Tests: [VerifierConformanceCase] }

    static let all: [VerifierConformanceCase] =
        (try? JSONDecoder().decode(
            File.self, from: Data(contentsOf: directory.appendingPathComponent("v4_signatures.json"))
        )
        .signingV4Tests) ?? []

    /// The key of Google's dummy service account (a private key verifies as its public half).
    static func key() throws -> (email: String, key: RSAKey) {
        let data = try Data(contentsOf: directory.appendingPathComponent("test_service_account.not-a-test.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let email = try #require(json["client_email"] as? String)
        let pem = try #require(json["private_key"] as? String)
        return (email, try RSAKey(privateKeyPEM: Array(pem.utf8)))
    }

    var date: Date { get throws { try Date(timestamp, strategy: .iso8601) } }

    /// The request a client sends with this URL.
    func request(url text: String? = nil, method: String? = nil) throws -> V4SignatureVerifier.Request {
        let url = try #require(URLComponents(string: text ?? expectedUrl))
        let target = try #require(RequestTarget(url.percentEncodedPath + "?" + (url.percentEncodedQuery ?? "")))
        var fields = HTTPHeaders()
        fields.add("Host", try #require(url.host) + (url.port.map { ":\($0)" } ?? ""))
        for (name, value) in headers ?? [:] { fields.add(name, value) }
        return .init(method: method ?? self.method, path: target.path, queryItems: target.queryItems, headers: fields)
    }
}

@Suite("V4 signature verification in the emulator")
struct V4SignatureVerifierTests {
    let account: (email: String, key: RSAKey)

    init() throws {
        account = try VerifierConformanceCase.key()
    }

    var verifier: V4SignatureVerifier { V4SignatureVerifier(publicKeys: [account.email: account.key]) }

    static func simpleGET() throws -> VerifierConformanceCase {
        try #require(VerifierConformanceCase.all.first { $0.description == "Simple GET" })
    }

    static func status(_ body: () throws(HTTPError) -> V4SignatureVerifier.Verified) -> (Int, String)? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error.status, error.reason)
        }
    }

    @Test(
        "accepts every URL Google's signers made, at its first and its last valid second",
        arguments: VerifierConformanceCase.all)
    func acceptsGoogleURLs(_ testCase: VerifierConformanceCase) throws {
        #expect(VerifierConformanceCase.all.count == 29)
        let request = try testCase.request()
        let start = try testCase.date
        let verified = try verifier.verify(request, now: start)
        #expect(verified.email == account.email)
        // Only the signed-payload case's signature covers a body hash, which the caller checks.
        let signsPayload = testCase.headers?["X-Goog-Content-SHA256"]
        #expect(verified.payloadHash == signsPayload)
        #expect(
            try verifier.verify(request, now: start.addingTimeInterval(Double(testCase.expiration) - 0.5))
                .email == account.email)
    }

    @Test("an expired URL, or one not valid yet, is refused with 400 ExpiredToken")
    func expiry() throws {
        let testCase = try Self.simpleGET()
        let request = try testCase.request()
        let start = try testCase.date
        for now in [start.addingTimeInterval(Double(testCase.expiration)), start.addingTimeInterval(-1)] {
            let refusal = Self.status { () throws(HTTPError) in try verifier.verify(request, now: now) }
            #expect(refusal?.0 == 400)
            #expect(refusal?.1 == "ExpiredToken")
        }
    }

    @Test("tampering with the path, a query value, the method, a signed header or the host is refused with 403")
    func tampering() throws {
        let testCase = try Self.simpleGET()
        let headerCase = try #require(VerifierConformanceCase.all.first { $0.description == "Simple headers" })
        let now = try testCase.date
        let url = testCase.expectedUrl
        var requests: [V4SignatureVerifier.Request] = [
            try testCase.request(url: url.replacingOccurrences(of: "test-object", with: "other-object")),
            try testCase.request(url: url.replacingOccurrences(of: "test-bucket", with: "test-bucket2")),
            try testCase.request(url: url + "&extra=1"),
            try testCase.request(method: "DELETE"),
            try testCase.request(url: url.replacingOccurrences(of: "storage.googleapis.com", with: "evil.example")),
            try testCase.request(url: url.replacingOccurrences(of: "X-Goog-Signature=95", with: "X-Goog-Signature=96")),
        ]
        var changedHeader = try headerCase.request()
        changedHeader.headers.set("foo", "other-value")
        requests.append(changedHeader)
        var missingHeader = try headerCase.request()
        missingHeader.headers.remove("BAR")
        requests.append(missingHeader)
        for request in requests {
            let refusal = Self.status { () throws(HTTPError) in try verifier.verify(request, now: now) }
            #expect(refusal?.0 == 403, "\(request.method) \(request.path) \(request.queryItems)")
            #expect(refusal?.1 == "SignatureDoesNotMatch")
        }
    }

    @Test("an account the emulator does not know is refused with 403")
    func unknownAccount() throws {
        let testCase = try Self.simpleGET()
        let request = try testCase.request()
        let now = try testCase.date
        let refusal = Self.status { () throws(HTTPError) in
            try V4SignatureVerifier(publicKeys: [:]).verify(request, now: now)
        }
        #expect(refusal?.0 == 403)
        #expect(refusal?.1 == "SignatureDoesNotMatch")
    }

    @Test(
        "malformed signature parameters are refused with 400",
        arguments: [
            ("X-Goog-Algorithm=GOOG4-RSA-SHA256", "X-Goog-Algorithm=GOOG4-HMAC-SHA256"),
            ("X-Goog-Date=20190201T090000Z", "X-Goog-Date=2019-02-01"),
            ("X-Goog-Date=20190201T090000Z", "X-Goog-Date=20190201T090000Z&X-Goog-Date=20190201T090000Z"),
            ("X-Goog-Expires=10", "X-Goog-Expires=604801"),
            ("X-Goog-Expires=10", "X-Goog-Expires=-1"),
            ("X-Goog-Expires=10", "X-Goog-Expires=99999999999999999999999"),
            ("%2F20190201%2F", "%2F20190202%2F"),
            ("X-Goog-SignedHeaders=host", "X-Goog-SignedHeaders=Host"),
            ("X-Goog-SignedHeaders=host", "X-Goog-SignedHeaders=x-goog-date"),
            ("X-Goog-Signature=95", "X-Goog-Signature=zz"),
            ("X-Goog-Algorithm=GOOG4-RSA-SHA256&", ""),
        ])
    func malformed(_ change: (String, String)) throws {
        let testCase = try Self.simpleGET()
        #expect(testCase.expectedUrl.contains(change.0))
        let request = try testCase.request(url: testCase.expectedUrl.replacingOccurrences(of: change.0, with: change.1))
        let now = try testCase.date
        let refusal = Self.status { () throws(HTTPError) in try verifier.verify(request, now: now) }
        #expect(refusal?.0 == 400)
        #expect(refusal?.1 == "AuthorizationQueryParametersError")
    }
}
