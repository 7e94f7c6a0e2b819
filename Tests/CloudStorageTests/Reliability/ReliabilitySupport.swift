import Foundation
import HTTP1
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Emulators, storages, sources and checks shared by the reliability suites.
///
/// Every test starts its own in-process ``StorageEmulator`` on an ephemeral
/// loopback port, so a global fault plan scripts exactly the requests of that
/// one upload. What was stored is read from the emulator's object store, never
/// over HTTP, so that checking an object never consumes a fault instruction.
enum Reliability {
    /// The SDK's two wire protocols.
    enum Wire: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case gcs, firebase

        var testDescription: String { rawValue }

        func endpoint(_ base: URL) -> StorageEndpoint {
            switch self {
            case .gcs: .gcs(base)
            case .firebase: .firebase(base)
            }
        }
    }

    /// A wire protocol spoken over a ``TestRoute``: how a test's `Storage`
    /// reaches the emulator. Every case of the reliability suites runs on
    /// each route.
    struct Route: Sendable, Hashable, CustomTestStringConvertible {
        var wire: Wire
        var via: TestRoute

        var testDescription: String { "\(wire) via \(via.testDescription)" }

        /// Both wire protocols on each of ``TestRoute/all``.
        static let all: [Route] = TestRoute.all.flatMap { via in
            Wire.allCases.map { Route(wire: $0, via: via) }
        }
    }

    /// The request time-out of the cases whose request the emulator holds with
    /// `stall-after-N` (until the client closes the connection), so that the
    /// client's time-out is the only way on and no clock races another.
    ///
    /// It only sets how long such a case waits. It applies to the case's other
    /// requests too, where it is long enough that a loaded machine hardly ever
    /// trips it (a whole second of silence from a loopback emulator); when it
    /// does, the request is retried like any other time-out, and the verdicts
    /// allow for that. Whole seconds, as URLSession on Linux counts them.
    static let stallingRequestTimeout: Duration = .seconds(2)

    /// Where the bytes come from.
    enum Source: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case data, file

        var testDescription: String { rawValue }
    }

    /// Which request sequence an upload uses.
    enum Path: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// One multipart request (the default for objects up to 8 MiB).
        case multipart
        /// A resumable session (`uploads.multipartThreshold = -1`): start, then the bytes in one request.
        case resumable

        var testDescription: String { rawValue }

        /// The fault plan that leaves the session start alone and hits the first request carrying bytes.
        func plan(faultingBytesWith fault: String) -> [String] {
            switch self {
            case .multipart: [fault]
            case .resumable: ["pass", fault]
            }
        }
    }

    static let bucket = "reliability-bucket"
    static let granule = 256 * 1024

    /// Starts an emulator for one test, serving `route`'s scheme (stopped when `body` returns).
    static func withEmulator<T>(
        for route: TestRoute,
        faults: [String] = [],
        configure: (inout StorageEmulator.Configuration) -> Void = { _ in },
        _ body: (StorageEmulator) async throws -> T
    ) async throws -> T {
        var autoCreatesBuckets = true
        let emulator = try route.startEmulator { configuration in
            configuration.faults = faults
            configure(&configuration)
            autoCreatesBuckets = configuration.autoCreateBuckets
        }
        defer { emulator.stop() }
        if autoCreatesBuckets { try emulator.createBucket(bucket) }
        return try await body(emulator)
    }

    /// A `Storage` for `emulator` on `route` (its transport, and for `https` the test CA), with
    /// fast retries (5 ms doubling up to 40 ms, 30 s budget) of every request: these suites test
    /// how the engines recover from a failure at any point of any request, the one that creates
    /// the object included, as the CLI's `always` policy retries it. Which requests the default
    /// policy retries is ``RetryStrategyTests``' subject.
    static func storage(
        _ route: Route,
        _ emulator: StorageEmulator,
        bucket: String = Reliability.bucket,
        authorization: StorageAuthorization = .none,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(5))
            try $0.retry.setMaxDelay(.milliseconds(40))
            try $0.retry.setMaxUploadTime(.seconds(30))
            $0.retry.policy = .always
        }
        route.via.apply(to: &configuration)
        configuration.applyForTest(configure)
        return Storage(
            bucket: bucket, endpoint: route.wire.endpoint(emulator.baseURL), authorization: authorization,
            configuration: configuration)
    }

    /// Starts an upload of `payload` from memory or from a temporary file.
    ///
    /// - Returns: The task, and a closure that removes the file (call it after the task ended).
    static func start(
        _ payload: Data, from source: Source, to reference: StorageReference, metadata: StorageMetadata? = nil
    ) throws -> (StorageUploadTask, cleanUp: @Sendable () -> Void) {
        switch source {
        case .data:
            return (reference.putData(payload, metadata: metadata), {})
        case .file:
            let file = try TestSupport.file(containing: payload)
            let task = reference.putFile(from: file, metadata: metadata)
            return (task, { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) })
        }
    }

    /// What an upload ended with, and every snapshot one stream saw.
    struct Ending {
        var result: Result<StorageMetadata, StorageError>
        var snapshots: [TaskSnapshot]

        var error: StorageError? {
            if case .failure(let error) = result { return error }
            return nil
        }
    }

    /// Uploads `payload` and waits for the end, checking that a stream subscribed at
    /// the start sees exactly one terminal snapshot, last, matching the result.
    static func upload(
        _ payload: Data, from source: Source, to reference: StorageReference, metadata: StorageMetadata? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Ending {
        let (task, cleanUp) = try start(payload, from: source, to: reference, metadata: metadata)
        defer { cleanUp() }
        let stream = task.snapshots
        let observer = Task { await TestSupport.collect(stream) }
        let result = await task.result()
        let snapshots = await observer.value
        expectOneTerminal(snapshots, matching: result, sourceLocation: sourceLocation)
        return Ending(result: result, snapshots: snapshots)
    }

    /// A finished stream holds exactly one terminal snapshot, at its end, agreeing with the result.
    static func expectOneTerminal(
        _ snapshots: [TaskSnapshot], matching result: Result<StorageMetadata, StorageError>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(snapshots.filter { $0.status.isTerminal }.count == 1, sourceLocation: sourceLocation)
        switch result {
        case .success:
            #expect(snapshots.last?.status == .success, sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(snapshots.last?.status == .failure, sourceLocation: sourceLocation)
            #expect(snapshots.last?.error?.code == error.code, sourceLocation: sourceLocation)
        }
    }

    /// The emulator's record of an object, read from its store.
    static func record(
        _ name: String, in emulator: StorageEmulator, bucket: String = Reliability.bucket
    )
        -> ObjectRecord?
    {
        emulator.application.store.record(bucket: bucket, name: name)
    }

    /// The bytes the emulator stores for an object, or nil when there is none.
    static func stored(
        _ name: String, in emulator: StorageEmulator, bucket: String = Reliability.bucket
    ) throws
        -> Data?
    {
        guard let record = record(name, in: emulator, bucket: bucket) else { return nil }
        return try emulator.application.store.readAll(record)
    }

    /// Upload sessions the emulator still holds (deleted ones are gone; finalized ones stay).
    static func liveSessions(_ emulator: StorageEmulator) -> Int {
        emulator.application.sessions.count
    }

    /// Checks that the emulator holds exactly `expected` under `name`, with its CRC32C,
    /// and that the metadata the SDK returned describes that object.
    static func expectStored(
        _ expected: Data, as name: String, in emulator: StorageEmulator, returned: StorageMetadata?,
        bucket: String = Reliability.bucket, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let bytes = try stored(name, in: emulator, bucket: bucket)
        #expect(bytes != nil, "the object \(name) is missing", sourceLocation: sourceLocation)
        guard let bytes else { return }
        #expect(bytes.count == expected.count, "duplicated or missing bytes", sourceLocation: sourceLocation)
        #expect(bytes == expected, "stored bytes differ from the payload", sourceLocation: sourceLocation)
        let record = record(name, in: emulator, bucket: bucket)
        #expect(record?.crc32c == CRC32C.checksum(expected), sourceLocation: sourceLocation)
        if let returned {
            #expect(returned.size == Int64(expected.count), sourceLocation: sourceLocation)
            #expect(returned.crc32cValue == CRC32C.checksum(expected), sourceLocation: sourceLocation)
            #expect(returned.generation == record?.generation, sourceLocation: sourceLocation)
        }
    }

    /// Downloads an object with `GET …?alt=media` through a transport of the test's own
    /// (``TestRoute/reader``), in the wire protocol's own URL form.
    static func download(_ name: String, wire: Wire, from emulator: StorageEmulator) async throws -> Data {
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
        let path =
            switch wire {
            case .gcs: "/download/storage/v1/b/\(bucket)/o/\(encoded)?alt=media"
            case .firebase: "/v0/b/\(bucket)/o/\(encoded)?alt=media"
            }
        let url = URL(string: emulator.baseURL.absoluteString + path)!
        let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
        #expect(response.status == 200)
        return response.body
    }

    /// Limits how many heavy cases run at once, so that 2 shared cores are not
    /// swamped by hundreds of emulators and uploads starting together.
    ///
    /// Swift Testing starts every case at once, so a case's time limit also
    /// counts its wait here: the heavy suites' limits (10 minutes) cover the
    /// whole suite on a loaded machine (about 3 minutes on an idle one), and
    /// still end a hang.
    static let gate = AsyncGate(width: 6)
}

