import Foundation
import HTTPTestServers
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// A server or token endpoint that trickles its answer cannot keep an operation past its
/// bounds: a request that moves no object bytes is over within the request time-out, and a
/// retry is over by the end of the retry time, however steadily the bytes come.
///
/// The peers drip a byte every 10 ms forever (``DrippingPeer``), so only those bounds can end
/// a request; the verdicts are the error (a time-out, not the lost connection the peer's hang
/// guard would cause) and the requests the server counted.
@Suite("A trickling peer cannot outlast the request time-out or the retry time", .timeLimit(.minutes(10)))
struct SlowPeerBudgetTests {
    static let objectPath = "/storage/v1/b/b/o/o"
    static let tokenPath = "/token"
    static let drippedJSONHead = Array(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n".utf8)

    static func storage(
        _ server: NumberedServer, route: TestRoute, authorization: StorageAuthorization = .none,
        configure: (inout StorageConfiguration) throws -> Void
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try $0.retry.setMaxDelay(.milliseconds(1))
            try configure(&$0)
        }
        return Storage.gcsEmulator(
            bucket: "b", baseURL: server.baseURL, authorization: authorization, configuration: configuration)
    }

    static func serviceAccount(_ server: NumberedServer) throws -> StorageAuthorization {
        try .serviceAccount(
            keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: server.baseURL.absoluteString + tokenPath))
    }

    /// The transport failure at the bottom of `error`'s chain of underlying errors.
    static func transportFailure(_ error: StorageError?) -> HTTPTransportError? {
        var next: (any Error)? = error
        while let current = next {
            if let found = current as? HTTPTransportError { return found }
            next = (current as? StorageError)?.underlyingError
        }
        return nil
    }

    @Test("a metadata answer trickled from the first byte ends at the request time-out", arguments: TestRoute.all)
    func tricklingMetadataEndsAtTheRequestTimeOut(route: TestRoute) async throws {
        let peer = DrippingPeer()
        let server = try NumberedServer(scheme: route.scheme) { connection, path, _, _ in
            // Another object's delete warms the connection (and, over https, TLS) up.
            guard path == Self.objectPath else {
                connection.write(NumberedServer.empty(204))
                return .keepReading
            }
            peer.run(on: connection, prefix: Self.drippedJSONHead)
            return .close
        }
        defer { server.stop() }
        // The warm-up has the default time-out: on a starved machine connecting (over https, with
        // a handshake) or URLSession handing over even an immediate answer can take longer than
        // the second the test allows the trickled request, and the warm-up is not what is tested.
        let warm = Self.storage(server, route: route) { try $0.retry.setMaxOperationTime(.zero) }
        try await warm.reference(withPath: "warm").delete()
        // One attempt, over the warm-up's transport (and connection, where it keeps one); its
        // bytes never stop for as long as the time-out, yet it may not outlast it.
        var configuration = warm.configuration
        try configuration.timeouts.setRequest(.seconds(1))
        let storage = Storage(
            bucket: warm.bucket, endpoint: warm.endpoint, authorization: warm.authorization,
            configuration: configuration, transport: warm.transport)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .retryLimitExceeded)
        #expect(Self.transportFailure(error)?.kind == .timedOut, "\(String(describing: error))")
        // On a starved machine the time-out may come before the server read the request.
        if server.requests(to: Self.objectPath) == 1 { #expect(try await peer.ended() == .clientGone) }
    }

    @Test("a retry whose answer trickles ends with the retry time", arguments: TestRoute.all)
    func aTricklingRetryEndsWithTheRetryTime(route: TestRoute) async throws {
        let peer = DrippingPeer()
        let server = try NumberedServer(scheme: route.scheme) { connection, _, index, _ in
            // The first answer starts the retry time; the retry's answer never ends.
            guard index > 0 else {
                connection.write(NumberedServer.empty(503))
                return .keepReading
            }
            peer.run(on: connection, prefix: Self.drippedJSONHead)
            return .close
        }
        defer { server.stop() }
        // The request time-out alone would let the retry trickle on for a minute.
        let storage = Self.storage(server, route: route) { try $0.retry.setMaxOperationTime(.seconds(4)) }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .retryLimitExceeded)
        #expect(error?.httpStatus == 503)
        // The 503, then the retry the retry time ended (which, on a starved machine, may not have
        // reached the server before that end; it was cut short all the same).
        let requests = server.requests(to: Self.objectPath)
        #expect((1...2).contains(requests))
        // The retry time's end cut the retry short; what kept the operation retrying is reported.
        // (The retry time counts from the call's start: on a starved machine whose first answer
        // came after all of it, no retry began, and the 503 is reported as the last failure.)
        let cutShort = error?.message.contains("cut the last attempt short") == true
        #expect(cutShort || requests == 1, "\(String(describing: error))")
        if requests == 2 { #expect(try await peer.ended() == .clientGone) }
    }

    @Test("a token endpoint that trickles its answer ends at the request time-out", arguments: TestRoute.plain)
    func tricklingTokenEndpointEndsAtTheRequestTimeOut(route: TestRoute) async throws {
        let peer = DrippingPeer()
        let server = try NumberedServer { connection, path, _, _ in
            guard path == Self.tokenPath else {
                connection.write(NumberedServer.empty(204))
                return .keepReading
            }
            peer.run(on: connection, prefix: Self.drippedJSONHead)
            return .close
        }
        defer { server.stop() }
        let storage = Self.storage(server, route: route, authorization: try Self.serviceAccount(server)) {
            try $0.timeouts.setRequest(.seconds(1))
            try $0.retry.setMaxOperationTime(.zero)
        }
        let error = await #expect(throws: StorageError.self) { try await storage.reference(withPath: "o").delete() }
        #expect(error?.code == .retryLimitExceeded)
        #expect(error?.message.contains("token endpoint") == true, "\(String(describing: error))")
        #expect(Self.transportFailure(error)?.kind == .timedOut, "\(String(describing: error))")
        if server.requests(to: Self.tokenPath) == 1 { #expect(try await peer.ended() == .clientGone) }
        #expect(server.requests(to: Self.objectPath) == 0, "no token, no request")
    }

    @Test("a token endpoint that trickles a retry's answer ends with the retry time", arguments: TestRoute.plain)
    func aTricklingTokenRetryEndsWithTheRetryTime(route: TestRoute) async throws {
        let peer = DrippingPeer()
        let server = try NumberedServer { connection, path, index, _ in
            guard path == Self.tokenPath, index > 0 else {
                connection.write(NumberedServer.empty(path == Self.tokenPath ? 503 : 204))
                return .keepReading
            }
            peer.run(on: connection, prefix: Self.drippedJSONHead)
            return .close
        }
        defer { server.stop() }
        let storage = Self.storage(server, route: route, authorization: try Self.serviceAccount(server)) {
            try $0.retry.setMaxOperationTime(.seconds(2))
        }
        let error = await #expect(throws: StorageError.self) { try await storage.reference(withPath: "o").delete() }
        #expect(error?.code == .retryLimitExceeded)
        #expect(error?.message.contains("token endpoint") == true, "\(String(describing: error))")
        #expect(error?.message.contains("cut the last attempt short") == true, "\(String(describing: error))")
        #expect(error?.httpStatus == 503)
        let requests = server.requests(to: Self.tokenPath)
        #expect((1...2).contains(requests), "the 503, then the retry the retry time ended")
        if requests == 2 { #expect(try await peer.ended() == .clientGone) }
        #expect(server.requests(to: Self.objectPath) == 0)
    }
}
