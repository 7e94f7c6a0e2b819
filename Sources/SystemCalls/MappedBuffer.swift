#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A buffer of anonymous pages mapped for it alone (`mmap`), unmapped when it goes.
///
/// For large I/O buffers that live briefly on many threads: unmapping gives the pages back at
/// once, where `malloc` keeps freed blocks in per-thread arenas. Measured on a 2 GiB upload in
/// 32 MiB parts over 8 connections: 1 MiB hashing buffers from `malloc` left about 8 MiB
/// resident in each of four arenas (33 MiB of anonymous memory at the peak, 5 MiB of it live).
package struct MappedBuffer: ~Copyable {
    /// The buffer's bytes, zeroed when mapped.
    package let bytes: UnsafeMutableRawBufferPointer

    /// Maps `byteCount` bytes (rounded up to whole pages by the system); nil when the
    /// system refuses (the caller may fall back to the heap).
    package init?(byteCount: Int) {
        guard byteCount > 0 else { return nil }
        #if canImport(Darwin)
        let flags = MAP_PRIVATE | MAP_ANON
        #else
        let flags = MAP_PRIVATE | MAP_ANONYMOUS
        #endif
        guard let base = mmap(nil, byteCount, PROT_READ | PROT_WRITE, flags, -1, 0), base != MAP_FAILED else {
            return nil
        }
        bytes = UnsafeMutableRawBufferPointer(start: base, count: byteCount)
    }

    deinit {
        if let base = bytes.baseAddress { _ = munmap(base, bytes.count) }
    }
}
