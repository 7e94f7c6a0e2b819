import FakeGCSServer
import Foundation
import HTTP1
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// File uploads sent in parts on several connections (XML API multipart upload), against the
/// emulator with tiny parts: exact bytes and CRC32C, one part's fault, pause with every part in
/// flight, cancel and failure leaving nothing behind, and the single-stream fallbacks.
@Suite("Parallel upload of one file", .timeLimit(.minutes(5)))
struct ParallelUploadTests {
    static let partSize = 64 * 1024
    static let connections = 3

    /// An emulator taking parts of any size, with `faults` as its global plan, and a `Storage`
    /// sending every file in 64 KiB parts, three at a time.
    static func withParallelUpload(
        route: TestRoute = .nativeHTTP, wire: Reliability.Wire = .gcs, faults: [String] = [],
        _ body: (Storage, StorageEmulator) async throws -> Void
    ) async throws {
        try await Reliability.withEmulator(for: route, faults: faults, configure: { $0.minimumMultipartPartSize = 1 }) {
            emulator in
            let storage = Reliability.storage(Reliability.Route(wire: wire, via: route), emulator) {
                $0.uploads.parallel.threshold = 0
                try $0.uploads.parallel.setPartSize(Int64(partSize))
                try $0.uploads.parallel.setConnections(connections)
            }
            try await body(storage, emulator)
        }
    }

    static func file(_ payload: Data) throws -> URL {
        try TestSupport.file(containing: payload)
    }

    @Test(
        "exact bytes and whole CRC32C, sizes that divide into parts and sizes that do not",
        arguments: [TestRoute.nativeHTTP, .nativeHTTPS], [4 * 65536, 300_001])
    func exactBytes(route: TestRoute, size: Int) async throws {
        try await Self.withParallelUpload(route: route) { storage, emulator in
            let payload = TestSupport.payload(size: size, seed: 31)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/exact.bin")
            let before = emulator.requestsReceived
            let metadata = try await ref.putFileAsync(from: file)
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            #expect(metadata.md5Hash == nil, "an object assembled from parts has no MD5")
            let parts = (size + Self.partSize - 1) / Self.partSize
            // Initiate, the parts, Complete, and the read of what was stored: nothing else.
            #expect(emulator.requestsReceived - before == parts + 3)
            #expect(emulator.multipartUploadsInProgress == 0)
        }
    }

    @Test("a reset in one part while the others run resends only that part")
    func resetInOnePart() async throws {
        // The initiate and the first part pass; the second part to arrive is reset after 10 KiB.
        try await Self.withParallelUpload(faults: ["pass", "pass", "reset-after-10K"]) { storage, emulator in
            let payload = TestSupport.payload(size: 5 * Self.partSize - 123, seed: 32)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/reset.bin")
            let metadata = try await ref.putFileAsync(from: file)
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            // Five parts and one resent: initiate + 6 + Complete + the metadata read.
            #expect(emulator.requestsReceived == 9)
            #expect(emulator.bytesReceived < Int64(payload.count + Self.partSize), "only the reset part went twice")
            #expect(emulator.multipartUploadsInProgress == 0)
        }
    }

    /// The plan that holds the first three parts after 1 KiB each: every connection is busy.
    static let allHeld = ["pass", "stall-after-1K", "stall-after-1K", "stall-after-1K"]

