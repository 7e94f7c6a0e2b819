internal import CMappedFileGuard

/// A read-only map of a region of an open file, for code that reads the file's bytes where
/// they lie in the page cache instead of copying them out with `pread` first (TLS encrypting
/// an upload's file, a checksum of it).
///
/// A file that shrinks while mapped cannot crash the process: touching a page past its new end
/// raises `SIGBUS`, which a guard (installed once per process, chaining to any earlier
/// handler for faults not in a region of this type) answers by putting zeros where the page
/// was; ``faulted`` then says that the bytes read are not the file's. Bytes past the new end
/// on the file's last page read as zeros without a fault, so a reader that must know whether
/// what it read was the file's checks ``faulted`` *and* the file's size afterwards.
///
/// One thread reads a region at a time; it is unmapped when the object goes.
///
/// ```swift
/// guard let region = MappedFileRegion(descriptor: fd, offset: 0, length: 1 << 20) else { return readInstead() }
/// let crc = checksum(region.bytes)
/// if region.faulted || fileSize(fd) < 1 << 20 { throw fileShrank }
/// ```
package final class MappedFileRegion {
    private var region = cs_mapped_region()

    /// The region's bytes: `length` bytes of the file from `offset`.
    package let bytes: UnsafeRawBufferPointer

    /// Maps `length` bytes of `descriptor` from `offset`, advising sequential read-ahead.
    ///
    /// - Returns: nil when the region cannot be mapped safely (no guard on this platform or
    ///   another `SIGBUS` handler replaced it, every guard slot taken, or `mmap` refused): the
    ///   caller reads the file instead.
    package init?(descriptor: Int32, offset: Int64, length: Int) {
        guard length > 0, cs_mapped_region_open(descriptor, offset, length, &region) == 0,
            let base = region.bytes
        else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: region.length)
    }

    deinit {
        cs_mapped_region_close(&region)
    }

    /// Whether a read touched a page the file no longer had (or one the kernel could not read)
    /// and got zeros instead. Once true, it stays true.
    package var faulted: Bool {
        withUnsafePointer(to: &region) { cs_mapped_region_faulted($0) != 0 }
    }
}
