import Foundation
import HTTP1
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The requests server-side copies, composes and moves build, and how rewrite answers are read,
/// without a network.
@Suite("Server-side copy protocol")
struct ServerSideCopyProtocolTests {
    static let gcs = GCSJSONProtocol(baseURL: URL(string: "https://example.test")!)
    static let v0 = FirebaseV0Protocol(baseURL: URL(string: "https://example.test")!)

    private func json(_ request: HTTPRequest) throws -> [String: Any] {
        guard case .data(let data) = try #require(request.body.segments.first) else {
            Issue.record("the body is not in memory")
            return [:]
        }
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func query(_ request: HTTPRequest) -> [String: String] {
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test func rewriteNamesBothObjectsBothSetsOfConditionsAndTheToken() throws {
        var metadata = StorageMetadata()
        metadata.storageClass = "NEARLINE"
        metadata.contentType = "text/plain"
        let copy = ServerSideCopy(
            sourceBucket: "src", sourceName: "a/b c", destinationBucket: "dst", destinationName: "d/e+f",
            metadata: metadata, preconditions: .doesNotExist,
            sourcePreconditions: StoragePreconditions(ifGenerationMatch: 7, ifMetagenerationNotMatch: 2),
            maxBytesRewrittenPerCall: 1_048_576)
        let first = try #require(Self.gcs.rewrite(copy, rewriteToken: nil))
        #expect(first.method == "POST")
        #expect(!first.isIdempotent)
        #expect(first.url.path(percentEncoded: true) == "/storage/v1/b/src/o/a%2Fb%20c/rewriteTo/b/dst/o/d%2Fe%2Bf")
        #expect(
            query(first) == [
                "ifGenerationMatch": "0", "ifSourceGenerationMatch": "7", "ifSourceMetagenerationNotMatch": "2",
                "maxBytesRewrittenPerCall": "1048576",
            ])
        #expect(first.headers["Content-Type"]?.hasPrefix("application/json") == true)
        let body = try json(first)
        #expect(body["storageClass"] as? String == "NEARLINE")
        #expect(body["contentType"] as? String == "text/plain")
        #expect(body["name"] == nil, "the destination is named by the URL")

        // A later call carries the same parameters and the token, which is percent-encoded.
        let next = try #require(Self.gcs.rewrite(copy, rewriteToken: "t/o+k=n"))
        #expect(query(next)["rewriteToken"] == "t/o+k=n")
        #expect(next.url.absoluteString.contains("rewriteToken=t%2Fo%2Bk%3Dn"))
        #expect(try json(next) as NSDictionary == body as NSDictionary)

        // Without metadata the body is empty, so the copy keeps the source's.
        let plain = ServerSideCopy(sourceBucket: "s", sourceName: "o", destinationBucket: "s", destinationName: "p")
        let request = try #require(Self.gcs.rewrite(plain, rewriteToken: nil))
        #expect(try json(request).isEmpty)
        #expect(query(request).isEmpty)
    }

