import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A peer that starts something and never finishes it: after a prefix, one byte every 10 ms,
/// so that no idle time-out of the client ever fires, until the client goes or ``limit``
/// bytes went out. Only a deadline the bytes cannot move ends it on the client's side.
///
/// At the limit (a hang guard, far beyond any deadline a test sets) it returns, and its
/// connection closes: a client without a deadline then sees a lost connection, never a
/// time-out, so a test that asserts a time-out fails on such a client instead of hanging.
/// Tests assert on how the drip ended (``End``), never on time.
package final class DrippingPeer: Sendable {
    package enum End: Sendable, Equatable {
        /// A write failed: the client closed the connection.
        case clientGone
        /// Every byte of the limit went out.
        case exhausted
    }

    /// The header of a TLS handshake record of 16 KiB, a prefix for dripping a handshake below
    /// TLS: a client reads on until all of the record came.
    package static let handshakeRecordStart: [UInt8] = [0x16, 0x03, 0x03, 0x40, 0x00]

    /// The most bytes dripped after the prefix.
    package let limit: Int
    private let state = Mutex<(dripped: Int, end: End?)>((0, nil))

    package init(limit: Int = 2000) {
        self.limit = limit
    }

    /// How the drip ended, or nil while it goes on.
    package var end: End? { state.withLock { $0.end } }

    /// Bytes dripped after the prefix so far.
    package var dripped: Int { state.withLock { $0.dripped } }

    /// Sends `prefix`, then drips; on `connection`'s script thread.
    ///
    /// - Parameter belowTLS: Writes under the connection's TLS (or on a plain connection, where
    ///   the bytes are whatever the client expects: the start of a TLS record, say).
    package func run(on connection: ScriptedConnection, prefix: [UInt8], belowTLS: Bool = false, byte: UInt8 = 0x30) {
        func send(_ bytes: [UInt8]) -> Bool {
            belowTLS ? connection.writeBelowTLS(bytes) : connection.write(bytes)
        }
        guard send(prefix) else { return finish(.clientGone) }
        for _ in 0..<limit {
            usleep(10_000)
            guard send([byte]) else { return finish(.clientGone) }
            state.withLock { $0.dripped += 1 }
        }
        finish(.exhausted)
    }

    /// Waits until the drip has ended. No time bound of its own: the suite's time limit
    /// ends a test that waits for ever, and the drip always ends within its limit anyway.
    package func ended() async throws -> End {
        while true {
            if let end { return end }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    private func finish(_ end: End) {
        state.withLock { $0.end = end }
    }
}