/// A counting semaphore for async code: at most `width` holders at a time, first come first served.
actor AsyncGate {
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(width: Int) {
        available = width
    }

    func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            available += 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}

extension Reliability {
    /// Runs `body` holding one of the gate's slots.
    static func throttled<T>(_ body: () async throws -> T) async throws -> T {
        await gate.acquire()
        do {
            let value = try await body()
            await gate.release()
            return value
        } catch {
            await gate.release()
            throw error
        }
    }
}

extension Reliability {
    /// The loopback endpoint ``foreignSessionTransport()`` opens sessions on.
    static let loopback = URL(string: "http://127.0.0.1:9")!
    /// The session URL it hands back: another, plain-http host.
    static let foreignSession = "http://uploads.example.invalid:80/session/1"

    /// A transport that opens sessions on ``loopback`` but hands back a session URL on
    /// another, plain-http host (``foreignSession``), and records every request: the SDK must
    /// never send the token there.
    static func foreignSessionTransport() -> TestTransport {
        let transport = TestTransport()
        transport.answer { request, _ in
            guard request.url.host == "127.0.0.1" else {
                // Nothing may ever get here with a token; answer like a server that forgot the session.
                return TestTransport.response(404)
            }
            let isStart =
                request.headers["X-Goog-Upload-Command"] == "start"
                || (request.url.query ?? "").contains("uploadType=resumable")
            guard isStart else {
                return TestTransport.response(400, body: "{\"error\":{\"message\":\"unscripted\"}}")
            }
            return TestTransport.response(
                200,
                headers: [
                    "Location": foreignSession, "X-Goog-Upload-URL": foreignSession,
                    "X-Goog-Upload-Status": "active",
                ])
        }
        return transport
    }
}
