import Foundation
import HTTP1
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// `dataStream()` and ranged reads (`data(maxSize:range:)`, `dataStream(range:)`)
/// against the emulator (both protocols), fake-gcs-server and scripted servers,
/// on each route (``TestRoute``): exact bytes, GCS range semantics, resumption
/// without gap or duplicate, the checksum verdict at the end, back-pressure
/// (counted, never timed) and cancellation.
@Suite("Download streams and ranges", .timeLimit(.minutes(10)))
struct DownloadStreamTests {
    /// Every chunk of `stream`, in order.
    static func chunks(_ stream: StorageDownloadStream) async throws(StorageError) -> [Data] {
        var chunks: [Data] = []
        for try await chunk in stream { chunks.append(chunk) }
        return chunks
    }

    static func joined(_ chunks: [Data]) -> Data {
        chunks.reduce(into: Data()) { $0.append($1) }
    }

    @Test(arguments: TestRoute.all, [false, true])
    func streamsAndRangesReturnTheExactBytes(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: firebase, route: route)
        let size = 3 * Int.mebibyte + 17
        let payload = TestSupport.payload(size: size, seed: 31)
        let ref = storage.reference(withPath: "stream/object.bin")
        _ = try await ref.putDataAsync(payload)

        let chunks = try await Self.chunks(ref.dataStream())
        #expect(Self.joined(chunks) == payload)
        #expect(chunks.allSatisfy { !$0.isEmpty && $0.count <= 256 * 1024 })

        let total = Int64(size)
        #expect(try await ref.data(maxSize: 1, range: 0...0) == payload.prefix(1))
        #expect(try await ref.data(maxSize: 1, range: (total - 1)...) == payload.suffix(1))
        #expect(try await ref.data(maxSize: total, range: 1000..<300_000) == payload[1000..<300_000])
        #expect(try await ref.data(maxSize: total, range: 2_000_000...) == payload[2_000_000...])
        #expect(try await ref.data(maxSize: total, range: ..<5) == payload.prefix(5))
        // GCS: a range that runs past the end stops at the last byte.
        #expect(try await ref.data(maxSize: total, range: (total - 10)...(total + 100)) == payload.suffix(10))
        #expect(try Self.joined(await Self.chunks(ref.dataStream(range: 1000..<300_000))) == payload[1000..<300_000])
        #expect(try Self.joined(await Self.chunks(ref.dataStream(range: (total - 7)...))) == payload.suffix(7))
        // The whole object as a range is a whole-object download.
        #expect(try Self.joined(await Self.chunks(ref.dataStream(range: 0...))) == payload)

