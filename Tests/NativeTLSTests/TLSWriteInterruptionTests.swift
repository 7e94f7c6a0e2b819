import Foundation
import Synchronization
import Testing

@testable import NativeTLS

#if canImport(Glibc)
import Glibc
#endif

/// Signals handled by ``TLSWriteInterruptionTests``' handler.
private let interruptions = Atomic<Int>(0)

/// A write whose records are gathered into one buffer and flushed afterwards must survive a
/// signal that interrupts the flush while it waits for the peer to read (`EINTR`, the
/// handler being installed without `SA_RESTART`), as it survives one inside `SSL_write`.
///
/// Whether the writing thread waits is read from `/proc/self/task/*/syscall` (the system call
/// a thread is blocked in, with its arguments), not guessed from time.
@Suite(.timeLimit(.minutes(10)), .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task")))
struct TLSWriteInterruptionTests {
    @Test func aFlushInterruptedBySignalsGoesOn() async throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0  // no SA_RESTART: a blocked write(2) returns EINTR
        sigemptyset(&action.sa_mask)
        sigaction(SIGUSR2, &action, nil)

        let listener = try LoopbackListener()
        // Small socket buffers: 100 kB of records cannot leave the writer until the server reads.
        var small: Int32 = 4096
        setsockopt(listener.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        // Under the shim's 128 KiB write buffer: SSL_write only fills it, the flush does the waiting.
        let payload = testBytes(count: 100_000, seed: 21)
        let writer = Mutex<(thread: pthread_t, fd: Int32)?>(nil)
        let writerDone = Atomic(false)
        let writerReady = DispatchSemaphore(value: 0)
        let serverMayRead = DispatchSemaphore(value: 0)
        let serverHasRead = DispatchSemaphore(value: 0)

        async let served = onThread { () throws -> [UInt8] in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            try stream.handshake()
            serverMayRead.wait()
            defer { serverHasRead.signal() }
            return (try? readAll(stream, count: payload.count)) ?? []
        }
        async let written = onThread { () throws -> String? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            var sendBuffer: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            try stream.handshake()
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
            writer.withLock { $0 = (pthread_self(), fd) }
            writerReady.signal()
            var failure: String?
            do {
                try stream.write(payload)
            } catch {
                failure = "\(error)"
            }
            writerDone.store(true, ordering: .releasing)
            // Closing before the server read everything could reset the connection.
            if failure == nil { _ = serverHasRead.wait(timeout: .now() + 90) }
            stream.close()
            return failure
        }
        let signalsSent = try await onThread { () -> Int in
            defer { serverMayRead.signal() }
            var sent = 0
            // The handshake may take long on a loaded machine: wait for it without a bound of our own.
            writerReady.wait()
            // Several signals: one that lands after part of a write(2) went out makes it return
            // that part (no EINTR); the next write then waits with nothing sent, and its signal is an EINTR.
            for _ in 0..<8 {
                guard let thread = Self.waitUntilBlocked(writer: writer, done: writerDone) else { break }
                let before = interruptions.load(ordering: .relaxed)
                pthread_kill(thread, SIGUSR2)
                sent += 1
                let handled = ContinuousClock.now + .seconds(60)  // a hang guard: the handler runs once the thread does
                while interruptions.load(ordering: .relaxed) == before && ContinuousClock.now < handled {
                    usleep(1_000)
                }
            }
            return sent
        }
        let failure = try await written
        let received = try await served
        #expect(signalsSent > 1, "the writer was never seen waiting in its flush")
        #expect(failure == nil)
        #expect(received == payload)
    }

    /// Waits until the writer thread is blocked in a system call on its socket (which it
    /// reaches within milliseconds once it runs; the 60 s bound is only a hang guard, far
    /// beyond any scheduling delay); nil when it finished instead.
    private static func waitUntilBlocked(
        writer: borrowing Mutex<(thread: pthread_t, fd: Int32)?>, done: borrowing Atomic<Bool>
    ) -> pthread_t? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if done.load(ordering: .acquiring) { return nil }
            if let (thread, fd) = writer.withLock({ $0 }), blockedInCall(on: fd) { return thread }
            usleep(1_000)
        }
        return nil
    }

    /// Whether some thread of this process is blocked in a system call whose first argument is `fd`.
    private static func blockedInCall(on fd: Int32) -> Bool {
        let wanted = "0x" + String(fd, radix: 16)
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.contains { task in
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(task)/syscall", encoding: .utf8) else {
                return false
            }
            let fields = text.split(separator: " ")
            // "running" while not in a call; otherwise the call's number, then its arguments in hex.
            return fields.count > 1 && Int(fields[0]) != nil && fields[1] == wanted
        }
    }
}
