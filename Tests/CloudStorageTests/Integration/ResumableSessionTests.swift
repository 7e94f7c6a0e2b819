import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Uploads continued in "a new process": a fresh ``Storage`` (its own transport and connections)
/// on the same emulator resumes, from a ``StorageUploadSession`` that went through a file, a
/// session that a first task opened and then left paused.
///
/// The first task is stopped deterministically: the emulator passes the session start and the
/// first 512 KiB chunk and holds the second (`stall-after-100K`) until the client lets go; the
/// test pauses once the emulator has counted those bytes (an event, not a sleep).
@Suite("Resuming an upload session in a new process", .timeLimit(.minutes(10)))
struct ResumableSessionTests {
    static let chunk = 512 * 1024
    static let heldPlan = ["pass", "pass", "stall-after-100K"]
    static let heldAt = Int64(chunk + 100 * 1024)
    static let size = 2 * 1024 * 1024

    /// A first upload paused after one committed chunk, and its description read back from a file.
    struct Paused {
        let emulator: StorageEmulator
        let task: StorageUploadTask
        let session: StorageUploadSession
        let file: URL
        let payload: Data
        let route: Reliability.Route
        var wire: Reliability.Wire { route.wire }

        /// A `Storage` of its own for the same endpoint: what a new process would make.
        func freshStorage(bucket: String = Reliability.bucket) -> Storage {
            Reliability.storage(route, emulator, bucket: bucket)
        }
    }

    static func withPausedUpload(
        _ wire: Reliability.Wire, via: TestRoute = .nativeHTTP, size: Int = size, _ body: (Paused) async throws -> Void
    ) async throws {
        let route = Reliability.Route(wire: wire, via: via)
        try await Reliability.withEmulator(for: via, faults: heldPlan) { emulator in
            let storage = Reliability.storage(route, emulator) {
                try $0.uploads.setChunkSize(Int64(chunk))
                $0.uploads.multipartThreshold = -1
            }
            let payload = TestSupport.payload(size: size, seed: 41)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let task = storage.reference(withPath: "resumed/big.bin").putFile(from: file)
            try await waitUntilHeld(emulator)
            // Bytes went out, so the description must exist already.
            let live = try #require(task.resumableSession)
            #expect(await task.waitForResumableSession() == live)
            await task.pause()
            let record = file.deletingLastPathComponent().appendingPathComponent("session.json")
            try live.write(to: record)
            let session = try StorageUploadSession(contentsOf: record)
            #expect(session == live)
            try await body(
                Paused(emulator: emulator, task: task, session: session, file: file, payload: payload, route: route))
        }
    }

    @Test(arguments: Reliability.Route.all)
    func aFreshStorageFinishesFromTheCommittedOffset(route: Reliability.Route) async throws {
        try await Self.withPausedUpload(route.wire, via: route.via) { paused in
            #expect(paused.session.source.size == Int64(Self.size))
            #expect(paused.session.chunkSize == Int64(Self.chunk))
            let before = paused.emulator.bytesReceived
            let task = try paused.freshStorage().resumeUpload(paused.session, from: paused.file)
            let metadata = try await task.value
            let sent = paused.emulator.bytesReceived - before
            // The first chunk was committed before the pause; at most the held 100 KiB more.
            let rest = Int64(Self.size - Self.chunk)
            #expect(sent <= rest && sent >= rest - 100 * 1024, "sent \(sent) bytes after resuming")
            try Reliability.expectStored(paused.payload, as: "resumed/big.bin", in: paused.emulator, returned: metadata)
        }
    }

    /// Above 32 MiB the CRC32C is computed while the file sends (not before), so a description may
    /// lack it and the resumed upload, which skips the committed prefix, must still hash the whole
    /// file for its final check.
    @Test(arguments: Reliability.Wire.allCases)
    func aLargeFileHashedWhileSendingIsVerifiedWhole(wire: Reliability.Wire) async throws {
        let size = 33 * 1024 * 1024
        try await Self.withPausedUpload(wire, size: size) { paused in
            let before = paused.emulator.bytesReceived
            let metadata = try await paused.freshStorage().resumeUpload(paused.session, from: paused.file).value
            let sent = paused.emulator.bytesReceived - before
            #expect(sent <= Int64(size - Self.chunk), "sent \(sent) bytes after resuming")
            #expect(metadata.crc32cValue == CRC32C.checksum(paused.payload))
            try Reliability.expectStored(paused.payload, as: "resumed/big.bin", in: paused.emulator, returned: metadata)
        }
    }

