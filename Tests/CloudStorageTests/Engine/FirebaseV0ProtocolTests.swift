import Foundation
import HTTP1
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Uploads over Firebase Storage v0, driven through the scripted v0 server:
/// the exact requests of each step, resumption from the server's committed
/// size, sessions that end under the engine, and the answers it must read.
@Suite("Firebase v0 protocol", .timeLimit(.minutes(10)))
struct FirebaseV0ProtocolTests {
    static let size = 3 * 256 * 1024 + 17

    static func storage(
        _ transport: ScriptedFirebaseTransport,
        base: URL = ScriptedFirebaseTransport.base,
        authorization: StorageAuthorization = .none,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.uploads.multipartThreshold = 0
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try $0.retry.setMaxDelay(.milliseconds(20))
            try $0.retry.setMaxUploadTime(.seconds(5))
            try configure(&$0)
        }
        return Storage(
            bucket: "b",
            endpoint: .firebase(base),
            authorization: authorization,
            configuration: configuration,
            transport: transport
        )
    }

    @Test func startChunksAndFinalizeSendExactlyTheProtocolsHeaders() async throws {
        let transport = ScriptedFirebaseTransport()
        let payload = TestSupport.payload(size: Self.size, seed: 1)
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        metadata.customMetadata = ["k": "v"]
        let storage = Self.storage(transport, authorization: .bearerToken("t")) {
            try $0.uploads.setChunkSize(512 * 1024)
        }
        let stored = try await storage.reference(withPath: "dir/obj").putDataAsync(payload, metadata: metadata)

        #expect(transport.finalized == payload)
        #expect(stored.size == Int64(Self.size))
        #expect(stored.path == "dir/obj")
        #expect(stored.crc32cValue == CRC32C.checksum(payload), "the emulator's decimal CRC32C is read")
        #expect(stored.downloadTokens == ["token-1", "token-2"])

        let exchanges = transport.exchanges
        try #require(exchanges.count == 3)
        let start = exchanges[0]
        #expect(start.method == "POST")
        #expect(start.url.absoluteString == "http://127.0.0.1:9/v0/b/b/o?name=dir%2Fobj")
        #expect(start.headers["X-Goog-Upload-Protocol"] == "resumable")
        #expect(start.headers["X-Goog-Upload-Command"] == "start")
        #expect(start.headers["X-Goog-Upload-Header-Content-Length"] == String(Self.size))
        #expect(start.headers["X-Goog-Upload-Header-Content-Type"] == "text/plain")
        #expect(start.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(
            String(decoding: start.body, as: UTF8.self)
                == #"{"contentType":"text/plain","metadata":{"k":"v"},"name":"dir/obj"}"#,
            "v0 metadata carries no checksum")

        let uploads = exchanges.dropFirst()
        #expect(uploads.allSatisfy { $0.method == "POST" && $0.url.query?.contains("upload_id=1") == true })
        #expect(uploads.map(\.command) == ["upload", "upload, finalize"])
        #expect(uploads.map { $0.headers["X-Goog-Upload-Offset"] } == ["0", "524288"])
        #expect(uploads.map(\.body.count) == [524_288, Self.size - 524_288])
        #expect(exchanges.allSatisfy { $0.headers["Authorization"] == "Firebase t" })
        #expect(exchanges.allSatisfy { $0.headers["Content-Range"] == nil && $0.headers["X-Goog-Hash"] == nil })
    }

    @Test func aDroppedConnectionResumesFromTheSizeReceived() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.commitThenDrop(300_000), when: ScriptedFirebaseTransport.isUpload)
        let payload = TestSupport.payload(size: Self.size, seed: 2)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.finalized == payload)
        let steps = transport.exchanges.dropFirst().map {
            "\($0.command ?? "") @\($0.headers["X-Goog-Upload-Offset"] ?? "-")"
        }
        #expect(steps == ["upload, finalize @0", "query @-", "upload, finalize @300000"])
        #expect(transport.sessionsStarted == 1)
    }

    @Test func aPartialCommitReportedInSizeReceivedIsResentFromThere() async throws {
        let transport = ScriptedFirebaseTransport(reportsSizeOnUpload: true)
        transport.inject(.commitOnly(100_000), when: ScriptedFirebaseTransport.isUpload)
        let payload = TestSupport.payload(size: Self.size, seed: 3)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.finalized == payload)
        let offsets = transport.exchanges.dropFirst().map { $0.headers["X-Goog-Upload-Offset"] }
        #expect(offsets == ["0", "100000"], "no query needed: the answer said what was kept")
    }

    @Test func anAnswerWithoutSizeReceivedCommitsWhatWasSent() async throws {
        let transport = ScriptedFirebaseTransport(reportsSizeOnUpload: false)
        let payload = TestSupport.payload(size: Self.size, seed: 4)
        let storage = Self.storage(transport) { try $0.uploads.setChunkSize(256 * 1024) }
        _ = try await storage.reference(withPath: "o").putDataAsync(payload)
        #expect(transport.finalized == payload)
        let offsets = transport.exchanges.dropFirst().map { $0.headers["X-Goog-Upload-Offset"] ?? "" }
        #expect(offsets == ["0", "262144", "524288", "786432"])
    }

    @Test func aQueryAnsweringFinalReadsTheMetadataInsteadOfUploadingAgain() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.dropAnswer, when: ScriptedFirebaseTransport.isFinalUpload)
        let payload = TestSupport.payload(size: Self.size, seed: 5)
        let stored = try await Self.storage(transport).reference(withPath: "a/b").putDataAsync(payload)
        #expect(stored.size == Int64(Self.size))
        #expect(stored.path == "a/b")
        let steps = transport.exchanges.map { "\($0.method) \($0.command ?? $0.url.path)" }
        #expect(steps == ["POST start", "POST upload, finalize", "POST query", "GET /v0/b/b/o/a/b"])
        #expect(transport.exchanges.last?.url.absoluteString == "http://127.0.0.1:9/v0/b/b/o/a%2Fb")
    }

    static let wire = FirebaseV0Protocol(baseURL: ScriptedFirebaseTransport.base)

    static func answer(_ status: Int, _ headers: HTTPHeaders, _ body: String = "") -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: Data(body.utf8))
    }

    @Test func sessionAnswersAreReadFromTheStatusHeader() throws {
        let json = #"{"name":"o","bucket":"b","size":"5","generation":"3"}"#
        let send = UploadSessionStep.send(offset: 10, length: 5)
        let cases: [(HTTPResponse, UploadSessionStep, UploadSessionState)] = [
            (Self.answer(200, ["X-Goog-Upload-Status": "active"]), send, .active(committedBytes: 15)),
            (
                Self.answer(200, ["X-Goog-Upload-Status": "active", "X-Goog-Upload-Size-Received": "12"]), send,
                .active(committedBytes: 12)
            ),
            (
                Self.answer(200, ["x-goog-upload-status": " Active ", "X-Goog-Upload-Size-Received": "7"]), .query,
                .active(committedBytes: 7)
            ),
            (Self.answer(200, ["X-Goog-Upload-Status": "final"]), send, .completeWithoutMetadata),
            (Self.answer(200, ["X-Goog-Upload-Status": "final"], json), .query, .completeWithoutMetadata),
            (Self.answer(200, ["X-Goog-Upload-Status": "cancelled"]), .query, .gone),
            (Self.answer(404, [:]), send, .gone),
            (Self.answer(410, [:]), .query, .gone),
        ]
        for (response, step, expected) in cases {
            #expect(try Self.wire.sessionState(from: response, after: step) == expected)
        }
        guard
            case .complete(let stored) = try Self.wire.sessionState(
                from: Self.answer(200, ["X-Goog-Upload-Status": "final"], json), after: send)
        else {
            Issue.record("a final upload answer with a body is complete with its metadata")
            return
        }
        #expect(stored.generation == 3)
    }

    @Test(
        arguments: [
            (["X-Goog-Upload-Status": "active"], UploadSessionStep.query, ""),
            ([:], .send(offset: 0, length: 1), ""),
            (["X-Goog-Upload-Status": "paused"], .query, ""),
            (["X-Goog-Upload-Status": "active", "X-Goog-Upload-Size-Received": "-1"], .query, ""),
            (["X-Goog-Upload-Status": "active", "X-Goog-Upload-Size-Received": "many"], .query, ""),
        ] as [([String: String], UploadSessionStep, String)])
    func answersThatBreakTheProtocolAreProtocolViolations(
        headers: [String: String], step: UploadSessionStep, body: String
    ) throws {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name, value) }
        let error = #expect(throws: StorageError.self) {
            try Self.wire.sessionState(from: Self.answer(200, fields, body), after: step)
        }
        #expect(error?.code == .protocolViolation)
    }

    /// A final answer whose metadata is cut short says the object may be stored: the engine
    /// asks again rather than fail (or delete anything).
    @Test func aFinalAnswerWithAnUnreadableBodyIsAnUnreadableCompletion() throws {
        var fields = HTTPHeaders()
        fields.add("X-Goog-Upload-Status", "final")
        let state = try Self.wire.sessionState(
            from: Self.answer(200, fields, #"{"name": "o"#), after: .send(offset: 0, length: 1))
        guard case .completeUnreadable(let error) = state else {
            Issue.record("expected an unreadable completion, got \(state)")
            return
        }
        #expect(error.code == .protocolViolation)
    }

    @Test(arguments: [
        ["X-Goog-Upload-URL": "http://127.0.0.1:9/v0/b/b/o?upload_id=1"],
        ["X-Goog-Upload-Status": "final", "X-Goog-Upload-URL": "http://127.0.0.1:9/v0/b/b/o?upload_id=1"],
        ["X-Goog-Upload-Status": "active"],
        ["X-Goog-Upload-Status": "active", "X-Goog-Upload-URL": "ftp://127.0.0.1/session"],
        ["X-Goog-Upload-Status": "active", "X-Goog-Upload-URL": "/v0/b/b/o?upload_id=1"],
    ])
    func aStartAnswerWithoutAnActiveSessionURLIsRefused(headers: [String: String]) throws {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name, value) }
        let error = #expect(throws: StorageError.self) {
            try Self.wire.sessionURL(from: Self.answer(200, fields))
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains("upload_id") == false, "session URLs never appear in errors")
    }

    @Test func aStartAnswerWithAnActiveSessionGivesItsURL() throws {
        let url = "https://firebasestorage.googleapis.com/v0/b/b/o?name=o&upload_id=AbC&upload_protocol=resumable"
        let response = Self.answer(200, ["X-Goog-Upload-Status": "active", "X-Goog-Upload-URL": url])
        #expect(try Self.wire.sessionURL(from: response).absoluteString == url)
    }

    /// A session URL that would leave TLS is refused, for both protocols: over https every
    /// request stays encrypted (the emulator once handed out http:// sessions while serving TLS).
    @Test func aSessionThatWouldLeaveTLSIsAProtocolViolation() throws {
        let https = URL(string: "https://storage.example")!
        let session = "http://storage.example/upload?upload_id=AbC"
        let firebase = Self.answer(200, ["X-Goog-Upload-Status": "active", "X-Goog-Upload-URL": session])
        let firebaseError = #expect(throws: StorageError.self) {
            try FirebaseV0Protocol(baseURL: https).sessionURL(from: firebase)
        }
        #expect(firebaseError?.code == .protocolViolation)
        let gcsError = #expect(throws: StorageError.self) {
            try GCSJSONProtocol(baseURL: https).sessionURL(from: Self.answer(200, ["Location": session]))
        }
        #expect(gcsError?.code == .protocolViolation)
        // Over plain http (emulators), and from https to https, the session is taken as given.
        #expect(
            try GCSJSONProtocol(baseURL: URL(string: "http://127.0.0.1:1")!).sessionURL(
                from: Self.answer(200, ["Location": session])
            ).absoluteString == session)
    }

    @Test func aFailedUploadSendsTheCancelCommand() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.status(403), when: ScriptedFirebaseTransport.isUpload)
        let error = await #expect(throws: StorageError.self) {
            try await Self.storage(transport).reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: Self.size, seed: 7))
        }
        #expect(error?.code == .unauthorized)
        let last = try #require(transport.exchanges.last)
        #expect(last.method == "POST")
        #expect(last.command == "cancel")
        #expect(last.url.query?.contains("upload_id=1") == true)
        #expect(last.body.isEmpty)
    }

    @Test func cancellingATaskSendsTheCancelCommand() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.stall, when: ScriptedFirebaseTransport.isUpload)
        let task = Self.storage(transport).reference(withPath: "o").putData(
            TestSupport.payload(size: Self.size, seed: 8))
        while !transport.exchanges.contains(where: { $0.command == "upload, finalize" }) {
            try await Task.sleep(for: .milliseconds(2))
        }
        await task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled upload cannot succeed")
        } catch {
            #expect(error.code == .cancelled)
        }
        #expect(transport.exchanges.last?.command == "cancel")
        #expect(transport.exchanges.last?.url.query?.contains("upload_id=1") == true)
    }

    @Test func smallObjectsGoInOneMultipartRequestFramedLikeTheFirebaseSDKs() async throws {
        let transport = ScriptedFirebaseTransport()
        let payload = TestSupport.payload(size: 1000, seed: 9)
        var metadata = StorageMetadata()
        metadata.cacheControl = "no-cache"
        let storage = Self.storage(transport) { $0.uploads.multipartThreshold = 8 * 1024 * 1024 }
        let stored = try await storage.reference(withPath: "small one").putDataAsync(payload, metadata: metadata)
        #expect(stored.size == 1000)
        #expect(transport.object("small one") == payload, "the strict multipart parser found the media")
        let request = try #require(transport.exchanges.first)
        #expect(transport.exchanges.count == 1)
        #expect(request.url.absoluteString == "http://127.0.0.1:9/v0/b/b/o?name=small%20one")
        #expect(request.headers["X-Goog-Upload-Protocol"] == "multipart")
        let boundary = try #require(request.headers["Content-Type"]?.split(separator: "=").last.map(String.init))
        let expectedHead =
            "--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
            + #"{"cacheControl":"no-cache","contentType":"application/octet-stream","name":"small one"}"#
            + "\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\n\r\n"
        #expect(request.body.prefix(expectedHead.utf8.count) == Data(expectedHead.utf8))
        #expect(request.body.suffix(boundary.utf8.count + 6) == Data("\r\n--\(boundary)--".utf8))
    }

    @Test func aForgottenSessionIsReplaced() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.forgetSession, when: ScriptedFirebaseTransport.isUpload)
        let payload = TestSupport.payload(size: Self.size, seed: 10)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.sessionsStarted == 2)
        #expect(transport.finalized == payload)
    }

    @Test func aSessionCancelledElsewhereIsReplaced() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.commitThenDrop(1000), when: ScriptedFirebaseTransport.isUpload)
        transport.inject(.cancelSession, when: ScriptedFirebaseTransport.isQuery)
        let payload = TestSupport.payload(size: Self.size, seed: 11)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.sessionsStarted == 2)
        #expect(transport.finalized == payload)
    }

    @Test func aWrongChecksumFailsAndDeletesTheObjectByName() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.wrongChecksum, when: ScriptedFirebaseTransport.isFinalUpload)
        let error = await #expect(throws: StorageError.self) {
            try await Self.storage(transport).reference(withPath: "x/y").putDataAsync(
                TestSupport.payload(size: Self.size, seed: 12))
        }
        #expect(error?.code == .nonMatchingChecksum)
        let last = try #require(transport.exchanges.last)
        #expect(last.method == "DELETE")
        #expect(last.url.absoluteString == "http://127.0.0.1:9/v0/b/b/o/x%2Fy", "v0 cannot name a generation")
        #expect(transport.object("x/y") == nil)
    }

    @Test func a401RefreshesTheFirebaseToken() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.status(401), when: { $0.method == "POST" })
        let authorization = StorageAuthorization.tokenProvider { forceRefresh in forceRefresh ? "fresh" : "stale" }
        _ = try await Self.storage(transport, authorization: authorization).reference(withPath: "o").putDataAsync(
            TestSupport.payload(size: 1000, seed: 13))
        let tokens = transport.exchanges.map { $0.headers["Authorization"] }
        #expect(tokens.first == "Firebase stale")
        #expect(tokens.dropFirst().allSatisfy { $0 == "Firebase fresh" })
    }
}
