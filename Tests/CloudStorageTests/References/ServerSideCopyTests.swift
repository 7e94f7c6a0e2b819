import Foundation
import HTTP1
import HTTPTestServers
import Synchronization
import Testing

@testable import CloudStorage

/// Copies, composes and moves against a scripted JSON API server, for what real servers will not
/// do on demand: rewrites of several calls, servers that never finish or lie about a result, and
/// servers without `moveTo`.
@Suite("Server-side copies (scripted server)", .timeLimit(.minutes(10)))
struct ServerSideCopyTests {
    /// One request the scripted server saw.
    struct Seen: Sendable, CustomStringConvertible {
        var method: String
        var path: String
        var query: [String: String]
        var body: Data

        var description: String { "\(method) \(path) \(query)" }
    }

    /// A scripted JSON API server: `answer` gives each request's status and JSON body, in order
    /// of arrival, over as many keep-alive connections as the client opens.
    final class Server: Sendable {
        private final class Log: Sendable {
            let seen = Mutex<[Seen]>([])
        }
        private let log = Log()
        private let server: ScriptedHTTPServer
        let storage: Storage

        init(_ answer: @escaping @Sendable (_ request: Seen, _ index: Int) -> (Int, String)) throws {
            let log = self.log
            server = try ScriptedHTTPServer { connection, _ in
                while let (head, body) = connection.readRequest() {
                    let components = URLComponents(string: head.target)
                    let request = Seen(
                        method: head.method, path: components?.percentEncodedPath ?? head.target,
                        query: Dictionary(
                            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
                            uniquingKeysWith: { first, _ in first }),
                        body: Data(body))
                    let index = log.seen.withLock { list in
                        list.append(request)
                        return list.count - 1
                    }
                    let (status, json) = answer(request, index)
                    let bytes = Array(json.utf8)
                    connection.write(
                        "HTTP/1.1 \(status) Scripted\r\nContent-Type: application/json\r\n"
                            + "Content-Length: \(bytes.count)\r\n\r\n")
                    connection.write(bytes)
                }
            }
            var configuration = StorageConfiguration()
            try configuration.retry.setInitialDelay(.milliseconds(1))
            try configuration.retry.setMaxDelay(.milliseconds(5))
            // A rewrite loop that does not progress also ends with the retry time; an hour keeps
            // the count-based ending the only one these tests meet, however slow the machine.
            try configuration.retry.setMaxOperationTime(.seconds(3600))
            storage = Storage(bucket: "b", endpoint: .gcs(server.baseURL), configuration: configuration)
        }

        var requests: [Seen] { log.seen.withLock { $0 } }

        func stop() { server.stop() }
    }