    @Test(arguments: Reliability.Wire.allCases)
    func aSessionAlreadyFinishedEndsInSuccessAfterVerifying(wire: Reliability.Wire) async throws {
        try await Self.withPausedUpload(wire) { paused in
            let first = try await paused.freshStorage().resumeUpload(paused.session, from: paused.file).value
            let before = paused.emulator.bytesReceived
            // The crash came after the server finalized: the record is still there.
            let again = try await paused.freshStorage().resumeUpload(paused.session, from: paused.file).value
            #expect(paused.emulator.bytesReceived == before, "nothing is sent again")
            #expect(again.generation == first.generation)
            try Reliability.expectStored(paused.payload, as: "resumed/big.bin", in: paused.emulator, returned: again)
        }
    }

    @Test(arguments: Reliability.Wire.allCases)
    func aChangedFileIsRefusedBeforeAnyByte(wire: Reliability.Wire) async throws {
        try await Self.withPausedUpload(wire) { paused in
            let storage = paused.freshStorage()
            let before = paused.emulator.bytesReceived
            let recorded = paused.session.source

            // Same size, other modification time.
            try Self.setModificationTime(of: paused.file, seconds: recorded.modificationSeconds - 10, nanoseconds: 0)
            await Self.expectRefused(storage, paused, .fileChanged)

            // Rewritten in place with the same size and the modification time restored: the
            // recorded CRC32C tells.
            try Self.overwriteStart(of: paused.file)
            try Self.setModificationTime(
                of: paused.file, seconds: recorded.modificationSeconds, nanoseconds: recorded.modificationNanoseconds)
            #expect(try Self.identity(of: paused.file) == paused.session.identity)
            await Self.expectRefused(storage, paused, .fileChanged)

            // Another size.
            let handle = try FileHandle(forWritingTo: paused.file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([1]))
            try handle.close()
            await Self.expectRefused(storage, paused, .fileChanged)

            #expect(paused.emulator.bytesReceived == before, "no byte was sent")
            #expect(Reliability.liveSessions(paused.emulator) == 1, "the session was left alone")
        }
    }

    /// Without a recorded CRC32C (a description taken before the checksum was known), a file
    /// rewritten with the same identity is only found out by the final verification: the upload
    /// must fail rather than store the old prefix glued to the new rest.
    @Test(arguments: Reliability.Wire.allCases)
    func aSameIdentityRewriteFailsVerificationAndStoresNothing(wire: Reliability.Wire) async throws {
        try await Self.withPausedUpload(wire) { paused in
            let recorded = paused.session.source
            try Self.overwriteStart(of: paused.file)
            try Self.setModificationTime(
                of: paused.file, seconds: recorded.modificationSeconds, nanoseconds: recorded.modificationNanoseconds)
            let session = try Self.withoutChecksum(paused.session)
            #expect(session.crc32c == nil)
            let result = await (try paused.freshStorage().resumeUpload(session, from: paused.file)).result()
            #expect(result.failureCode == .nonMatchingChecksum)
            #expect(Reliability.record("resumed/big.bin", in: paused.emulator) == nil, "no wrong object is left")
        }
    }

