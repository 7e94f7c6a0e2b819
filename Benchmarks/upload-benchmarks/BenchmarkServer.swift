import FakeGCSServer
import Foundation
import StorageEmulator

/// Which server a `--discard` scenario uploads to.
enum BenchmarkServerKind: String, Sendable, Codable, CaseIterable {
    /// The built-in emulator with `.discard` backing, in this process: checks sizes and checksums, stores nothing.
    case discard
    /// The built-in emulator with `.memory` backing, in this process: keeps every object in RAM.
    case memory
    /// fake-gcs-server (memory backend) in a process of its own, supervised by ``FakeGCSServer``.
    case fakeGCS = "fake-gcs"

    /// The servers a run uses when `--servers` is not given, in the order their blocks run.
    static let defaults: [BenchmarkServerKind] = [.discard, .memory, .fakeGCS]

    /// Whether uploaded objects stay on the server (and so must be deleted after each run).
    var storesObjects: Bool { self != .discard }

    /// Whether the server runs in this process, so this process's CPU time and RSS include it.
    var inProcess: Bool { self != .fakeGCS }
}

/// One running server of a `--discard` run: started for its block of
/// scenarios, stopped after it, so that no two servers share the machine's
/// cores or memory at the same time.
final class BenchmarkServer: Sendable {
    let kind: BenchmarkServerKind
    /// `http://127.0.0.1:<port>`, or `https://` with `tls`.
    let baseURL: URL
    let port: Int
    /// What the report says about the server.
    let description: String
    private let emulator: StorageEmulator?
    private let fakeGCS: FakeGCSServer?

    private init(
        kind: BenchmarkServerKind, baseURL: URL, port: Int, description: String, emulator: StorageEmulator?,
        fakeGCS: FakeGCSServer?
    ) {
        self.kind = kind
        self.baseURL = baseURL
        self.port = port
        self.description = description
        self.emulator = emulator
        self.fakeGCS = fakeGCS
    }

    /// The process whose tree's CPU time is the server's; nil for a server in this process.
    var processRoot: Int32? { fakeGCS?.supervisorProcessIdentifier }

    /// Starts a server of `kind` and creates `bucket` on it.
    ///
    /// - Parameters:
    ///   - kind: Which server.
    ///   - bucket: The bucket every scenario uploads to.
    ///   - tls: Serve https with the test certificate (the emulators only).
    /// - Returns: The running server; call ``stop()`` when its block is done.
    /// - Throws: The emulator's error, or ``FakeGCSServerError`` when fake-gcs-server cannot be installed
    ///   (pip, network) or started.
    static func start(_ kind: BenchmarkServerKind, bucket: String, tls: Bool = false) async throws -> BenchmarkServer {
        switch kind {
        case .discard, .memory:
            var configuration = StorageEmulator.Configuration()
            configuration.backing = kind == .discard ? .discard : .memory
            if tls { configuration.tls = BenchmarkTLS.identity }
            let emulator = try StorageEmulator.start(configuration)
            do {
                try emulator.createBucket(bucket)
            } catch {
                emulator.stop()
                throw error
            }
            var backing = kind == .discard ? ".discard backing" : ".memory backing (objects deleted after each run)"
            if tls { backing += ", TLS with Tests/TLSTestCertificates/localhost.pem" }
            return BenchmarkServer(
                kind: kind, baseURL: emulator.baseURL, port: emulator.port,
                description:
                    "built-in StorageEmulator, \(backing), in this process, \(emulator.baseURL.absoluteString)",
                emulator: emulator, fakeGCS: nil)
        case .fakeGCS:
            let server = try await FakeGCSServer.start()
            do {
                try await server.createBucket(bucket)
            } catch {
                server.stop()
                await server.waitUntilStopped()
                throw error
            }
            return BenchmarkServer(
                kind: kind, baseURL: server.baseURL, port: server.port,
                description:
                    "fake-gcs-server (\(FakeGCSServer.packageRequirement)), memory backend, own process, \(server.baseURL.absoluteString) (objects deleted after each run)",
                emulator: nil, fakeGCS: server)
        }
    }

    /// Stops the server and, for fake-gcs-server, waits until its process is gone.
    func stop() async {
        emulator?.stop()
        if let fakeGCS {
            fakeGCS.stop()
            await fakeGCS.waitUntilStopped()
        }
    }
}
