import CCRC32C
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What "checksum on" costs: the CRC32C pre-pass measured on its own.
struct ChecksumCost: Sendable, Codable {
    /// Whether `cs_crc32c_update` uses CPU instructions here.
    var hardwareAccelerated: Bool
    /// `cs_crc32c_update` over a 1 MiB buffer in cache, GB/s (10^9 bytes per second).
    var hardwareInCacheGBps: Double
    /// `cs_crc32c_update_portable` (slice-by-8 tables) over the same buffer, GB/s.
    var portableInCacheGBps: Double
    /// The SDK's pre-pass as it runs: `pread` of 1 MiB blocks of the payload file (page cache) + CRC32C, GB/s.
    var filePassGBps: Double
    /// The same loop with the portable CRC32C, GB/s.
    var filePassPortableGBps: Double
    /// Bytes of the file pass.
    var fileBytes: Int64
    /// Seconds the file pass takes for `fileBytes`.
    var filePassSeconds: Double

    /// Measures on a dedicated thread (CPU-bound, blocking reads).
    ///
    /// - Parameters:
    ///   - file: The payload file (already in the page cache).
    ///   - size: Its size.
    /// - Returns: The rates, each the best of three passes (the machine is shared).
    static func measure(file: URL, size: Int64) async throws -> ChecksumCost {
        let path = file.path
        return try await DedicatedThread.run(name: "crc32c-cost") {
            let block = 1 << 20
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: block, alignment: 64)
            defer { buffer.deallocate() }
            for index in 0..<block { buffer[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
            let base = UnsafeRawPointer(buffer.baseAddress!)
            var sink: UInt32 = 0
            let hardware = best(of: 3) { () -> Int64 in
                for _ in 0..<1024 { sink = cs_crc32c_update(sink, base, block) }
                return 1024 * Int64(block)
            }
            let portable = best(of: 3) { () -> Int64 in
                for _ in 0..<256 { sink = cs_crc32c_update_portable(sink, base, block) }
                return 256 * Int64(block)
            }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw BenchmarkError("cannot open \(path): errno \(errno)") }
            defer { close(descriptor) }
            func pass(limit: Int64, _ update: (UInt32, UnsafeRawPointer, Int) -> UInt32) throws -> Int64 {
                var offset: Int64 = 0
                var crc: UInt32 = 0
                while offset < limit {
                    let count = pread(
                        descriptor, buffer.baseAddress, Int(min(Int64(block), limit - offset)), off_t(offset))
                    guard count > 0 else { throw BenchmarkError("reading \(path) failed: errno \(errno)") }
                    crc = update(crc, base, count)
                    offset += Int64(count)
                }
                sink ^= crc
                return offset
            }
            let filePass = try bestThrowing(of: 3) { try pass(limit: size) { cs_crc32c_update($0, $1, $2) } }
            let portableLimit = min(size, 256 << 20)
            let filePortable = try bestThrowing(of: 2) {
                try pass(limit: portableLimit) { cs_crc32c_update_portable($0, $1, $2) }
            }
            if sink == 0x1234_5678 { progress("") }  // keeps the work observable
            return ChecksumCost(
                hardwareAccelerated: cs_crc32c_is_hardware_accelerated() != 0,
                hardwareInCacheGBps: hardware,
                portableInCacheGBps: portable,
                filePassGBps: filePass,
                filePassPortableGBps: filePortable,
                fileBytes: size,
                filePassSeconds: Double(size) / filePass / 1e9
            )
        }
    }

    /// The best rate in GB/s over `runs` timings of `body`, which returns the bytes it processed.
    private static func best(of runs: Int, _ body: () -> Int64) -> Double {
        (try? bestThrowing(of: runs, body)) ?? 0
    }

    private static func bestThrowing(of runs: Int, _ body: () throws -> Int64) throws -> Double {
        let clock = ContinuousClock()
        var rate = 0.0
        for _ in 0..<runs {
            let start = clock.now
            let bytes = try body()
            let elapsed = start.duration(to: clock.now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            rate = max(rate, Double(bytes) / seconds / 1e9)
        }
        return rate
    }
}