    @Test(arguments: Reliability.Wire.allCases)
    func aSessionOfAnotherBucketOrEndpointIsRefused(wire: Reliability.Wire) async throws {
        try await Self.withPausedUpload(wire) { paused in
            let other = paused.freshStorage(bucket: "another-bucket")
            #expect(
                Self.code { () throws(StorageError) in _ = try other.resumeUpload(paused.session, from: paused.file) }
                    == .bucketMismatch)
            let otherWire: Reliability.Wire = wire == .gcs ? .firebase : .gcs
            let otherProtocol = Reliability.storage(
                Reliability.Route(wire: otherWire, via: .nativeHTTP), paused.emulator)
            #expect(
                Self.code { () throws(StorageError) in
                    _ = try otherProtocol.resumeUpload(paused.session, from: paused.file)
                } == .bucketMismatch)
        }
    }

    @Test(arguments: Reliability.Wire.allCases)
    func aSessionTheServerForgotEndsWithUploadSessionExpired(wire: Reliability.Wire) async throws {
        try await Self.withPausedUpload(wire) { paused in
            // Cancelling the first task discards its session on the server.
            await paused.task.cancel()
            #expect(await paused.task.result().failureCode == .cancelled)
            #expect(Reliability.liveSessions(paused.emulator) == 0)
            let result = await (try paused.freshStorage().resumeUpload(paused.session, from: paused.file)).result()
            #expect(result.failureCode == .uploadSessionExpired)
            #expect(Reliability.record("resumed/big.bin", in: paused.emulator) == nil)
        }
    }

    /// Uploads that another process could not continue offer no description: `Data` and one-request
    /// files; a file's session is no longer offered once the object is stored. (The emulator holds
    /// the file's first chunk, so the description is awaited while the upload surely runs.)
    @Test(arguments: Reliability.Wire.allCases)
    func onlyAFileInASessionHasADescriptionAndOnlyWhileItRuns(wire: Reliability.Wire) async throws {
        try await Reliability.withEmulator(for: .nativeHTTP, faults: ["pass", "stall-after-100K"]) { emulator in
            let route = Reliability.Route(wire: wire, via: .nativeHTTP)
            let payload = TestSupport.payload(size: 512 * 1024, seed: 3)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let sessions = Reliability.storage(route, emulator) { $0.uploads.multipartThreshold = -1 }

            let resumable = sessions.reference(withPath: "f.bin").putFile(from: file)
            let session = try #require(await resumable.waitForResumableSession())
            #expect(session.objectPath == "f.bin" && session.bucket == Reliability.bucket)
            #expect(session.source.size == Int64(payload.count))
            #expect(session.crc32c == CRC32C.checksum(payload), "known before a 512 KiB file sends")
            // Paused only once the emulator holds the request, so that the stall is spent on it.
            try await Self.waitUntilHeld(emulator, at: 100 * 1024)
            await resumable.pause()  // lets go of the held request
            await resumable.resume()
            _ = try await resumable.value
            #expect(resumable.resumableSession == nil, "a stored object's session cannot be continued")

            let data = sessions.reference(withPath: "d.bin").putData(payload)
            #expect(await data.waitForResumableSession() == nil)
            _ = try await data.value
            let oneRequest = Reliability.storage(route, emulator).reference(withPath: "s.bin").putFile(from: file)
            #expect(await oneRequest.waitForResumableSession() == nil)
            _ = try await oneRequest.value
        }
    }

    @Test func theRecordIsOwnerOnlyAndItsDescriptionHidesTheUploadID() async throws {
        try await Self.withPausedUpload(.gcs) { paused in
            let record = paused.file.deletingLastPathComponent().appendingPathComponent("record.json")
            // An existing, world-readable file is replaced, not rewritten in place.
            try Data("{}".utf8).write(to: record)
            chmod(record.path, 0o644)
            try paused.session.write(to: record)
            var info = stat()
            #expect(stat(record.path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
            let query = try #require(paused.session.sessionURL.query)
            #expect(!query.isEmpty)
            #expect(!paused.session.description.contains(query))
            #expect(!String(reflecting: paused.session).contains(query))
            #expect(!"\(paused.session)".contains(query))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: record.deletingLastPathComponent().path)
            #expect(leftovers.allSatisfy { !$0.hasSuffix(".tmp") })
        }
    }

    // MARK: Helpers

    /// Waits until the emulator holds the second chunk: no bound of its own (a starved whole-suite
    /// run exceeded two minutes), the suite's time limit ends the sleep if it never comes.
    static func waitUntilHeld(_ emulator: StorageEmulator, at held: Int64 = heldAt) async throws {
        while emulator.bytesReceived < held {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    static func expectRefused(
        _ storage: Storage, _ paused: Paused, _ code: StorageErrorCode,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let result = await Self.result { () throws(StorageError) in
            try storage.resumeUpload(paused.session, from: paused.file)
        }
        #expect(result == code, sourceLocation: sourceLocation)
    }

    static func result(_ start: () throws(StorageError) -> StorageUploadTask) async -> StorageErrorCode? {
        do {
            let task = try start()
            return await task.result().failureCode
        } catch {
            return error.code
        }
    }

    static func code(_ body: () throws(StorageError) -> Void) -> StorageErrorCode? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    /// Replaces the first bytes in place (same inode, same size).
    static func overwriteStart(of file: URL) throws {
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
    }

    static func setModificationTime(of file: URL, seconds: Int64, nanoseconds: Int64) throws {
        // Access time: now (UTIME_NOW, (1 << 30) - 1, which Glibc does not import as a Swift constant).
        var times = [
            timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1),
            timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds)),
        ]
        #expect(utimensat(AT_FDCWD, file.path, &times, 0) == 0)
    }

    static func identity(of file: URL) throws -> ReadOnlyFile.Identity {
        try ReadOnlyFile(path: file.path).identity
    }

    /// The description as one taken before the file's CRC32C was known.
    static func withoutChecksum(_ session: StorageUploadSession) throws -> StorageUploadSession {
        var json = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(session)) as? [String: Any])
        json["crc32c"] = nil
        return try StorageUploadSession.decode(JSONSerialization.data(withJSONObject: json), from: "test")
    }
}

extension Result where Failure == StorageError {
    /// The error's code, or nil for a success.
    var failureCode: StorageErrorCode? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