    @Test func composeSendsEachSourceWithItsPinnedGenerationAndTheDestinationsMetadata() throws {
        var metadata = StorageMetadata()
        metadata.contentType = "video/mp4"
        metadata.customMetadata = ["k": "v"]
        let request = try #require(
            Self.gcs.compose(
                bucket: "b", name: "v/full.mp4",
                sources: [ComposeSource(name: "p/0"), ComposeSource(name: "p/1", generation: 12)],
                metadata: metadata, preconditions: StoragePreconditions(ifGenerationMatch: 3, ifMetagenerationMatch: 1))
        )
        #expect(request.method == "POST")
        #expect(request.url.path(percentEncoded: true) == "/storage/v1/b/b/o/v%2Ffull.mp4/compose")
        #expect(query(request) == ["ifGenerationMatch": "3", "ifMetagenerationMatch": "1"])
        let body = try json(request)
        let destination = try #require(body["destination"] as? [String: Any])
        #expect(destination["contentType"] as? String == "video/mp4")
        #expect(destination["metadata"] as? [String: String] == ["k": "v"])
        let sources = try #require(body["sourceObjects"] as? [[String: Any]])
        #expect(sources.map { $0["name"] as? String } == ["p/0", "p/1"])
        #expect(sources.map { $0["generation"] as? String } == [nil, "12"])
        #expect(sources.allSatisfy { $0["objectPreconditions"] == nil })
    }

    @Test func moveIsOnePOSTWithinTheBucketCarryingBothSetsOfConditions() throws {
        let request = try #require(
            Self.gcs.move(
                bucket: "b", from: "in/x y", to: "out/x y", preconditions: .doesNotExist,
                sourcePreconditions: StoragePreconditions(ifGenerationMatch: 5)))
        #expect(request.method == "POST")
        #expect(!request.isIdempotent)
        #expect(request.body.length == 0)
        #expect(request.url.path(percentEncoded: true) == "/storage/v1/b/b/o/in%2Fx%20y/moveTo/o/out%2Fx%20y")
        #expect(query(request) == ["ifGenerationMatch": "0", "ifSourceGenerationMatch": "5"])
    }

    @Test func firebaseV0HasNoServerSideOperations() {
        let copy = ServerSideCopy(sourceBucket: "b", sourceName: "a", destinationBucket: "b", destinationName: "c")
        #expect(Self.v0.rewrite(copy, rewriteToken: nil) == nil)
        #expect(Self.v0.compose(bucket: "b", name: "c", sources: [], metadata: .init(), preconditions: .none) == nil)
        #expect(
            Self.v0.move(bucket: "b", from: "a", to: "c", preconditions: .none, sourcePreconditions: .none) == nil)
    }

    // MARK: Rewrite answers

    @Test func anUnfinishedRewriteGivesItsProgressAndToken() throws {
        let status = try RewriteStatus(
            json: Data(
                #"{"kind":"storage#rewriteResponse","totalBytesRewritten":"1048576","objectSize":"10485760","done":false,"rewriteToken":"tok"}"#
                    .utf8))
        #expect(status.totalBytesRewritten == 1_048_576 && status.objectSize == 10_485_760)
        #expect(status.next == .continueWith(token: "tok"))
    }

    @Test func aFinishedRewriteGivesTheNewObject() throws {
        let status = try RewriteStatus(
            json: Data(
                #"""
                {"totalBytesRewritten":3,"objectSize":"3","done":true,"rewriteToken":"",
                 "resource":{"name":"c","bucket":"b","size":"3","generation":"9","storageClass":"COLDLINE"}}
                """#.utf8))
        guard case .done(let metadata) = status.next else {
            Issue.record("not done: \(status)")
            return
        }
        #expect(metadata.path == "c" && metadata.generation == 9 && metadata.storageClass == "COLDLINE")
        #expect(status.totalBytesRewritten == 3 && status.objectSize == 3)
    }

    @Test(arguments: [
        "", "[]", "not json",
        #"{"totalBytesRewritten":"1","objectSize":"2"}"#,  // no done
        #"{"done":false,"objectSize":"2","rewriteToken":"t"}"#,  // no count
        #"{"done":false,"totalBytesRewritten":"x","objectSize":"2","rewriteToken":"t"}"#,
        #"{"done":false,"totalBytesRewritten":"-1","objectSize":"2","rewriteToken":"t"}"#,
        #"{"done":false,"totalBytesRewritten":"3","objectSize":"2","rewriteToken":"t"}"#,  // beyond the size
        #"{"done":false,"totalBytesRewritten":"1","objectSize":"2"}"#,  // no token
        #"{"done":false,"totalBytesRewritten":"1","objectSize":"2","rewriteToken":""}"#,
        #"{"done":"false","totalBytesRewritten":"1","objectSize":"2","rewriteToken":"t"}"#,
        #"{"done":true,"totalBytesRewritten":"2","objectSize":"2"}"#,  // no resource
        #"{"done":true,"totalBytesRewritten":"1","objectSize":"2","resource":{"name":"c","size":"2"}}"#,
        #"{"done":true,"totalBytesRewritten":"2","objectSize":"2","resource":{"name":"c","size":"5"}}"#,
        #"{"done":true,"totalBytesRewritten":"2","objectSize":"2","resource":{"name":"c","size":true}}"#,
        #"{"done":true,"totalBytesRewritten":"2","objectSize":"2","resource":"c"}"#,
    ])
    func rewriteAnswersThatBreakTheProtocolAreViolations(body: String) {
        let error = #expect(throws: StorageError.self) { try RewriteStatus(json: Data(body.utf8)) }
        #expect(error?.code == .protocolViolation)
    }
}
