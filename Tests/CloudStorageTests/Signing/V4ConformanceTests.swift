import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// One of Google's V4 signing conformance cases (`signingV4Tests` in
/// googleapis/conformance-tests' storage/v1/v4_signatures.json).
struct V4ConformanceCase: Decodable, Sendable, CustomTestStringConvertible {
    var description: String
    var bucket: String
    var object: String?
    var method: String
    var expiration: Int64
    var timestamp: String
    var headers: [String: String]?
    var queryParameters: [String: String]?
    var scheme: String?
    var urlStyle: String?
    var bucketBoundHostname: String?
    var hostname: String?
    var clientEndpoint: String?
    var emulatorHostname: String?
    var universeDomain: String?
    var expectedUrl: String
    var expectedCanonicalRequest: String
    var expectedStringToSign: String

    var testDescription: String { description }

    private struct File: Decodable {
        var signingV4Tests: [V4ConformanceCase]
    }

    /// Every case in the committed file.
    static func all() throws -> [V4ConformanceCase] {
        let data = try Data(contentsOf: TestCredentials.url("conformance/v4_signatures.json"))
        return try JSONDecoder().decode(File.self, from: data).signingV4Tests
    }

    /// Cases whose expected canonical request (and so string to sign) disagrees with their
    /// own expected URL, with the correction: the URL is checked exactly, the canonical request
    /// after the correction.
    ///
    /// "Universe domain with virtual hosted style": the URL is virtual-hosted (host
    /// test-bucket.storage.domain.com, path /test-object) and its signature covers that path,
    /// as the emulator's verifier confirms on Google's URL; the case's canonical request lists
    /// the path-style path /test-bucket/test-object instead. The same style on the default
    /// universe ("Virtual Hosted Style") signs /test-object.
    static let correctedCanonicalPaths: [String: (listed: String, signed: String)] = [
        "Universe domain with virtual hosted style": ("\n/test-bucket/test-object\n", "\n/test-object\n")
    ]

    /// The cases to run: all of them.
    static let runnable: [V4ConformanceCase] = (try? all()) ?? []

    /// The endpoint the case's client settings amount to. Google's clients take the first of
    /// an explicit host name, the client's endpoint, `STORAGE_EMULATOR_HOST`, then the
    /// universe domain's `storage.<domain>`; here each is a ``StorageEndpoint/gcs(_:)`` base URL.
    var endpoint: StorageEndpoint {
        let defaultScheme = scheme ?? "https"
        func url(_ text: String) -> URL {
            URL(string: text.contains("://") ? text : "\(defaultScheme)://\(text)")!
        }
        if let hostname { return .gcs(url(hostname)) }
        if let clientEndpoint { return .gcs(url(clientEndpoint)) }
        if let emulatorHostname { return .gcs(url(emulatorHostname)) }
        if let universeDomain { return .gcs(url("storage.\(universeDomain)")) }
        return .gcs(url("storage.googleapis.com"))
    }

    var style: SignedURLStyle {
        switch urlStyle {
        case "VIRTUAL_HOSTED_STYLE": .virtualHosted
        case "BUCKET_BOUND_HOSTNAME":
            .bucketBoundHostname(URL(string: "\(scheme ?? "https")://\(bucketBoundHostname!)")!)
        default: .pathStyle
        }
    }

    var date: Date {
        get throws { try Date(timestamp, strategy: .iso8601) }
    }
}

/// Google's dummy service account for the conformance cases.
struct ConformanceServiceAccount: Decodable {
    var clientEmail: String
    var privateKey: String

    private enum CodingKeys: String, CodingKey {
        case clientEmail = "client_email"
        case privateKey = "private_key"
    }

    static func load() throws -> ConformanceServiceAccount {
        let data = try Data(contentsOf: TestCredentials.url("conformance/test_service_account.not-a-test.json"))
        return try JSONDecoder().decode(ConformanceServiceAccount.self, from: data)
    }

    func signer() throws -> SignedURLSigner {
        try SignedURLSigner.privateKey(email: clientEmail, pem: privateKey)
    }
}

@Suite("V4 signed URLs: Google's conformance cases")
struct V4ConformanceTests {
    @Test("the conformance file decodes, and every corrected case exists")
    func fileAndCorrections() throws {
        let all = try V4ConformanceCase.all()
        #expect(all.count == 29)
        #expect(V4ConformanceCase.runnable.count == all.count)
        let names = Set(all.map(\.description))
        for name in V4ConformanceCase.correctedCanonicalPaths.keys {
            #expect(names.contains(name), "corrected case \(name) is not in the file")
        }
    }

    @Test(
        "canonical request, string to sign and URL match exactly",
        arguments: V4ConformanceCase.runnable)
    func conformance(_ testCase: V4ConformanceCase) async throws {
        let account = try ConformanceServiceAccount.load()
        let signer = try account.signer()
        let storage = Storage(bucket: testCase.bucket, endpoint: testCase.endpoint)
        let method = try #require(SignedURLMethod(rawValue: testCase.method))
        let headers = testCase.headers ?? [:]
        let query = testCase.queryParameters ?? [:]

        // The signer on the case's raw object name.
        let target = try storage.reference().signedURLTarget(object: testCase.object, style: testCase.style)
        let request = try V4SignedURLRequest(
            method: method.rawValue, target: target, email: account.clientEmail, timestamp: try testCase.date,
            expiresIn: .seconds(testCase.expiration), headers: headers, queryParameters: query)
        if let correction = V4ConformanceCase.correctedCanonicalPaths[testCase.description] {
            #expect(testCase.expectedCanonicalRequest.contains(correction.listed))
            let corrected = testCase.expectedCanonicalRequest.replacingOccurrences(
                of: correction.listed, with: correction.signed)
            #expect(request.canonicalRequest.text == corrected)
        } else {
            #expect(request.canonicalRequest.text == testCase.expectedCanonicalRequest)
            #expect(request.stringToSign == testCase.expectedStringToSign)
        }
        let signature = try await signer.sign(Array(request.stringToSign.utf8), for: storage)
        #expect(try request.url(signature: signature).absoluteString == testCase.expectedUrl)

        // The same through a reference. References normalize their paths, so the public API
        // cannot name an object whose name starts with '/' ("Forward Slashes should not be
        // stripped"): that case is checked on the raw name above only.
        guard testCase.object?.hasPrefix("/") != true else { return }
        let reference = testCase.object.map { storage.reference(withPath: $0) } ?? storage.reference()
        let url = try await reference.signedURL(
            method: method, expiresIn: .seconds(testCase.expiration), headers: headers, queryParameters: query,
            style: testCase.style, signer: signer, at: try testCase.date)
        #expect(url.absoluteString == testCase.expectedUrl)
    }
}
