import Foundation
import HTTPTestServers
import NativeTLS
import StorageEmulator
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Which transport carries which request: ``StorageTransportChoice/automatic``
/// sends `https://` through the native transport wherever OpenSSL 3 loads and
/// through `URLSession` only where it cannot; ``StorageTransportChoice/native``
/// without OpenSSL fails `https://` at once, saying why. Where OpenSSL is
/// missing is simulated by handing the choice a reason, as a machine without
/// `libssl.so.3` would.
@Suite("Transport routing", .timeLimit(.minutes(10)))
struct TransportRoutingTests {
    static let https = StorageEndpoint.gcs(URL(string: "https://127.0.0.1:1")!)
    static let http = StorageEndpoint.gcs(URL(string: "http://127.0.0.1:1")!)
    static let missing = "libssl.so.3: cannot open shared object file: No such file or directory"

    /// A transport that records the URLs it was asked to carry and answers 200.
    static func recorder(maximumBodyLength: Int64?) -> TestTransport {
        let recorder = TestTransport(maximumBodyLength: maximumBodyLength)
        recorder.answer { _, _ in TestTransport.response(200) }
        return recorder
    }

    /// The engine asks the transport that will carry a request what it can do, once: a routing
    /// transport names its carrier per URL, and the carrier's capabilities are its own.
    @Test func aRoutingTransportNamesTheCarrierOfEachURLWhoseCapabilitiesTheEngineReads() throws {
        let routing = try #require(
            StorageTransportChoice.automatic.transport(for: Self.https, tlsUnavailableReason: nil)
                as? SchemeRoutingTransport)
        let https = URL(string: "https://127.0.0.1:1/o")!
        let carrier = try #require(routing.carrier(for: https) as? NativeHTTPTransport)
        #expect(carrier === routing.native as? NativeHTTPTransport)
        #expect(carrier.capabilities.contains(.letsResponseSinksWait))
        #expect(carrier.capabilities.readsFileRegions(to: https))
        let other = routing.carrier(for: URL(string: "gs://b/o")!)
        #expect(other is URLSessionTransport)
        #expect(!other.capabilities.contains(.letsResponseSinksWait))
        #expect(!other.capabilities.readsFileRegions(to: https))
    }

    @Test func automaticSendsHTTPSThroughTheNativeTransportWhereOpenSSLLoads() throws {
        let available = StorageTransportChoice.automatic.transport(
            for: Self.https, tlsUnavailableReason: nil)
        let routing = try #require(available as? SchemeRoutingTransport)
        #expect(routing.native is NativeHTTPTransport)
        #expect(routing.nativeSchemes == ["http", "https"])
        #expect(routing.maximumBodyLength == nil, "no 32 MiB bound on requests to an https endpoint")

        let unavailable = StorageTransportChoice.automatic.transport(
            for: Self.https, tlsUnavailableReason: Self.missing)
        #expect(unavailable is URLSessionTransport, "the fallback where OpenSSL 3 cannot be loaded")
        let plain = try #require(
            StorageTransportChoice.automatic.transport(
                for: Self.http, tlsUnavailableReason: Self.missing)
                as? SchemeRoutingTransport)
        #expect(plain.nativeSchemes == ["http"])

        // What this process itself does: on Linux, OpenSSL 3 is present wherever FoundationNetworking is.
        #if os(Linux)
        #expect(TLSLibrary.isAvailable)
        #expect(Storage(bucket: "b").transport is SchemeRoutingTransport)
        #else
        #expect(Storage(bucket: "b").transport is URLSessionTransport)
        #endif
    }

    @Test func eachRequestIsRoutedByItsOwnScheme() async throws {
        let urls = ["http://a/1", "https://a/2", "HTTPS://a/3", "ftp://a/4"].map { URL(string: $0)! }
        for (schemes, toNative) in [(["http", "https"], [0, 1, 2]), (["http"], [0])] {
            let native = Self.recorder(maximumBodyLength: nil)
            let other = Self.recorder(maximumBodyLength: 32)
            let routing = SchemeRoutingTransport(
                native: native, other: other, nativeSchemes: Set(schemes), endpointScheme: "https")
            for url in urls {
                _ = try await routing.execute(HTTPRequest(method: "GET", url: url), progress: nil)
            }
            #expect(native.sent.map(\.url) == toNative.map { urls[$0] })
            #expect(other.sent.count == urls.count - toNative.count)
            // The endpoint's scheme decides the body bound: its requests all go one way.
            #expect(routing.maximumBodyLength == (schemes.contains("https") ? nil : 32))
        }
    }

    @Test func automaticUploadsToAnHTTPSEmulatorTrustingAPrivateCA() async throws {
        var emulatorConfiguration = StorageEmulator.Configuration()
        emulatorConfiguration.tls = .init(
            certificateChain: .file(TLSTestPKI.path("localhost.pem")),
            privateKey: .file(TLSTestPKI.path("localhost.key")))
        let emulator = try StorageEmulator.start(emulatorConfiguration)
        defer { emulator.stop() }
        var configuration = StorageConfiguration()
        #expect(configuration.transport == .automatic)
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))]
        let storage = Storage.gcsEmulator(bucket: "routing", baseURL: emulator.baseURL, configuration: configuration)
        #expect(emulator.baseURL.scheme == "https")

        // Only the native transport can trust the private CA: through URLSession this fails as untrusted.
        let payload = Data(testBytes(count: 100_000, seed: 5))
        let metadata = try await storage.reference(withPath: "automatic.bin").putDataAsync(payload)
        #expect(metadata.size == Int64(payload.count))
        #expect(try await storage.reference(withPath: "automatic.bin").data(maxSize: 1 << 20) == payload)
    }

    @Test func nativeWithoutOpenSSLFailsHTTPSAtOnceSayingWhy() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let endpoint = StorageEndpoint.gcs(URL(string: "https://127.0.0.1:\(server.port)")!)
        var configuration = StorageConfiguration()
        configuration.transport = .native
        // A retry would wait out this budget, and open connections the server would report.
        try configuration.retry.setMaxOperationTime(.seconds(600))
        let storage = Storage(
            bucket: "b", endpoint: endpoint, authorization: .bearerToken("secret-token"), configuration: configuration,
            transport: StorageTransportChoice.native.transport(
                for: endpoint, tlsUnavailableReason: Self.missing))
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object").putDataAsync(Data("secret bytes".utf8))
        }
        #expect(error?.code == .tlsFailure)
        #expect(error?.message.contains("OpenSSL 3") == true)
        #expect(error?.message.contains(Self.missing) == true)
        #expect(try await server.connectionsSoFar().isEmpty, "refused before connecting")
    }
}
