import Foundation
import HTTP1
import NativeTLS
import Synchronization

@testable import StorageEmulator

/// An application made of a closure, for tests.
struct ClosureApplication: ServerApplication {
    let body: @Sendable (any ServerRequest, any ServerResponder) -> Void

    init(_ body: @escaping @Sendable (any ServerRequest, any ServerResponder) -> Void) {
        self.body = body
    }

    func handle(_ request: any ServerRequest, _ responder: any ServerResponder) {
        body(request, responder)
    }
}

/// Reads the whole body and answers with it, describing the request in headers.
struct EchoApplication: ServerApplication {
    /// The size of each read; small sizes exercise reads that stop inside a chunk.
    var readSize = 64 * 1024

    func handle(_ request: any ServerRequest, _ responder: any ServerResponder) {
        do {
            var body = Data()
            var buffer = [UInt8](repeating: 0, count: readSize)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try request.readBody(into: $0) }
                if count == 0 { break }
                body.append(contentsOf: buffer[0..<count])
            }
            var headers: HTTPHeaders = [:]
            headers.add("X-Method", request.method)
            headers.add("X-Path", request.path)
            headers.add("X-Query", request.queryItems.map { "\($0.name)=\($0.value)" }.joined(separator: "&"))
            headers.add("X-Content-Length", request.contentLength.map(String.init) ?? "chunked")
            try responder.respond(status: 200, headers: headers, body: body)
        } catch {
            try? responder.respond(status: 400, headers: ["X-Error": "\(error)"], body: Data())
        }
    }
}

/// Reads the body in 1 MiB pieces without keeping it and answers with its length.
struct CountingApplication: ServerApplication {
    func handle(_ request: any ServerRequest, _ responder: any ServerResponder) {
        var buffer = [UInt8](repeating: 0, count: 1024 * 1024)
        var total = 0
        do {
            while true {
                let count = try buffer.withUnsafeMutableBytes { try request.readBody(into: $0) }
                if count == 0 { break }
                total += count
            }
            try responder.respond(status: 200, headers: [:], body: Data(String(total).utf8))
        } catch {
            try? responder.respond(status: 500, headers: [:], body: Data("\(error)".utf8))
        }
    }
}

/// Starts a server, runs `body` with its port, and stops the server on a thread of its own.
func withServer<T: Sendable>(
    _ application: any ServerApplication,
    limits: EmulatorHTTPServer.Limits = .init(),
    tls: TLSContext? = nil,
    _ body: (EmulatorHTTPServer, Int) async throws -> T
) async throws -> T {
    let server = EmulatorHTTPServer(application: application, limits: limits, tls: tls)
    let port = try server.start()
    let result: Result<T, any Error>
    do {
        result = .success(try await body(server, port))
    } catch {
        result = .failure(error)
    }
    try await onThread { server.stop() }
    return try result.get()
}

/// A value set by one thread and read by another.
final class Box<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func get() -> Value { value.withLock { $0 } }
}

/// Waits, polling, until `condition` holds (a server-side state another thread brings about).
///
/// What comes next depends on the state, so there is no guess a starved machine could exceed:
/// the suites' time limits (at most five minutes) report a state that never comes. Those
/// limits cannot end a thread, though, so after ten minutes the wait throws, and the test
/// ends instead of holding the whole run for ever.
func waitUntil(_ condition: () -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(600)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw RawClient.Failure(description: "the awaited server state never came")
        }
        Thread.sleep(forTimeInterval: 0.005)
    }
}
