import CCRC32C
import FakeGCSServer
import Foundation

/// Deterministic pseudo-random payloads (SplitMix64), so runs are repeatable
/// and the bytes do not compress.
enum Payload {
    /// `size` bytes from `seed`.
    ///
    /// - Parameters:
    ///   - size: The number of bytes.
    ///   - seed: Selects the sequence.
    /// - Returns: The bytes.
    static func bytes(size: Int, seed: UInt64) -> Data {
        var state = seed
        return bytes(size: size, state: &state)
    }

    /// Writes `size` bytes from `seed` to a new file at `url`, block by block,
    /// so the whole payload is never in memory. Blocks: call through ``BlockingWork``.
    ///
    /// - Parameters:
    ///   - url: The file to create (replaced if present).
    ///   - size: The number of bytes.
    ///   - seed: Selects the sequence.
    /// - Throws: When the file cannot be written.
    static func writeFile(at url: URL, size: Int64, seed: UInt64) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchmarkError("cannot create \(url.path)")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let blockSize: Int64 = 8 * 1024 * 1024
        var state = seed
        var written: Int64 = 0
        let blocks = (size + blockSize - 1) / blockSize
        for _ in 0..<blocks {
            let count = Int(min(blockSize, size - written))
            try handle.write(contentsOf: bytes(size: count, state: &state))
            written += Int64(count)
        }
        try handle.synchronize()
    }

    /// Writes `size` bytes to a new file at `url` quickly: one pseudo-random 1 MiB block from `seed`,
    /// repeated, 16 MiB per `write`. Nothing on the upload path compresses or deduplicates, so this
    /// is as good as fully random bytes for throughput. Blocks: call through ``BlockingWork``.
    ///
    /// - Parameters:
    ///   - url: The file to create (replaced if present).
    ///   - size: The number of bytes.
    ///   - seed: Selects the block.
    /// - Returns: The CRC32C of the file's bytes.
    /// - Throws: When the file cannot be written.
    static func writeRepeatingFile(at url: URL, size: Int64, seed: UInt64) throws -> UInt32 {
        let block = bytes(size: 1 << 20, seed: seed)
        var batch = Data(capacity: 16 << 20)
        for _ in 0..<16 { batch.append(block) }
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchmarkError("cannot create \(url.path)")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written: Int64 = 0
        var crc: UInt32 = 0
        let batches = (size + Int64(batch.count) - 1) / Int64(batch.count)
        for _ in 0..<batches {
            let count = Int(min(Int64(batch.count), size - written))
            let part = batch[batch.startIndex..<(batch.startIndex + count)]
            part.withUnsafeBytes { crc = cs_crc32c_update(crc, $0.baseAddress!, $0.count) }
            try handle.write(contentsOf: part)
            written += Int64(count)
        }
        return crc
    }

    private static func bytes(size: Int, state: inout UInt64) -> Data {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            var index = 0
            while index < size {
                var word = next(&state)
                for _ in 0..<min(8, size - index) {
                    raw[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
        }
        return data
    }

    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