    static func waitUntilAllHeld(_ emulator: StorageEmulator) async throws {
        while emulator.bytesReceived < 3 * 1024 {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("pause with every part in flight, then resume: the object is whole")
    func pauseWithAllPartsInFlight() async throws {
        try await Self.withParallelUpload(faults: Self.allHeld) { storage, emulator in
            let payload = TestSupport.payload(size: 5 * Self.partSize + 17, seed: 33)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/paused.bin")
            let task = ref.putFile(from: file)
            let observed = TestSupport.observe(task)
            try await Self.waitUntilAllHeld(emulator)
            await task.pause()
            #expect(task.snapshot.status == .pause)
            #expect(emulator.multipartUploadsInProgress == 1, "a pause keeps the upload")
            await task.resume()
            let metadata = try await task.value
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            #expect(emulator.multipartUploadsInProgress == 0)
            let snapshots = await observed.value
            let statuses = snapshots.map(\.status).filter { $0 != .progress }
            #expect(statuses.suffix(3) == [.pause, .resume, .success])
            #expect(snapshots.last?.progress.completedUnitCount == Int64(payload.count))
            #expect(snapshots.last?.progress.totalUnitCount == Int64(payload.count))
        }
    }

    @Test("cancel with every part in flight leaves nothing on the server")
    func cancelLeavesNothing() async throws {
        try await Self.withParallelUpload(faults: Self.allHeld) { storage, emulator in
            let payload = TestSupport.payload(size: 5 * Self.partSize, seed: 34)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/cancelled.bin")
            let task = ref.putFile(from: file)
            try await Self.waitUntilAllHeld(emulator)
            #expect(emulator.multipartUploadsInProgress == 1)
            await task.cancel()
            do {
                _ = try await task.value
                Issue.record("a cancelled upload succeeded")
            } catch {
                #expect((error as? StorageError)?.code == .cancelled)
            }
            #expect(emulator.multipartUploadsInProgress == 0, "the cancel aborted the upload")
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    /// A pause or cancel while Complete's answer is awaited, after the server assembled the
    /// object (`hold-response`: it took effect, its answer never comes), ends in success with
    /// that object, never `.cancelled` beside it. Complete is shielded once sent, so the stop
    /// takes effect when the request times out (2 s here) and would otherwise be sent again.
    @Test(arguments: [false, true])
    func aStopAfterTheServerAssembledTheObjectEndsInSuccess(pausing: Bool) async throws {
        // The initiate and the three parts pass; Complete is served, then held unanswered.
        let plan = Array(repeating: "pass", count: 4) + ["hold-response"]
        try await Reliability.withEmulator(
            for: .nativeHTTPS, faults: plan, configure: { $0.minimumMultipartPartSize = 1 }
        ) { emulator in
            let storage = Reliability.storage(Reliability.Route(wire: .gcs, via: .nativeHTTPS), emulator) {
                $0.uploads.parallel.threshold = 0
                try $0.uploads.parallel.setPartSize(Int64(Self.partSize))
                try $0.timeouts.setRequest(Reliability.stallingRequestTimeout)
            }
            let payload = TestSupport.payload(size: 3 * Self.partSize, seed: 38)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/assembled.bin")
            let task = ref.putFile(from: file)
            // The suite's time limit ends the wait if the object never comes.
            while Reliability.record(ref.fullPath, in: emulator) == nil {
                try await Task.sleep(for: .milliseconds(5))
            }
            if pausing { await task.pause() } else { await task.cancel() }
            let metadata = try await task.value
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            #expect(emulator.multipartUploadsInProgress == 0)
        }
    }

    @Test("a definitive failure of one part aborts the upload with that part's error")
    func definitiveFailureAborts() async throws {
        try await Self.withParallelUpload(faults: ["pass", "pass", "return-403"]) { storage, emulator in
            let payload = TestSupport.payload(size: 5 * Self.partSize, seed: 35)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/refused.bin")
            do {
                _ = try await ref.putFileAsync(from: file)
                Issue.record("an upload with a refused part succeeded")
            } catch {
                #expect((error as? StorageError)?.httpStatus == 403)
                #expect((error as? StorageError)?.code != .cancelled)
            }
            #expect(emulator.multipartUploadsInProgress == 0, "the failure aborted the upload")
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test("retries that run out keep the upload for resumeUpload, which sends only the missing parts")
    func retriesRunOutKeepTheUpload() async throws {
        // The initiate and one part pass; the next part is answered 503, and no retry is allowed.
        try await Self.withParallelUpload(faults: ["pass", "pass", "return-503"]) { storage, emulator in
            let payload = TestSupport.payload(size: 4 * Self.partSize + 9, seed: 40)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let impatient = Reliability.storage(Reliability.Route(wire: .gcs, via: .nativeHTTP), emulator) {
                $0.uploads.parallel.threshold = 0
                try $0.uploads.parallel.setPartSize(Int64(Self.partSize))
                try $0.uploads.parallel.setConnections(1)
                try $0.retry.setMaxUploadTime(.zero)
            }
            let task = impatient.reference(withPath: "parts/kept.bin").putFile(from: file)
            do {
                _ = try await task.value
                Issue.record("an upload whose retries ran out succeeded")
            } catch {
                #expect((error as? StorageError)?.code == .retryLimitExceeded)
            }
            #expect(emulator.multipartUploadsInProgress == 1, "the upload is kept for another try")
            let session = try #require(task.resumableSession)
            #expect(session.partSize == Int64(Self.partSize))
            let received = emulator.bytesReceived
            let metadata = try await storage.resumeUpload(session, from: file).value
            try Reliability.expectStored(payload, as: "parts/kept.bin", in: emulator, returned: metadata)
            // The missing parts and the Complete document: the stored first part is not sent again.
            let sent = emulator.bytesReceived - received
            #expect(sent >= Int64(payload.count - Self.partSize) && sent < Int64(payload.count), "\(sent) bytes")
            #expect(emulator.multipartUploadsInProgress == 0)
        }
    }

    @Test("a file that changes while its parts go up fails with fileChanged and leaves nothing")
    func fileChangedDuringUpload() async throws {
        try await Self.withParallelUpload(faults: Self.allHeld) { storage, emulator in
            let payload = TestSupport.payload(size: 5 * Self.partSize, seed: 36)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/changed.bin")
            let task = ref.putFile(from: file)
            try await Self.waitUntilAllHeld(emulator)
            await task.pause()
            try (payload + Data([1, 2, 3])).write(to: file)
            await task.resume()
            do {
                _ = try await task.value
                Issue.record("an upload of a changed file succeeded")
            } catch {
                #expect((error as? StorageError)?.code == .fileChanged)
            }
            #expect(emulator.multipartUploadsInProgress == 0)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test("Firebase, preconditions and files under the threshold stay in one stream")
    func singleStreamCases() async throws {
        try await Self.withParallelUpload(wire: .firebase) { storage, emulator in
            let payload = TestSupport.payload(size: 3 * Self.partSize, seed: 37)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/firebase.bin")
            let metadata = try await ref.putFileAsync(from: file)
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            #expect(emulator.application.multipartUploads.count == 0)
        }
        try await Self.withParallelUpload { storage, emulator in
            let payload = TestSupport.payload(size: 3 * Self.partSize, seed: 38)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/conditional.bin")
            let before = emulator.requestsReceived
            let metadata = try await ref.putFileAsync(from: file, preconditions: .init(ifGenerationMatch: 0))
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            #expect(emulator.requestsReceived - before <= 2, "one stream, not parts")
        }
    }

    @Test("a server without the XML API (fake-gcs-server) gets the file in one stream")
    func fallbackOnServerWithoutProtocol() async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "mpu", route: .nativeHTTP) {
            $0.uploads.parallel.threshold = 0
            try $0.uploads.parallel.setPartSize(Int64(Self.partSize))
        }
        let payload = TestSupport.payload(size: 3 * Self.partSize + 5, seed: 39)
        let file = try Self.file(payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let ref = storage.reference(withPath: "parts/fallback.bin")
        let metadata = try await ref.putFileAsync(from: file)
        #expect(metadata.size == Int64(payload.count))
        try await TestSupport.expectStored(payload, at: ref.fullPath, in: storage, server: server)
    }

    /// Over https the transport reads each part's bytes to encrypt them, and hashes them as it
    /// does: the part goes without `x-goog-hash`, and its CRC32C is checked against the one the
    /// server answers. Over http (`sendfile`) the part is hashed first and carries it.
    @Test(arguments: [TestRoute.nativeHTTP, .nativeHTTPS])
    func aPartIsHashedOnceAndCheckedAgainstTheServersHash(route: TestRoute) async throws {
        try await Self.withPartProbe(route: route) { probe, storage, emulator in
            let payload = TestSupport.payload(size: 3 * Self.partSize + 7, seed: 36)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/hashed.bin")
            let metadata = try await ref.putFileAsync(from: file)
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            let hashes = probe.sentHashes.sorted { $0.number < $1.number }
            #expect(hashes.map(\.number) == [1, 2, 3, 4])
            for (number, hash) in hashes {
                let part = payload[(number - 1) * Self.partSize..<min(number * Self.partSize, payload.count)]
                let expected = "crc32c=\(CRC32CEncoding.base64(CRC32C.checksum(part)))"
                #expect(hash == (route == .nativeHTTPS ? nil : expected), "part \(number)")
            }
        }
    }

    /// A part the server reports having stored with another CRC32C than the bytes read to send
    /// it fails the upload before Complete: aborted, nothing stored, on both paths.
    @Test(arguments: [TestRoute.nativeHTTP, .nativeHTTPS])
    func aPartStoredWithAnotherHashFailsTheUpload(route: TestRoute) async throws {
        try await Self.withPartProbe(route: route) { probe, storage, emulator in
            probe.misreport(part: 2)
            let payload = TestSupport.payload(size: 3 * Self.partSize, seed: 37)
            let file = try Self.file(payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "parts/misreported.bin")
            let error = await #expect(throws: StorageError.self) { try await ref.putFileAsync(from: file) }
            #expect(error?.code == .nonMatchingChecksum)
            #expect(emulator.multipartUploadsInProgress == 0, "the failure aborted the upload")
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    /// ``withParallelUpload(route:wire:faults:_:)`` with a ``TestTransport`` as the transport.
    static func withPartProbe(
        route: TestRoute, _ body: (TestTransport, Storage, StorageEmulator) async throws -> Void
    ) async throws {
        try await Reliability.withEmulator(for: route, configure: { $0.minimumMultipartPartSize = 1 }) { emulator in
            let probe = TestTransport(wrapping: route.makeTransport(for: .gcs(emulator.baseURL)))
            var configuration = StorageConfiguration()
            route.apply(to: &configuration)
            configuration.applyForTest {
                $0.uploads.parallel.threshold = 0
                try $0.uploads.parallel.setPartSize(Int64(partSize))
                try $0.uploads.parallel.setConnections(connections)
            }
            let storage = Storage(
                bucket: Reliability.bucket, endpoint: .gcs(emulator.baseURL), authorization: .none,
                configuration: configuration, transport: probe)
            try await body(probe, storage, emulator)
        }
    }
}

/// What a ``TestTransport`` under a parallel upload recorded of its part uploads
/// (`PUT ?partNumber=`), and how it makes the answer to a chosen part report a CRC32C that is
/// not the stored bytes' (a server that stored something else).
extension TestTransport {
    /// The part number `request` uploads, or nil when it is no part upload.
    fileprivate static func partNumber(_ request: HTTPRequest) -> Int? {
        guard request.method == "PUT" else { return nil }
        let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return query.first { $0.name == "partNumber" }?.value.flatMap(Int.init)
    }

    /// Each part request sent: its number and its `x-goog-hash`, if any.
    var sentHashes: [(number: Int, hash: String?)] {
        sent.compactMap { sent in Self.partNumber(sent.request).map { ($0, sent.header("x-goog-hash")) } }
    }

    /// Makes the next successful answer to part `number` report another CRC32C.
    func misreport(part number: Int) {
        let armed = Atomic(true)
        inspect { request, response in
            if Self.partNumber(request) == number, response.status == 200, armed.exchange(false, ordering: .relaxed) {
                response.headers.set("x-goog-hash", "crc32c=AAAAAA==")
            }
        }
    }
}
