import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Transfers through `Storage` to an emulator with a network shape: the bytes are exact, and
/// the emulator's own count of its waits is at least what the bytes and the rate imply.
///
/// The bounds hold however slow the machine: the shaped emulator here uses the waits-only
/// clock, on which time passes only by the shaper's waits, so the waits owed by the bytes
/// beyond each connection's burst are all computed, however long the client takes between
/// reads. (On the real clock a client slower than the rate is never made to wait.)
@Suite("Transfers through a shaped emulator", .timeLimit(.minutes(5)))
struct ShapedEmulatorTests {
    static let rate: Int64 = 2_000_000
    static let latency = Duration.milliseconds(1)

    /// The least the rate costs `bytes` spread over `connections` (each with its own burst).
    static func floor(bytes: Int, connections: Int, burst: Int64) -> Duration {
        let owed = max(0, Int64(bytes) - Int64(connections) * burst)
        return .nanoseconds(owed * 1_000_000_000 / rate)
    }

    @Test(arguments: TestRoute.all)
    func uploadsAndDownloadsExactBytesAndTheWaitsCoverTheRate(route: TestRoute) async throws {
        var shape = StorageEmulator.NetworkShape(rate: Self.rate, latency: Self.latency)
        shape.clock = .waitsOnly
        let emulator = try route.startEmulator { $0.networkShape = shape }
        defer { emulator.stop() }
        let storage = EmulatorUploadTests.storage(emulator, route)
        let payload = TestSupport.payload(size: 600 * .kibibyte + 7, seed: 22)
        let burst = try #require(shape.burst)

        let metadata = try await storage.reference(withPath: "shaped.bin").putDataAsync(payload)
        #expect(metadata.size == Int64(payload.count))
        let afterUpload = emulator.shapingTotals
        #expect(afterUpload.connections >= 1)
        #expect(
            afterUpload.received
                >= Self.floor(bytes: payload.count, connections: afterUpload.connections, burst: burst))

        let downloaded = try await storage.reference(withPath: "shaped.bin").data(maxSize: 10 * 1024 * 1024)
        #expect(downloaded == payload)
        let totals = emulator.shapingTotals
        #expect(totals.sent >= Self.floor(bytes: payload.count, connections: totals.connections, burst: burst))
        // Every answer waited a round trip, and every connection's first one its handshakes too.
        let handshakes = route.scheme == .https ? 2 : 1
        #expect(
            totals.latency
                >= Self.latency * (emulator.requestsReceived + handshakes * totals.connections))
    }

    @Test func onTheRealClockTheBytesAreExactAndEveryAnswerWaitsTheLatency() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator {
            $0.networkShape = .init(rate: Self.rate, latency: Self.latency)
        }
        defer { emulator.stop() }
        let storage = EmulatorUploadTests.storage(emulator, .nativeHTTP)
        let payload = TestSupport.payload(size: 200 * .kibibyte + 3, seed: 23)
        _ = try await storage.reference(withPath: "real.bin").putDataAsync(payload)
        #expect(try await storage.reference(withPath: "real.bin").data(maxSize: 1024 * 1024) == payload)
        let totals = emulator.shapingTotals
        #expect(totals.latency >= Self.latency * (emulator.requestsReceived + totals.connections))
    }

    @Test func anUnshapedEmulatorWaitsForNothing() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let storage = EmulatorUploadTests.storage(emulator, .nativeHTTP)
        let payload = TestSupport.payload(size: 600 * .kibibyte, seed: 24)
        _ = try await storage.reference(withPath: "plain.bin").putDataAsync(payload)
        #expect(try await storage.reference(withPath: "plain.bin").data(maxSize: 10 * 1024 * 1024) == payload)
        #expect(emulator.shapingTotals == .init())
    }
}
