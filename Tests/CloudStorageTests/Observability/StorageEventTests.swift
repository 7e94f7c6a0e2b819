import Dispatch
import Foundation
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// Records every event it is handed.
final class EventRecorder: StorageEventHandler {
    private let recorded = Mutex<[StorageEvent]>([])

    func handle(_ event: StorageEvent) { recorded.withLock { $0.append(event) } }

    var events: [StorageEvent] { recorded.withLock { $0 } }

    func events(_ kind: StorageEvent.Kind) -> [StorageEvent] { events.filter { $0.kind == kind } }
}

/// Blocks in its first call until released; records everything.
final class BlockingHandler: StorageEventHandler {
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let recorder = EventRecorder()
    private let first = Atomic(true)

    func handle(_ event: StorageEvent) {
        if first.exchange(false, ordering: .relaxed) {
            entered.signal()
            release.wait()
        }
        recorder.handle(event)
    }

    /// Returns once the handler is stuck in its first event (waiting off the cooperative pool).
    func waitUntilEntered() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.entered.wait()
                continuation.resume()
            }
        }
    }
}

/// The event hook: what is reported, in which order, that a slow handler never holds up a
/// request, and that no event carries a secret.
@Suite("Events: what the SDK reports to a StorageEventHandler", .timeLimit(.minutes(10)))
struct StorageEventTests {
    static let chunk = 256 * 1024

    static func storage(
        _ emulator: StorageEmulator, _ handler: any StorageEventHandler, wire: Reliability.Wire = .gcs,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        Reliability.storage(Reliability.Route(wire: wire, via: .nativeHTTP), emulator) {
            $0.uploads.multipartThreshold = -1  // always a session
            try $0.events.setHandler(handler)
            try configure(&$0)
        }
    }

    @Test func metadataValuesAreTypedAndPrintAsTheirText() {
        let values: [StorageEvent.Value] = ["e/a.bin", 503, true, "HTTP \(404)"]
        #expect(values == [.string("e/a.bin"), .integer(503), .bool(true), .string("HTTP 404")])
        #expect(values.map(\.description) == ["e/a.bin", "503", "true", "HTTP 404"])
        #expect(values.map(\.integerValue) == [nil, 503, nil, nil])
        #expect(values.map(\.boolValue) == [nil, nil, true, nil])
        #expect(values.map(\.stringValue) == ["e/a.bin", nil, nil, "HTTP 404"])
    }

    /// Every text of an event: its description and metadata values.
    static func texts(_ events: [StorageEvent]) -> [String] {
        events.flatMap { [$0.description] + $0.metadata.values.map(\.description) }
    }

    /// Fails when an `upload_id` value, or any of `secrets`, appears in an event.
    static func expectNoSecrets(_ events: [StorageEvent], _ secrets: [String] = []) {
        for text in texts(events) {
            #expect(!text.contains { $0.isNewline }, "\(text)")
            var rest = Substring(text)
            while let range = rest.range(of: "upload_id=") {
                #expect(rest[range.upperBound...].hasPrefix("REDACTED"), "\(text)")
                rest = rest[range.upperBound...]
            }
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
        }
    }

