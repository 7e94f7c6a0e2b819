import Dispatch
import Foundation
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `holdConnection` (what `stall-after-<N>` uses) ends on events, never on a clock:
/// the peer closing, or the server stopping. Bounds here only matter once a test failed.
@Suite("Server: holding a connection until the peer gives up", .timeLimit(.minutes(10)))
struct HoldConnectionTests {
    @Test func theHoldEndsWhenThePeerClosesNotWhenBytesArrive() async throws {
        let entered = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let peerClosed = Box(false)
        let closedBeforeTheHoldEnded = Box<Bool?>(nil)
        let application = ClosureApplication { _, responder in
            entered.signal()
            responder.holdConnection(limit: .seconds(600))
            closedBeforeTheHoldEnded.set(peerClosed.get())
            returned.signal()
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                // Part of a body, left unread: readable bytes must not end the hold.
                try client.send("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789")
                #expect(entered.wait(timeout: .now() + 60) == .success)
                try client.send("more bytes")
                peerClosed.set(true)
                _ = shutdown(client.fd, Int32(SHUT_WR))
                #expect(returned.wait(timeout: .now() + 60) == .success)
                #expect(closedBeforeTheHoldEnded.get() == true, "the hold ended before the peer closed")
                #expect(((try? client.readToEOF()) ?? []).isEmpty, "a hold answers nothing")
            }
        }
    }

    @Test func stoppingTheServerEndsAHold() async throws {
        let entered = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let stopped = Box(false)
        let stoppedBeforeTheHoldEnded = Box<Bool?>(nil)
        let application = ClosureApplication { _, responder in
            entered.signal()
            responder.holdConnection(limit: .seconds(600))
            stoppedBeforeTheHoldEnded.set(stopped.get())
            returned.signal()
        }
        try await withServer(application) { server, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(entered.wait(timeout: .now() + 60) == .success)
                stopped.set(true)
                server.stop()
                #expect(returned.wait(timeout: .now() + 60) == .success)
                #expect(stoppedBeforeTheHoldEnded.get() == true, "the hold ended before the server stopped")
                #expect(((try? client.readToEOF()) ?? []).isEmpty, "a hold answers nothing")
            }
        }
    }
}
