import Foundation
import HTTPTestServers
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// How a test's `Storage` reaches a server: which transport moves the bytes,
/// and over which scheme. Every suite that talks to our emulator runs on each
/// of ``all``; this type is the one place that knows how an `https` route is
/// set up (the emulator serves the committed `localhost` certificate, and the
/// `Storage` trusts the test CA), so that suites never repeat it.
///
/// `https` is always the native transport, named explicitly: `URLSession` on
/// Linux cannot be told to trust a private CA, and ``StorageTransportChoice/automatic``
/// may route `https` either way.
struct TestRoute: Sendable, Hashable, CustomTestStringConvertible {
    /// The scheme the test servers (``ScriptedHTTPServer``) speak, so that a route passes its own.
    typealias Scheme = ScriptedHTTPServer.Scheme

    var transport: StorageTransportChoice
    var scheme: Scheme

    static let nativeHTTP = TestRoute(transport: .native, scheme: .http)
    static let urlSessionHTTP = TestRoute(transport: .urlSession, scheme: .http)
    static let nativeHTTPS = TestRoute(transport: .native, scheme: .https)

    /// Every route a suite that talks to the emulator runs on.
    static let all: [TestRoute] = [.nativeHTTP, .urlSessionHTTP, .nativeHTTPS]
    /// The plain-HTTP routes, for tests about plain HTTP itself (credentials refused on
    /// plain HTTP to another machine, offline endpoints) or against servers that only
    /// speak it (the Emulators article's example emulator).
    static let plain: [TestRoute] = all.filter { $0.scheme == .http }

    var testDescription: String { "\(transport) over \(scheme)" }

    /// The identity an `https` emulator serves, read once per process.
    static let serverIdentity: StorageEmulator.TLSIdentity = {
        func pem(_ name: String) -> StorageEmulator.TLSIdentity.PEM {
            // A missing file makes every https case fail with the emulator's own error.
            .bytes((try? [UInt8](Data(contentsOf: URL(fileURLWithPath: TLSTestPKI.path(name))))) ?? [])
        }
        return StorageEmulator.TLSIdentity(certificateChain: pem("localhost.pem"), privateKey: pem("localhost.key"))
    }()

    /// The test CA, which signed the server certificate.
    static let trustRoot = StorageConfiguration.TrustRoot.file(
        TLSTestPKI.directory.appendingPathComponent("test-ca.pem"))

    /// Sets the transport, and for `https` the test CA as a trust root.
    func apply(to configuration: inout StorageConfiguration) {
        configuration.transport = transport
        if scheme == .https { configuration.tls.additionalTrustRoots = [Self.trustRoot] }
    }

    /// Makes the emulator serve this route's scheme.
    func apply(to configuration: inout StorageEmulator.Configuration) {
        configuration.tls = scheme == .https ? Self.serverIdentity : nil
    }

    /// Starts an emulator serving this route's scheme; the caller stops it.
    func startEmulator(
        _ configure: (inout StorageEmulator.Configuration) -> Void = { _ in }
    ) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        apply(to: &configuration)
        configure(&configuration)
        let emulator = try StorageEmulator.start(configuration)
        #expect(emulator.baseURL.scheme == scheme.rawValue, "the emulator serves the route's scheme")
        return emulator
    }

    /// The transport a `Storage` on this route makes for `endpoint`, for tests that wrap it.
    func makeTransport(for endpoint: StorageEndpoint) -> any HTTPTransport {
        var configuration = StorageConfiguration()
        apply(to: &configuration)
        return configuration.transport.transport(for: endpoint, configuration: configuration)
    }

    /// A transport of the test's own, to read what a server holds on either scheme
    /// without going through the transport under test.
    static let reader: NativeHTTPTransport = TLSTestPKI.transport()
}
