import Foundation
import Synchronization

/// Where an upload's bytes come from.
enum UploadSource: Sendable {
    /// Bytes in memory, sent from the `Data`'s own storage.
    case data(Data)
    /// A file, read when sent; it must not change until the upload ends.
    case file(URL)
}

/// An ``UploadSource`` opened for sending: its size, its checksum, and request
/// bodies for any byte range, re-readable for retries.
struct PreparedSource: Sendable {
    private enum Bytes: Sendable {
        case data(Data)
        case file(ReadOnlyFile)
    }

    private let bytes: Bytes
    let size: Int64
    /// The CRC32C of every byte, when checksums are on.
    let crc32c: UInt32?

    /// The block in which a file is read for its checksum: large enough that
    /// system calls cost nothing, small enough to stay in cache.
    static let checksumBlockSize = 1 << 20

    /// Opens the source and, if asked, computes its checksum (a file is read
    /// once for that, off the cooperative pool, one reused buffer at a time).
    ///
    /// - Throws: ``StorageErrorCode/unreadableFile`` for a missing or
    ///   unreadable file, ``StorageErrorCode/fileChanged`` if it shrinks
    ///   meanwhile, ``StorageErrorCode/cancelled`` if the task is cancelled.
    static func prepare(_ source: UploadSource, computingChecksum: Bool) async throws(StorageError) -> PreparedSource {
        switch source {
        case .data(let data):
            return PreparedSource(
                bytes: .data(data),
                size: Int64(data.count),
                crc32c: computingChecksum ? CRC32C.checksum(data) : nil
            )
        case .file(let url):
            let path = url.path
            let file = try await BlockingIO.run { () throws(StorageError) -> ReadOnlyFile in
                try ReadOnlyFile(path: path)
            }
            let crc = computingChecksum ? try await checksum(of: file) : nil
            return PreparedSource(bytes: .file(file), size: file.size, crc32c: crc)
        }
    }

    private static func checksum(of file: ReadOnlyFile) async throws(StorageError) -> UInt32 {
        let cancelled = Atomic(false)
        let result = await withTaskCancellationHandler {
            await BlockingIO.run { () -> Result<UInt32, StorageError> in
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: checksumBlockSize, alignment: 64)
                defer { buffer.deallocate() }
                var crc = CRC32C()
                var offset: Int64 = 0
                while offset < file.size {
                    if cancelled.load(ordering: .relaxed) { return .failure(.cancelled()) }
                    let count = Int(min(Int64(checksumBlockSize), file.size - offset))
                    do throws(StorageError) {
                        try file.readExactly(into: buffer.baseAddress!, count: count, at: offset)
                    } catch {
                        return .failure(error)
                    }
                    crc.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                    offset += Int64(count)
                }
                return .success(crc.value)
            }
        } onCancel: {
            cancelled.store(true, ordering: .relaxed)
        }
        return try result.get()
    }

    /// The body for `length` bytes from `offset`.
    func body(from offset: Int64, length: Int64) -> HTTPRequestBody {
        guard length > 0 else { return .empty }
        switch bytes {
        case .data(let data):
            let start = data.startIndex + Int(offset)
            return .data(data[start..<(start + Int(length))])
        case .file(let file):
            return HTTPRequestBody(segments: [.file(file, offset: offset, length: length)])
        }
    }

    /// Checks that a file source has not changed since it was opened.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged``.
    func checkUnchanged() async throws(StorageError) {
        guard case .file(let file) = bytes else { return }
        try await BlockingIO.run { () throws(StorageError) in try file.checkUnchanged() }
    }
}