    @Test(
        "an upload reports its transport, session, requests, retry and checksum verdict, in order",
        arguments: Reliability.Wire.allCases)
    func uploadEvents(wire: Reliability.Wire) async throws {
        // The session start passes; the first chunk is answered 503, then all passes.
        try await Reliability.withEmulator(for: .nativeHTTP, faults: ["pass", "return-503"]) { emulator in
            let recorder = EventRecorder()
            let storage = Self.storage(emulator, recorder, wire: wire)
            let payload = TestSupport.payload(size: 3 * Self.chunk + 7, seed: 5)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let task = storage.reference(withPath: "e/a.bin").putFile(from: file)
            let session = try #require(await task.waitForResumableSession())
            _ = try await task.value
            await storage.configuration.events.flush()
            let events = recorder.events

            let chosen = try #require(recorder.events(.transportChosen).first)
            #expect(chosen.operationID == nil && chosen.metadata["transport"] == "native")

            let started = try #require(recorder.events(.uploadSessionStarted).first)
            let operation = try #require(started.operationID)
            let mine = events.filter { $0.operationID == operation }
            #expect(mine.map(\.kind.name).first == "request", "the session's start request comes first")
            let requests = mine.filter { $0.kind == .request }
            #expect(requests.first?.metadata["method"] == "POST")
            #expect(requests.first?.metadata["url"]?.stringValue?.contains("uploadType=resumable") == (wire == .gcs))
            #expect(requests.dropFirst().first?.metadata["status"] == 503)
            #expect(requests.allSatisfy { $0.metadata["duration_ms"]?.integerValue != nil })
            let kinds = mine.map(\.kind)
            let retry = try #require(kinds.firstIndex(of: .retry))
            let failed = try #require(
                requests.dropFirst().first.flatMap { failed in
                    mine.firstIndex { $0.kind == .request && $0.metadata == failed.metadata }
                })
            #expect(failed < retry, "the retry follows the failed request")
            #expect(mine[retry].metadata["status"] == 503)
            #expect(mine[retry].metadata["delay_ms"]?.integerValue != nil)
            #expect(kinds.last == .checksumVerdict)
            #expect(mine.last?.metadata["verdict"] == "matched")
            #expect(mine.last?.metadata["object"] == "e/a.bin")
            Self.expectNoSecrets(events, [session.sessionURL.absoluteString])
            if wire == .gcs {
                let query = try #require(URLComponents(url: session.sessionURL, resolvingAgainstBaseURL: false))
                let id = try #require(query.queryItems?.first { $0.name == "upload_id" }?.value)
                Self.expectNoSecrets(events, [id])
                #expect(Self.texts(events).contains { $0.contains("upload_id=REDACTED") })
            }
        }
    }

    @Test("a session the server lost is reported restarted")
    func restartedSession() async throws {
        try await Reliability.withEmulator(for: .nativeHTTP, faults: ["pass", "return-404"]) { emulator in
            let recorder = EventRecorder()
            let storage = Self.storage(emulator, recorder)
            _ = try await storage.reference(withPath: "e/r.bin").putData(TestSupport.payload(size: 1000, seed: 1)).value
            await storage.configuration.events.flush()
            let restarted = try #require(recorder.events(.uploadSessionRestarted).first)
            #expect(restarted.metadata["reason"] == "lost the upload session")
            #expect(restarted.metadata["restart"] == 1)
            #expect(recorder.events(.uploadSessionStarted).count == 2)
            Self.expectNoSecrets(recorder.events)
        }
    }

    @Test("continuing a kept session is reported resumed, with the bytes it held")
    func resumedSession() async throws {
        // Start and two chunks pass; the third is refused and no retry is allowed.
        try await Reliability.withEmulator(for: .nativeHTTP, faults: ["pass", "pass", "pass", "return-503"]) {
            emulator in
            let recorder = EventRecorder()
            let payload = TestSupport.payload(size: 4 * Self.chunk + 5, seed: 93)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let storage = Self.storage(emulator, recorder) {
                try $0.uploads.setChunkSize(Int64(Self.chunk))
                try $0.retry.setMaxUploadTime(.zero)
            }
            let task = storage.reference(withPath: "e/kept.bin").putFile(from: file)
            if case .success = await task.result() { Issue.record("the upload should have failed") }
            let session = try #require(task.resumableSession)
            _ = try await storage.resumeUpload(session, from: file).value
            await storage.configuration.events.flush()
            let resumed = try #require(recorder.events(.uploadSessionResumed).first)
            #expect(resumed.metadata["committed"] == .integer(Int64(2 * Self.chunk)))
            #expect(resumed.metadata["object"] == "e/kept.bin")
            Self.expectNoSecrets(recorder.events, [session.sessionURL.absoluteString])
        }
    }

    @Test("a download reports its checksum verdict: matched for the whole object, not checkable for a range")
    func downloadVerdicts() async throws {
        try await Reliability.withEmulator(for: .nativeHTTP) { emulator in
            let recorder = EventRecorder()
            let storage = Self.storage(emulator, recorder)
            let reference = storage.reference(withPath: "e/d.bin")
            let payload = TestSupport.payload(size: 1000, seed: 3)
            _ = try await reference.putData(payload).value
            await storage.configuration.events.flush()
            let uploaded = recorder.events(.checksumVerdict).count
            #expect(try await reference.data(maxSize: 1 << 20) == payload)
            #expect(try await reference.data(maxSize: 1 << 20, range: 10...19) == payload[10...19])
            await storage.configuration.events.flush()
            let verdicts = recorder.events(.checksumVerdict).dropFirst(uploaded)
            #expect(verdicts.map { $0.metadata["verdict"] } == ["matched", "not checkable"])
            #expect(verdicts.last?.metadata["reason"]?.stringValue?.contains("only part of the object") == true)
            #expect(Set(verdicts.map(\.operationID)).count == 2, "each download is an operation of its own")
        }
    }

    @Test("a token fetch is reported with its source and never the token")
    func tokenEvents() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let recorder = EventRecorder()
        let storage = CredentialFlowTests.storage(fake, try CredentialFlowTests.serviceAccount(fake)) {
            try $0.events.setHandler(recorder)
        }
        try await storage.reference(withPath: "a").delete()
        fake.expireAllTokens()  // the next request is refused, and the token refreshed
        try await storage.reference(withPath: "b").delete()
        await storage.configuration.events.flush()
        let fetches = recorder.events(.tokenFetched)
        #expect(fetches.map { $0.metadata["refresh"] } == [false, true])
        #expect(
            fetches.allSatisfy { $0.metadata["source"] == "service account" && $0.metadata["outcome"] == "fetched" })
        #expect(recorder.events(.request).contains { $0.metadata["status"] == 401 })
        Self.expectNoSecrets(recorder.events, ["ya29.", "Bearer"])
    }

    @Test("a handler that blocks holds up no request: the operations finish while it waits")
    func blockedHandlerNeverHoldsUpRequests() async throws {
        try await Reliability.withEmulator(for: .nativeHTTP) { emulator in
            let handler = BlockingHandler()
            let storage = Self.storage(emulator, handler) { try $0.events.setHandler(handler, bufferCapacity: 4) }
            let reference = storage.reference(withPath: "e/b.bin")
            let payload = TestSupport.payload(size: Self.chunk + 1, seed: 2)
            // The handler is stuck in its first event (the transport chosen) for all of this.
            await handler.waitUntilEntered()
            _ = try await reference.putData(payload).value
            #expect(try await reference.data(maxSize: 1 << 20) == payload)
            try await reference.delete()
            handler.release.signal()
            await storage.configuration.events.flush()
            let events = handler.recorder.events
            #expect(events.first?.kind == .transportChosen)
            // Four waited; the rest were counted, and the count came after them.
            #expect(events.count == 1 + 4 + 1)
            let dropped = try #require(events.last)
            #expect(dropped.kind == .eventsDropped)
            #expect(dropped.metadata["count"]?.integerValue.map { $0 > 0 } == true)
        }
    }

    @Test("the buffer keeps its capacity's worth while the handler is busy, and counts the rest")
    func boundedBuffer() async throws {
        let handler = BlockingHandler()
        var events = StorageConfiguration.Events()
        try events.setHandler(handler, bufferCapacity: 3)
        let delivery = try #require(events.delivery)
        func event(_ n: Int) -> StorageEvent {
            StorageEvent(kind: .request, level: .debug, operationID: 1, message: "\(n)")
        }
        delivery.emit(event(0))
        await handler.waitUntilEntered()
        for n in 1...10 { delivery.emit(event(n)) }  // returns at once: the handler is stuck
        handler.release.signal()
        await events.flush()
        let received = handler.recorder.events
        #expect(received.prefix(4).map(\.message) == ["0", "1", "2", "3"])
        #expect(received.count == 5)
        #expect(received.last?.kind == .eventsDropped)
        #expect(received.last?.metadata["count"] == 7)
        delivery.emit(event(11))
        await events.flush()
        #expect(handler.recorder.events.last?.message == "11", "delivery goes on after a drop")
    }

    @Test("events are delivered on the SDK's own thread, never the caller's")
    func ownThread() async throws {
        final class ThreadNames: StorageEventHandler {
            let names = Mutex<[String]>([])
            func handle(_ event: StorageEvent) { names.withLock { $0.append(Thread.current.name ?? "") } }
        }
        let handler = ThreadNames()
        var events = StorageConfiguration.Events()
        try events.setHandler(handler)
        events.delivery?.emit(StorageEvent(kind: .retry, level: .info, operationID: nil, message: "x"))
        await events.flush()
        #expect(handler.names.withLock { $0 } == ["storage-events"])
    }

    @Test("the transport choice says why it falls back to URLSession: no OpenSSL 3, or a proxy")
    func transportFallback() async throws {
        let recorder = EventRecorder()
        var configuration = StorageConfiguration()
        try configuration.events.setHandler(recorder)
        let https = StorageEndpoint.gcs(try #require(URL(string: "https://storage.example.com")))
        let http = StorageEndpoint.gcs(try #require(URL(string: "http://127.0.0.1:9")))
        _ = StorageTransportChoice.automatic.transport(
            for: https, configuration: configuration, tlsUnavailableReason: "libssl.so.3 was not found",
            proxies: ProxyEnvironment([:]))
        _ = StorageTransportChoice.automatic.transport(
            for: http, configuration: configuration, tlsUnavailableReason: "libssl.so.3 was not found",
            proxies: ProxyEnvironment([:]))
        _ = StorageTransportChoice.automatic.transport(
            for: https, configuration: configuration, tlsUnavailableReason: nil,
            proxies: ProxyEnvironment(["https_proxy": "http://proxy.corp:3128"]))
        await configuration.events.flush()
        let chosen = recorder.events(.transportChosen)
        #expect(
            chosen.map { $0.metadata["transport"] } == [
                "urlSession", "native for http, urlSession for https", "urlSession",
            ])
        #expect(
            chosen.map { $0.metadata["reason"] } == [
                "TLS falls back to URLSession: libssl.so.3 was not found",
                "TLS falls back to URLSession: libssl.so.3 was not found",
                "the environment names a proxy for the endpoint",
            ])
        #expect(chosen.allSatisfy { $0.level == .info && $0.operationID == nil })
    }

    @Test("a capacity below 1 is refused; messages stay on one line")
    func settings() throws {
        var events = StorageConfiguration.Events()
        #expect(throws: StorageError.self) { try events.setHandler(EventRecorder(), bufferCapacity: 0) }
        #expect(events.handler == nil)
        let event = StorageEvent(kind: .retry, level: .info, operationID: 7, message: "a\r\nb")
        #expect(event.description == "#7 retry a b")
    }

    @Test("redacted URLs keep harmless query values only")
    func redaction() throws {
        let url = try #require(
            URL(
                string:
                    "https://user:pw@h.example:8443/upload/storage/v1/b/b/o?uploadType=resumable&name=a%2Fb&upload_id=SECRET&X-Goog-Signature=SIG&token=TOK#frag"
            ))
        #expect(
            url.redactedForEvents
                == "https://h.example:8443/upload/storage/v1/b/b/o?uploadType=resumable&name=a%2Fb&upload_id=REDACTED&X-Goog-Signature=REDACTED&token=REDACTED"
        )
    }
}
