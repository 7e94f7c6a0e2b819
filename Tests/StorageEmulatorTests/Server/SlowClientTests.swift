import Dispatch
import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sends one header byte; false once the connection is gone.
private func sendByte(_ fd: Int32) -> Bool {
    var byte = UInt8(ascii: "a")
    #if canImport(Glibc)
    return Glibc.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1
    #else
    return Darwin.send(fd, &byte, 1, 0) == 1
    #endif
}

/// Slowloris: clients that trickle request heads (or send nothing) must neither hold a
/// connection forever nor keep well-behaved clients out.
@Suite("Slow clients", .serialized, .timeLimit(.minutes(10)))
struct SlowClientTests {
    /// How long a test client waits for an answer: far beyond anything the server takes to
    /// answer (its time-outs are set out of reach where that matters), so that only the
    /// eviction logic decides what a client gets, never a race with this guard on a starved
    /// machine; still under the suite's time limit, so that a broken eviction fails clearly.
    static let patience: Duration = .seconds(90)

    @Test("a head trickled a byte at a time gets 408 once the head deadline passes")
    func trickledHeadTimesOut() async throws {
        var limits = EmulatorHTTPServer.Limits()
        // Each byte arrives well within the read timeout; only the whole-head deadline can stop it.
        limits.headTimeout = .milliseconds(200)
        limits.readTimeout = .seconds(60)
        limits.lingerTimeout = .milliseconds(100)
        let response = try await withServer(EchoApplication(), limits: limits) { _, port in
            try await onThread {
                let client = try RawClient(port: port, receiveTimeout: .seconds(20))
                try client.send("GET / HTTP/1.1\r\nHost: h\r\nX-Slow: ")
                let done = Box(false)
                // Only the descriptor crosses threads: this thread reads while the other one writes.
                let fd = client.fd
                // Sends a header byte every 20 ms until told to stop or the server closes: without a
                // whole-head deadline the head would never end, and the read below would time out.
                let trickler = Thread {
                    while !done.get() {
                        guard sendByte(fd) else { return }
                        Thread.sleep(forTimeInterval: 0.02)
                    }
                }
                trickler.start()
                defer { done.set(true) }
                return try client.readResponse()
            }
        }
        #expect(response.status == 408)
        #expect(response.headers["Connection"] == "close")
    }

    @Test("connections with incomplete heads do not keep a well-behaved client out, and each gets 503")
    func tricklersDoNotStarveOthers() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 3
        // Only eviction may answer a trickler here, never a time-out.
        limits.headTimeout = .seconds(600)
        limits.readTimeout = .seconds(600)
        limits.idleTimeout = .seconds(600)
        let outcome = try await withServer(EchoApplication(), limits: limits) { server, port in
            try await onThread {
                // Twice as many trickling connections as slots, each with a head that never ends.
                let tricklers = try (0..<6).map { index in
                    let client = try RawClient(port: port, receiveTimeout: Self.patience)
                    try client.send(index % 2 == 0 ? "GET / HTTP/1.1\r\nHo" : "")
                    return client
                }
                // Every slot holds a trickler waiting for the rest of its head, and the other three
                // were refused, or evicted from the slots they took: all six were admitted (three
                // waiting alone could be the first three, with the rest still to be accepted, and
                // then taking the slots the well-behaved clients below are meant to get).
                try waitUntil {
                    server.connectionsWaitingForPeer == 3 && tricklers.count(where: \.hasBytesWaiting) == 3
                }
                // Kept open, so that each one has to make room for itself (it is then idle, and
                // newer in line than every trickler).
                var clients: [RawClient] = []
                var answers: [String] = []
                for _ in 0..<3 {
                    let client = try RawClient(port: port, receiveTimeout: Self.patience)
                    clients.append(client)
                    try client.send("PUT /ok HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok")
                    let response = try client.readResponse()
                    answers.append("\(response.status) \(response.text)")
                }
                // Refused or evicted, every trickler was told to come back later.
                let refusals = try tricklers.map { client in
                    let response = try client.readResponse()
                    return "\(response.status) \(response.headers["Retry-After"] ?? "")"
                }
                withExtendedLifetime(clients) {}
                return (answers, refusals, server.openConnectionCount)
            }
        }
        #expect(outcome.0 == ["200 ok", "200 ok", "200 ok"])
        #expect(outcome.1 == Array(repeating: "503 1", count: 6))
        #expect(outcome.2 <= 3)
    }

    @Test("connections trickling request bodies are evicted for a well-behaved client, with 503")
    func bodyTricklersDoNotStarveOthers() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 2
        // Only eviction may answer a trickler here, never a time-out.
        limits.readTimeout = .seconds(600)
        limits.idleTimeout = .seconds(600)
        let outcome = try await withServer(EchoApplication(), limits: limits) { server, port in
            try await onThread {
                // Bodies that never end: the application waits in its read for the rest.
                let tricklers = try (0..<2).map { _ in
                    let client = try RawClient(port: port, receiveTimeout: Self.patience)
                    try client.send("PUT /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n0123456789")
                    return client
                }
                // Two connections, two slots: both admitted, neither refused.
                try waitUntil { server.connectionsWaitingForPeer == 2 }
                // Kept open, so that each one has to make room for itself.
                var clients: [RawClient] = []
                var answers: [String] = []
                for _ in 0..<2 {
                    let client = try RawClient(port: port, receiveTimeout: Self.patience)
                    clients.append(client)
                    try client.send("PUT /ok HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok")
                    let response = try client.readResponse()
                    answers.append("\(response.status) \(response.text)")
                }
                let refusals = try tricklers.map { client in
                    let response = try client.readResponse()
                    return "\(response.status) \(response.headers["Retry-After"] ?? "")"
                }
                withExtendedLifetime(clients) {}
                return (answers, refusals)
            }
        }
        #expect(outcome.0 == ["200 ok", "200 ok"])
        #expect(outcome.1 == ["503 1", "503 1"])
    }

    @Test("beyond the limit every connection gets a whole answer: served, or 503 with Retry-After")
    func everyConnectionIsAnswered() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 2
        let statuses = try await withServer(EchoApplication(), limits: limits) { _, port in
            try await onThread {
                // All connected before any sends its request: the burst of a busy client pool.
                let clients = try (0..<10).map { _ in try RawClient(port: port) }
                for client in clients { try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
                return clients.map { client -> String in
                    do {
                        let response = try client.readResponse()
                        let retry = response.headers["Retry-After"].map { " " + $0 } ?? ""
                        return "\(response.status)\(retry)"
                    } catch {
                        return "no answer: \(error)"
                    }
                }
            }
        }
        // Which ones are served depends on how fast their threads read; that each is answered does not.
        #expect(statuses.allSatisfy { $0 == "200" || $0 == "503 1" }, "\(statuses)")
    }

    @Test("only when every connection has a request in progress does a new one get 503")
    func busyConnectionsGet503() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 2
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let application = ClosureApplication { _, responder in
            entered.signal()
            release.wait()
            try? responder.respond(status: 200, headers: [:], body: Data())
        }
        let refused = try await withServer(application, limits: limits) { _, port in
            try await onThread {
                let busy = try (0..<2).map { _ in
                    let client = try RawClient(port: port)
                    try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                    return client
                }
                entered.wait()
                entered.wait()
                let refused = try RawClient(port: port).readResponse()
                release.signal()
                release.signal()
                for client in busy { #expect(try client.readResponse().status == 200) }
                return refused
            }
        }
        #expect(refused.status == 503)
        #expect(refused.headers["Retry-After"] == "1")
    }
}
