import Foundation
import HTTPTestServers
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The transport knows nothing of storage: the HTTP client is a target of its own that
/// CloudStorage depends on, never the reverse (the compiler keeps that), errors from above (a
/// body file's, a response sink's) travel through it untouched, and only the engine turns
/// them back into its own.
@Suite("Transport layering", .timeLimit(.minutes(10)))
struct TransportLayeringTests {
    /// An error no transport could know.
    struct Marker: Error, Equatable {
        var id: Int
    }

    /// A body file that fails every read with its own error.
    struct FailingFile: HTTPBodyFile {
        let descriptor: Int32 = -1
        func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
            throw Marker(id: 1)
        }
        func endedEarlyError(at end: Int64) -> any Error { Marker(id: 2) }
        func readFailedError(errno code: Int32) -> any Error { Marker(id: 3) }
    }

    /// Only NativeTLS sees OpenSSL: no other module imports the loader, or the C target that
    /// once held CRC32C and the TLS shim together (SwiftPM would let a module import a
    /// dependency's C target unchecked), and none calls the loader's functions.
    @Test func onlyNativeTLSSeesTheOpenSSLLoader() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            guard !file.path.contains("/Sources/NativeTLS/") else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("import ") {
                let module = line.split(separator: " ").last.map(String.init) ?? ""
                #expect(!["COpenSSLLoader", "CCloudStorage"].contains(module), "\(file.lastPathComponent): \(line)")
            }
            #expect(!text.contains("cs_openssl") && !text.contains("cs_tls_"), "\(file.lastPathComponent)")
            checked += 1
        }
        #expect(checked > 100)
    }

    /// The repository's `Sources` folder.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")

    /// The HTTP client names nothing of the storage layer: no file imports CloudStorage (which
    /// its target could not build against anyway), and none names storage's settings, errors or
    /// protocols, in code or in the messages and documentation it hands out; the engine adds
    /// such advice where it maps the client's errors.
    @Test func theHTTPClientNamesNothingOfStorage() throws {
        let client = Self.sources.appendingPathComponent("HTTPClient")
        let files = try #require(FileManager.default.enumerator(at: client, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("import ") {
                #expect(line.split(separator: " ").last != "CloudStorage", "\(file.lastPathComponent): \(line)")
            }
            for word in ["StorageTransportChoice", "StorageConfiguration", "StorageError", "Firebase", "308"] {
                #expect(!text.contains(word), "\(file.lastPathComponent) names \(word)")
            }
            checked += 1
        }
        #expect(checked >= 15)
    }

    /// Where the client names a remedy, the engine words it as the setting to change.
    @Test func theEngineAddsTheConfigurationAdviceToTheClientsRemedy() {
        let scheme = HTTPTransportError(kind: .other, message: "x.", permanent: true, remedy: .anotherTransport)
        guard case .final(let error) = TransportFailureVerdict(scheme, server: "s") else {
            Issue.record("a permanent failure is final")
            return
        }
        #expect(error.message.contains("StorageTransportChoice.urlSession"))
        let roots = HTTPTransportError(
            kind: .tlsFailure, message: "x.", permanent: true, remedy: .transportWithOwnTrustRoots)
        guard case .final(let tls) = TransportFailureVerdict(roots, server: "s") else {
            Issue.record("a TLS failure is final")
            return
        }
        #expect(tls.code == .tlsFailure && tls.message.contains("StorageConfiguration.tls.additionalTrustRoots"))
    }

    @Test func aBodyFilesOwnErrorComesBackUntouched() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            connection.drainUntilClosed()
        }
        defer { server.stop() }
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.usesSendfile = false  // so the file's own read runs
        let transport = NativeHTTPTransport(configuration: configuration)
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(
                HTTPRequest(
                    method: "PUT", url: NativeHTTPTransportWithSDKTests.url(server.port),
                    body: HTTPRequestBody(segments: [.fileRegion(FailingFile(), offset: 0, length: 10)])),
                progress: nil)
        }
        #expect(error?.kind == .bodySourceFailed)
        #expect(error?.underlying as? Marker == Marker(id: 1))
    }

    @Test func aSinksOwnErrorComesBackUntouched() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok("some body"))
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        var request = HTTPRequest(method: "GET", url: NativeHTTPTransportWithSDKTests.url(server.port))
        request.responseSink = HTTPResponseSink(
            begin: { _, _ in true },
            receive: { _ in throw Marker(id: 4) })
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(request, progress: nil)
        }
        #expect(error?.kind == .sinkFailed)
        #expect(error?.underlying as? Marker == Marker(id: 4))
    }

    @Test func onlyTheEngineTurnsCarriedErrorsBackIntoStorageErrors() {
        let own = StorageError(.fileChanged, "The file changed.")
        #expect(CallExecutor.engineError(in: .bodySourceFailed(own))?.code == .fileChanged)
        #expect(CallExecutor.engineError(in: .sinkFailed(own))?.code == .fileChanged)
        // A carried error the engine does not own is a final failure, not a retry.
        #expect(CallExecutor.engineError(in: .sinkFailed(Marker(id: 5)))?.code == .unknown)
        // Failures of the transport itself stay the transport's, for the retry policy.
        #expect(CallExecutor.engineError(in: HTTPTransportError(kind: .connectionLost, message: "x")) == nil)
    }

    @Test func theWireProtocolsSayWhichRequestsAreSafeToSendTwice() {
        let base = URL(string: "http://127.0.0.1:9/")!
        let session = URL(string: "http://127.0.0.1:9/session")!
        let upload = UploadDescription(
            bucket: "b", objectName: "o", metadata: StorageMetadata(), contentType: "text/plain", size: 1, crc32c: nil)
        let body = HTTPRequestBody.data(Data("x".utf8))
        let gcs = GCSJSONProtocol(baseURL: base)
        #expect(!gcs.singleRequestUpload(upload, body: body).isIdempotent)
        #expect(!gcs.startSession(upload).isIdempotent)
        #expect(
            gcs.send(session: session, offset: 0, body: body, isFinal: false, totalSize: 1, crc32c: nil).isIdempotent)
        #expect(gcs.query(session: session).isIdempotent)
        #expect(gcs.cancel(session: session).isIdempotent)
        #expect(gcs.objectMetadata(bucket: "b", name: "o").isIdempotent)
        #expect(gcs.media(bucket: "b", name: "o", MediaRead(offset: 0)).isIdempotent)
        #expect(!gcs.updateMetadata(bucket: "b", name: "o", StorageMetadataUpdate()).isIdempotent)
        let v0 = FirebaseV0Protocol(baseURL: base)
        #expect(!v0.singleRequestUpload(upload, body: body).isIdempotent)
        #expect(!v0.startSession(upload).isIdempotent)
        #expect(
            !v0.send(session: session, offset: 0, body: body, isFinal: false, totalSize: 1, crc32c: nil).isIdempotent)
        #expect(v0.query(session: session).isIdempotent)
        #expect(v0.cancel(session: session).isIdempotent)
        #expect(v0.objectMetadata(bucket: "b", name: "o").isIdempotent)
        #expect(v0.media(bucket: "b", name: "o", MediaRead(offset: 0)).isIdempotent)
        #expect(!v0.updateMetadata(bucket: "b", name: "o", StorageMetadataUpdate()).isIdempotent)
    }
}