        // A range starting past the end is the server's 416; empty and negative ones never leave.
        for range in [total..<(total + 1), (total + 5)..<(total + 9)] {
            let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10, range: range) }
            #expect(error?.code == .invalidArgument)
            let streamed = await #expect(throws: StorageError.self) {
                try await Self.chunks(ref.dataStream(range: range))
            }
            #expect(streamed?.code == .invalidArgument)
        }
        let empty = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10, range: 5..<5) }
        #expect(empty?.code == .invalidArgument)
        let negative = await #expect(throws: StorageError.self) { try await Self.chunks(ref.dataStream(range: -1...3)) }
        #expect(negative?.code == .invalidArgument)
        // maxSize counts the range's bytes, not the object's.
        let tooBig = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 99, range: 0..<100) }
        #expect(tooBig?.code == .downloadSizeExceeded)
    }

    @Test(arguments: TestRoute.all)
    func fakeGCSStreamsAndRanges(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "dls", route: route)
        let payload = TestSupport.payload(size: 700 * .kibibyte + 5, seed: 32)
        let ref = storage.reference(withPath: "s/t.bin")
        _ = try await ref.putDataAsync(payload)
        #expect(try Self.joined(await Self.chunks(ref.dataStream())) == payload)
        #expect(try await ref.data(maxSize: 1 << 20, range: 10..<20) == payload[10..<20])
        #expect(try Self.joined(await Self.chunks(ref.dataStream(range: 500_000...))) == payload[500_000...])
    }

    /// A reset mid-body (the emulator's fault plan) is resumed with a `Range` from the
    /// first byte not handed on: the chunks join into the exact object.
    @Test(arguments: Reliability.Route.all, [1, 300_001, 2 * Int.mebibyte + 1])
    func aResetMidStreamResumesWithoutGapOrDuplicate(route: Reliability.Route, cut: Int) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: route.via, faults: ["pass", "reset-after-\(cut)"]) { emulator in
                let recorder = TestTransport(
                    wrapping: route.via.makeTransport(for: route.wire.endpoint(emulator.baseURL)))
                let storage = DownloadFaultTests.storage(route.wire, emulator, recorder)
                let payload = TestSupport.payload(size: 3 * .mebibyte + 3, seed: 33)
                let ref = storage.reference(withPath: "streams/reset.bin")
                _ = try await ref.putDataAsync(payload)
                let streamed = try Self.joined(await Self.chunks(ref.dataStream()))
                #expect(streamed.count == payload.count, "duplicated or missing bytes")
                #expect(streamed == payload)
                let gets = recorder.sent.dropFirst()
                #expect(gets.count == 2, "the reset GET and its resumption")
                #expect(gets.last?.header("Range")?.hasPrefix("bytes=") == true)

                // A ranged stream resumes inside its range, keeping its end.
                _ = try emulator.installFaultPlan(["reset-after-\(cut / 2 + 1)"])
                let part = try Self.joined(await Self.chunks(ref.dataStream(range: 100..<2_500_000)))
                #expect(part == payload[100..<2_500_000])
                #expect(recorder.sent.last?.header("Range")?.hasSuffix("-2499999") == true)
            }
        }
    }

    /// The consumer gets every byte, then the checksum verdict from the last `next()`.
    @Test(arguments: TestRoute.all)
    func aChecksumMismatchIsThrownAfterTheLastChunk(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 600_000, seed: 34)
        let server = try DownloadTests.cuttingServer(
            payload, cut: 250_000, crc32c: CRC32C.checksum(payload) ^ 1, ranges: DownloadTests.RangeLog(),
            scheme: route.scheme)
        defer { server.stop() }
        let storage = DownloadTests.scriptedStorage(server, route)
        var received = Data()
        let error = await #expect(throws: StorageError.self) {
            for try await chunk in storage.reference(withPath: "o").dataStream() { received.append(chunk) }
        }
        #expect(error?.code == .nonMatchingChecksum)
        #expect(received == payload, "every byte was handed on before the verdict")
        // A range is not the whole object: the whole object's checksum does not apply.
        #expect(try await storage.reference(withPath: "o").data(maxSize: 10, range: 5..<15) == payload[5..<15])
    }

    /// A server that ignores `Range` and sends the whole object: the leading bytes are
    /// skipped and the read stops at the range's end (the rest is never read).
    @Test(arguments: TestRoute.all)
    func aWholeObjectAnsweringARangeIsCutToTheRange(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 900_000, seed: 35)
        let server = try ScriptedHTTPServer(scheme: route.scheme) { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Length: \(payload.count)\r\n"
                    + "x-goog-hash: crc32c=\(CRC32CEncoding.base64(CRC32C.checksum(payload)))\r\n\r\n")
            connection.write([UInt8](payload))
        }
        defer { server.stop() }
        let ref = DownloadTests.scriptedStorage(server, route).reference(withPath: "o")
        #expect(try await ref.data(maxSize: 1 << 20, range: 300_000..<300_010) == payload[300_000..<300_010])
        #expect(try Self.joined(await Self.chunks(ref.dataStream(range: 123_456...))) == payload[123_456...])
        #expect(try await ref.data(maxSize: 1 << 20, range: 0...0) == payload.prefix(1))
        let past = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10, range: 900_000...) }
        #expect(past?.code == .invalidArgument)
    }

    /// A resumption that finds another generation cannot start over (the first bytes were
    /// handed on): the stream ends with `objectChanged` after a prefix of the old object,
    /// where an in-memory download starts over and returns the new one.
    @Test(arguments: TestRoute.all)
    func anObjectReplacedMidStreamEndsItWithObjectChanged(route: TestRoute) async throws {
        let old = TestSupport.payload(size: 800_000, seed: 39)
        let new = TestSupport.payload(size: 800_000, seed: 40)
        let handedOn = DispatchSemaphore(value: 0)
        let server = try ScriptedHTTPServer(scheme: route.scheme) { connection, index in
            guard let (head, _) = connection.readRequest() else { return }
            if index == 0 {
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(old.count)\r\nx-goog-generation: 1\r\n\r\n")
                connection.write([UInt8](old.prefix(300_000)))
                // The reset comes once the consumer holds bytes, never after a sleep; the bound is a hang guard.
                _ = handedOn.wait(timeout: .now() + 300)
                connection.reset()
            } else if let range = head.headers["Range"], let start = Int(range.dropFirst(6).dropLast()) {
                connection.write(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: \(new.count - start)\r\n"
                        + "Content-Range: bytes \(start)-\(new.count - 1)/\(new.count)\r\nx-goog-generation: 2\r\n\r\n")
                connection.write([UInt8](new[start...]))
            } else {
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(new.count)\r\nx-goog-generation: 2\r\n\r\n")
                connection.write([UInt8](new))
            }
        }
        defer { server.stop() }
        defer { handedOn.signal() }
        let ref = DownloadTests.scriptedStorage(server, route).reference(withPath: "o")
        var received = Data()
        let error = await #expect(throws: StorageError.self) {
            for try await chunk in ref.dataStream() {
                if received.isEmpty { handedOn.signal() }
                received.append(chunk)
            }
        }
        #expect(error?.code == .objectChanged)
        #expect(received.count < old.count && received == old.prefix(received.count), "a prefix of the old object only")
        #expect(try await ref.data(maxSize: 1 << 20) == new, "a rewindable download starts over")
    }

    @Test(arguments: [TestRoute.nativeHTTP])
    func anEmptyObjectStreamsNoChunk(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let ref = DownloadTests.storage(emulator, firebase: false, route: route).reference(withPath: "empty")
        _ = try await ref.putDataAsync(Data())
        #expect(try await Self.chunks(ref.dataStream()).isEmpty)
        let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 1, range: 0...0) }
        #expect(error?.code == .invalidArgument, "any range of an empty object is unsatisfiable (416)")
    }

    /// Waits (polling, deciding nothing) until the sink blocks for room or the download ends.
    static func settle(_ buffer: DownloadStreamBuffer) async {
        while buffer.state.withLock({ $0.producer == nil && $0.end == nil && !$0.cancelled }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// A consumer that stops taking chunks stops the download: the sink waits with at most
    /// the buffer's limit held, instead of reading the whole object into memory.
    @Test(arguments: TestRoute.all)
    func aStalledConsumerBoundsWhatIsRead(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: false, route: route)
        let payload = TestSupport.payload(size: 24 * .mebibyte, seed: 36)
        let ref = storage.reference(withPath: "stream/big.bin")
        _ = try await ref.putDataAsync(payload)

        var iterator = ref.dataStream().makeAsyncIterator()
        var received = try await iterator.next() ?? Data()
        let buffer = iterator.buffer
        await Self.settle(buffer)
        let (waiting, held, ended) = buffer.state.withLock { ($0.producer != nil, $0.buffered, $0.end != nil) }
        // Over URLSession a waiting sink would stall every URLSession request in the process.
        #expect(buffer.waits == (route.transport != .urlSession))
        if buffer.waits {
            #expect(waiting && !ended, "the sink waits for the consumer instead of reading on")
            #expect(held <= buffer.limit)
        } else {
            #expect(!waiting && ended, "over URLSession the sink never waits")
        }
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == payload)
        if buffer.waits {
            #expect(buffer.state.withLock { $0.peakBuffered } <= buffer.limit, "never more than the bound held")
        }
    }

    /// A consumer that takes nothing holds up only its own download: its sink waits on that
    /// request's own I/O thread, so other requests of the same storage (same host, same
    /// transport) still complete, downloads and uploads, streamed or not.
    @Test(.timeLimit(.minutes(10)), arguments: TestRoute.all)  // a hang guard: it takes seconds
    func aStalledConsumerDoesNotHoldUpOtherRequests(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: false, route: route)
        let big = TestSupport.payload(size: 3 * .mebibyte, seed: 41)
        let small = TestSupport.payload(size: 300_000, seed: 42)
        let stalled = storage.reference(withPath: "stream/stalled.bin")
        let other = storage.reference(withPath: "stream/other.bin")
        _ = try await stalled.putDataAsync(big)
        _ = try await other.putDataAsync(small)

        var iterator = stalled.dataStream().makeAsyncIterator()
        let first = try await iterator.next() ?? Data()
        let buffer = iterator.buffer
        await Self.settle(buffer)
        #expect(buffer.state.withLock { $0.producer != nil } == buffer.waits)
        // Hangs (until the guard) if the waiting sink held a thread or lock these need.
        #expect(try await other.data(maxSize: 1 << 20) == small)
        #expect(try Self.joined(await Self.chunks(other.dataStream())) == small)
        _ = try await storage.reference(withPath: "stream/third.bin").putDataAsync(small)
        #expect(buffer.state.withLock { $0.producer != nil } == buffer.waits, "the stalled sink still waits")
        // The stalled stream then goes on where it stopped.
        var received = first
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == big)
    }

    /// Cancelling the consuming task while its `next()` waits (the emulator holds the
    /// body) throws `cancelled`, ends the download's task, and leaves the storage usable.
    @Test(.timeLimit(.minutes(10)), arguments: TestRoute.all)  // a hang guard: it takes seconds
    func cancellingTheConsumerEndsTheDownload(route: TestRoute) async throws {
        try await Reliability.withEmulator(for: route, faults: ["pass", "stall-after-300000"]) { emulator in
            let storage = DownloadTests.storage(emulator, firebase: false, route: route)
            let payload = TestSupport.payload(size: 1 * .mebibyte, seed: 37)
            let ref = storage.reference(withPath: "stream/stall.bin")
            _ = try await ref.putDataAsync(payload)
            let (started, startedSink) = AsyncStream.makeStream(
                of: DownloadStreamBuffer.self, bufferingPolicy: .unbounded)
            let consumer = Task { () throws(StorageError) -> Int in
                var iterator = ref.dataStream().makeAsyncIterator()
                var count = 0
                while let chunk = try await iterator.next() {
                    if count == 0 { startedSink.yield(iterator.buffer) }
                    count += chunk.count
                }
                return count
            }
            var buffers = started.makeAsyncIterator()
            let buffer = try #require(await buffers.next())
            let download = buffer.state.withLock { $0.task }
            consumer.cancel()
            let result = await consumer.result
            #expect(throws: StorageError.self) { try result.get() }
            if case .failure(let error) = result { #expect((error as? StorageError)?.code == .cancelled) }
            await download?.value  // never returns if the sink stayed blocked
            #expect(buffer.state.withLock { $0.cancelled && $0.producer == nil })
            // The aborted connection is not reused broken.
            #expect(try Self.joined(await Self.chunks(ref.dataStream())) == payload)
        }
    }

    /// Breaking out of the loop (the iterator is dropped) cancels the download and
    /// wakes the sink that waits for room; the next download works.
    @Test(.timeLimit(.minutes(10)), arguments: TestRoute.all)  // a hang guard: it takes seconds
    func breakingOutOfTheLoopReleasesTheDownload(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: false, route: route)
        // Three times the buffer's limit: the sink surely waits for room after the first chunk.
        let payload = TestSupport.payload(size: 3 * .mebibyte, seed: 38)
        #expect(Int64(payload.count) > 2 * DownloadStreamBuffer().limit)
        let ref = storage.reference(withPath: "stream/break.bin")
        _ = try await ref.putDataAsync(payload)
        let (buffer, download) = try await Self.firstChunkThenDrop(ref)
        await download?.value  // never returns if the sink stayed blocked
        #expect(buffer.state.withLock { ($0.cancelled || !buffer.waits) && $0.producer == nil })
        for try await _ in ref.dataStream() { break }
        #expect(try Self.joined(await Self.chunks(ref.dataStream())) == payload)
    }

    /// Takes one chunk, lets the sink block for room, then drops the iterator.
    ///
    /// - Returns: The stream's buffer, and the task running its download (nil if it ended),
    ///   taken while the iterator lived: the drop's `cancel()` forgets it.
    static func firstChunkThenDrop(
        _ ref: StorageReference
    ) async throws -> (DownloadStreamBuffer, Task<Void, Never>?) {
        var iterator = ref.dataStream().makeAsyncIterator()
        _ = try await iterator.next()
        let buffer = iterator.buffer
        await settle(buffer)
        #expect(buffer.state.withLock { $0.producer != nil } == buffer.waits)
        let task = buffer.state.withLock { $0.task }
        // A sink waiting for room keeps its download running (over URLSession it may have ended).
        #expect(task != nil || !buffer.waits)
        return (buffer, task)
    }
}