    static func resource(_ name: String, size: Int, generation: Int = 1, crc32c: UInt32? = nil) -> String {
        let crc = crc32c.map { #","crc32c":"\#(CRC32CEncoding.base64($0))""# } ?? ""
        return #"{"name":"\#(name)","bucket":"b","size":"\#(size)","generation":"\#(generation)"\#(crc)}"#
    }

    static func rewriteAnswer(
        done: Bool, copied: Int, size: Int, token: String = "", resource: String? = nil
    )
        -> String
    {
        let tail = resource.map { #","resource":\#($0)"# } ?? ""
        return #"{"kind":"storage#rewriteResponse","done":\#(done),"totalBytesRewritten":"\#(copied)","#
            + #""objectSize":"\#(size)","rewriteToken":"\#(token)"\#(tail)}"#
    }

    // MARK: Rewrite loop

    @Test func aCopyCallsAgainWithEachTokenUntilDoneAndReportsProgress() async throws {
        let server = try Server { _, index in
            switch index {
            case 0: (200, Self.rewriteAnswer(done: false, copied: 100, size: 300, token: "t/1"))
            case 1: (200, Self.rewriteAnswer(done: false, copied: 200, size: 300, token: "t+2"))
            default:
                (200, Self.rewriteAnswer(done: true, copied: 300, size: 300, resource: Self.resource("d", size: 300)))
            }
        }
        defer { server.stop() }
        let reports = Mutex<[Int64]>([])
        let copied = try await server.storage.reference(withPath: "s").copy(
            to: server.storage.bucket("other").reference(withPath: "d"),
            sourcePreconditions: StoragePreconditions(ifGenerationMatch: 4)
        ) { progress in
            #expect(progress.totalUnitCount == 300)
            reports.withLock { $0.append(progress.completedUnitCount) }
        }
        #expect(copied.path == "d" && copied.size == 300)
        #expect(reports.withLock { $0 } == [100, 200, 300])
        let requests = server.requests
        #expect(requests.count == 3)
        #expect(requests.allSatisfy { $0.method == "POST" && $0.path == "/storage/v1/b/b/o/s/rewriteTo/b/other/o/d" })
        #expect(requests.map { $0.query["rewriteToken"] } == [nil, "t/1", "t+2"])
        #expect(requests.allSatisfy { $0.query["ifSourceGenerationMatch"] == "4" }, "every call repeats the conditions")
    }

    @Test func aRewriteStepHandsOutItsTokenAndACopyContinuesFromOne() async throws {
        let server = try Server { _, index in
            switch index {
            case 0: (200, Self.rewriteAnswer(done: false, copied: 1 << 20, size: 3 << 20, token: "t/1"))
            case 1: (200, Self.rewriteAnswer(done: false, copied: 2 << 20, size: 3 << 20, token: "t+2"))
            default:
                (
                    200,
                    Self.rewriteAnswer(
                        done: true, copied: 3 << 20, size: 3 << 20, resource: Self.resource("d", size: 3 << 20))
                )
            }
        }
        defer { server.stop() }
        let source = server.storage.reference(withPath: "s")
        let destination = server.storage.reference(withPath: "d")
        let step = try await source.rewrite(
            to: destination, preconditions: .doesNotExist, maxBytesRewrittenPerCall: 1 << 20)
        #expect(
            step == StorageRewriteStep(bytesRewritten: 1 << 20, objectSize: 3 << 20, rewriteToken: "t/1", metadata: nil))
        #expect(!step.isDone)
        let copied = try await source.copy(to: destination, preconditions: .doesNotExist, rewriteToken: step.rewriteToken)
        #expect(copied.path == "d" && copied.size == 3 << 20)
        let requests = server.requests
        #expect(requests.map { $0.query["rewriteToken"] } == [nil, "t/1", "t+2"])
        #expect(requests.map { $0.query["maxBytesRewrittenPerCall"] } == ["1048576", nil, nil])
        #expect(requests.allSatisfy { $0.query["ifGenerationMatch"] == "0" })
    }

    @Test func aLastRewriteStepCarriesTheCopysMetadataAndNoToken() async throws {
        let server = try Server { _, _ in
            (200, Self.rewriteAnswer(done: true, copied: 9, size: 9, resource: Self.resource("d", size: 9)))
        }
        defer { server.stop() }
        let step = try await server.storage.reference(withPath: "s").rewrite(
            to: server.storage.reference(withPath: "d"))
        #expect(step.isDone && step.rewriteToken == nil && step.metadata?.size == 9 && step.bytesRewritten == 9)
    }

    @Test(arguments: [0, -(1 << 20), 1000, (1 << 20) + 1])
    func aRewriteLimitThatIsNoMultipleOfAMebibyteIsRefusedBeforeAnyRequest(limit: Int64) async throws {
        let server = try Server { _, _ in (500, "{}") }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "s").rewrite(
                to: server.storage.reference(withPath: "d"), maxBytesRewrittenPerCall: limit)
        }
        #expect(error?.code == .invalidArgument)
        #expect(server.requests.isEmpty)
    }

    @Test func aRewriteThatNeverProgressesEndsAsAProtocolViolation() async throws {
        let server = try Server { _, _ in (200, Self.rewriteAnswer(done: false, copied: 5, size: 10, token: "same")) }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "s").copy(to: server.storage.reference(withPath: "d"))
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains("without copying a mebibyte more") == true)
        // 5 of 10 bytes is not the rest, nor a mebibyte: no answer is progress.
        #expect(server.requests.count == StorageReference.maxRewriteCallsWithoutProgress)
    }

    /// A server that reports one more byte each call (once seen looping 98,803 times in 30 s)
    /// does not keep the copy going: progress is at least a mebibyte, or the rest.
    @Test func aRewriteThatCreepsForwardAByteACallEnds() async throws {
        let size = 64 << 20
        let server = try Server { _, index in
            (200, Self.rewriteAnswer(done: false, copied: (2 << 20) + index, size: size, token: "t\(index)"))
        }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "s").copy(to: server.storage.reference(withPath: "d"))
        }
        #expect(error?.code == .protocolViolation)
        // The first answer copied 2 MiB (progress); then ten that crept by a byte each.
        #expect(server.requests.count == 1 + StorageReference.maxRewriteCallsWithoutProgress)
    }

    @Test func aRewriteWhoseObjectSizeChangesMidwayIsAProtocolViolation() async throws {
        let server = try Server { _, index in
            (200, Self.rewriteAnswer(done: false, copied: 5 + index, size: index == 0 ? 10 : 20, token: "t"))
        }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "s").copy(to: server.storage.reference(withPath: "d"))
        }
        #expect(error?.code == .protocolViolation)
        #expect(server.requests.count == 2)
    }

    @Test func cancellingTheCallingTaskStopsACopyThatWouldGoOnForLong() async throws {
        let server = try Server { _, index in
            (200, Self.rewriteAnswer(done: false, copied: index + 1, size: 1 << 40, token: "t\(index)"))
        }
        defer { server.stop() }
        let (started, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let copy = Task {
            try await server.storage.reference(withPath: "s").copy(to: server.storage.reference(withPath: "d")) {
                progress in
                if progress.completedUnitCount >= 3 { signal.yield() }
            }
        }
        for await _ in started { break }
        copy.cancel()
        let error = await #expect(throws: StorageError.self) { try await copy.value }
        #expect(error?.code == .cancelled)
        signal.finish()
        let count = server.requests.count
        #expect(count >= 3)
        // Nothing more goes out once the copy has ended; the server may still be reading the one
        // request that was in flight when the cancellation landed.
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.requests.count <= count + 1)
    }

    // MARK: Compose

    @Test func aComposeIsOneRequestNamingPinnedSourcesGenerations() async throws {
        let crc: UInt32 = 0x1234_5678
        let server = try Server { _, _ in (200, Self.resource("whole", size: 34, generation: 77, crc32c: crc)) }
        defer { server.stop() }
        let sources = [
            server.storage.reference(withPath: "p0"), server.storage.reference(withPath: "p1").atGeneration(11),
            server.storage.reference(withPath: "p0"),
        ]
        let composed = try await server.storage.reference(withPath: "whole")
            .compose(from: sources, preconditions: .doesNotExist)
        #expect(composed.crc32cValue == crc && composed.generation == 77 && composed.size == 34)
        #expect(server.requests.count == 1, "no source is read first")
        let compose = try #require(server.requests.first)
        #expect(compose.method == "POST" && compose.path == "/storage/v1/b/b/o/whole/compose")
        #expect(compose.query == ["ifGenerationMatch": "0"])
        let body = try #require(try JSONSerialization.jsonObject(with: compose.body) as? [String: Any])
        let sent = try #require(body["sourceObjects"] as? [[String: Any]])
        #expect(sent.map { $0["name"] as? String } == ["p0", "p1", "p0"])
        #expect(sent.map { $0["generation"] as? String } == [nil, "11", nil], "only a pinned source names one")
        #expect(sent.allSatisfy { $0["objectPreconditions"] == nil })
    }

    @Test func aComposeAnswerThatIsNoObjectIsAProtocolViolation() async throws {
        let server = try Server { _, _ in (200, "[1, 2]") }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "w").compose(from: [
                server.storage.reference(withPath: "p"), server.storage.reference(withPath: "p"),
            ])
        }
        #expect(error?.code == .protocolViolation)
    }

    @Test func composeArgumentsAreCheckedBeforeAnyRequest() async throws {
        let server = try Server { _, _ in (500, "{}") }
        defer { server.stop() }
        let destination = server.storage.reference(withPath: "w")
        let one = server.storage.reference(withPath: "p")
        let cases: [(String, @Sendable () async throws -> StorageMetadata)] = [
            ("no sources", { try await destination.compose(from: []) }),
            ("33 sources", { try await destination.compose(from: Array(repeating: one, count: 33)) }),
            (
                "another bucket",
                { try await destination.compose(from: [server.storage.bucket("x").reference(withPath: "p")]) }
            ),
            (
                "a not-match condition",
                {
                    try await destination.compose(
                        from: [one], preconditions: StoragePreconditions(ifGenerationNotMatch: 1))
                }
            ),
            (
                "Firebase",
                {
                    try await Storage(bucket: "b", endpoint: .firebase(URL(string: "http://127.0.0.1:9")!))
                        .reference(withPath: "w").compose(from: [one])
                }
            ),
        ]
        for (label, operation) in cases {
            let error = await #expect(throws: StorageError.self, "\(label)") { try await operation() }
            #expect(error?.code == .invalidArgument, "\(label)")
        }
        #expect(server.requests.isEmpty)
    }

    // MARK: Move

    @Test func anAtomicMoveIsOneRequest() async throws {
        let server = try Server { _, _ in (200, Self.resource("to", size: 3, generation: 8)) }
        defer { server.stop() }
        let moved = try await server.storage.reference(withPath: "from").move(
            to: server.storage.reference(withPath: "to"), preconditions: .doesNotExist)
        #expect(moved.path == "to" && moved.generation == 8)
        let requests = server.requests
        #expect(requests.count == 1)
        #expect(requests.first?.path == "/storage/v1/b/b/o/from/moveTo/o/to")
        #expect(requests.first?.query == ["ifGenerationMatch": "0"])
    }

    /// 400, 404, 405 and 501 mean "no moveTo here": the move copies and deletes, pinned to the
    /// generation it read; 501, though a server error, is not retried.
    @Test(arguments: [400, 404, 405, 501])
    func withoutMoveToAMoveCopiesThenDeletesTheGenerationItCopied(status: Int) async throws {
        let server = try Server { request, _ in
            switch request.method {
            case "POST" where request.path.contains("/moveTo/"): (status, #"{"error":{"message":"no"}}"#)
            case "GET": (200, Self.resource("from", size: 3, generation: 41))
            case "POST":
                (
                    200,
                    Self.rewriteAnswer(
                        done: true, copied: 3, size: 3, resource: Self.resource("to", size: 3, generation: 9))
                )
            default: (204, "")
            }
        }
        defer { server.stop() }
        let moved = try await server.storage.reference(withPath: "from").move(
            to: server.storage.reference(withPath: "to"))
        #expect(moved.path == "to" && moved.generation == 9)
        let requests = server.requests
        #expect(requests.map(\.method) == ["POST", "GET", "POST", "DELETE"], "\(requests)")
        #expect(requests[2].path == "/storage/v1/b/b/o/from/rewriteTo/b/b/o/to")
        #expect(requests[2].query["ifSourceGenerationMatch"] == "41")
        #expect(requests[3].path == "/storage/v1/b/b/o/from" && requests[3].query["ifGenerationMatch"] == "41")
    }

    @Test func aMoveBetweenBucketsCopiesThenDeletesAndKeepsASourceReplacedMeanwhile() async throws {
        let server = try Server { request, _ in
            switch request.method {
            case "GET": (200, Self.resource("from", size: 3, generation: 41))
            case "POST":
                (200, Self.rewriteAnswer(done: true, copied: 3, size: 3, resource: Self.resource("to", size: 3)))
            default: (412, #"{"error":{"message":"conditionNotMet"}}"#)
            }
        }
        defer { server.stop() }
        let error = await #expect(throws: StorageError.self) {
            try await server.storage.reference(withPath: "from").move(
                to: server.storage.bucket("elsewhere").reference(withPath: "to"))
        }
        #expect(error?.code == .preconditionFailed)
        #expect(error?.message.contains("both objects were kept") == true)
        #expect(server.requests.map(\.method) == ["GET", "POST", "DELETE"], "no moveTo between buckets")
        #expect(server.requests[1].path == "/storage/v1/b/b/o/from/rewriteTo/b/elsewhere/o/to")
    }

    @Test func copiesAndMovesRefuseWhatTheyCannotDoBeforeAnyRequest() async throws {
        let server = try Server { _, _ in (500, "{}") }
        defer { server.stop() }
        let source = server.storage.reference(withPath: "s")
        let firebase = Storage(bucket: "b", endpoint: .firebase(server.storage.endpoint.baseURL))
        let elsewhere = Storage(bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:9")!))
        let cases: [(String, @Sendable () async throws -> StorageMetadata)] = [
            (
                "Firebase copy",
                { try await firebase.reference(withPath: "s").copy(to: firebase.reference(withPath: "d")) }
            ),
            (
                "Firebase move",
                { try await firebase.reference(withPath: "s").move(to: firebase.reference(withPath: "d")) }
            ),
            ("another endpoint", { try await source.copy(to: elsewhere.reference(withPath: "d")) }),
            ("onto itself", { try await source.move(to: source) }),
            ("the root", { try await source.copy(to: server.storage.reference()) }),
        ]
        for (label, operation) in cases {
            let error = await #expect(throws: StorageError.self, "\(label)") { try await operation() }
            #expect(error?.code == .invalidArgument, "\(label)")
        }
        #expect(server.requests.isEmpty)
    }
}
