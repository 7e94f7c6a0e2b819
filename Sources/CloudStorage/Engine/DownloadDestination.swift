import Foundation
import Synchronization
import SystemCalls

/// Where a download's bytes go: memory, or a temporary file renamed into
/// place once the download is complete and verified.
///
/// ``write(_:at:)`` and ``reset()`` run on the transport's thread (never the
/// cooperative pool), one call at a time, bytes in order; a destination that
/// ``writesAtAnyOffset`` also takes the writes of several slices at once, each
/// slice's in order.
protocol DownloadDestination: Sendable {
    /// Discards everything written (the download starts over).
    func reset() throws(StorageError)
    /// Writes `bytes` at `offset`, which is the number of bytes written so far.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError)
    /// Discards whatever was written and any temporary file; idempotent.
    func discard() async
    /// Whether ``reset()`` can take back what was written, so that a download whose
    /// object changed can start over; a stream cannot recall bytes already handed on.
    var isRewindable: Bool { get }
    /// Whether the destination wants the object's metadata from each answer's head (``received(_:)``).
    var wantsMetadata: Bool { get }
    /// Whether ``write(_:at:)`` takes any offset, from several threads at once (positioned
    /// writes), so that the slices of a sliced download can write side by side.
    var writesAtAnyOffset: Bool { get }
    /// Takes the object's metadata, read from the head of an answer about to deliver bytes
    /// (every answer's, resumptions' too), on the transport's thread.
    func received(_ metadata: StorageMetadata)
}

extension DownloadDestination {
    var isRewindable: Bool { true }
    var wantsMetadata: Bool { false }
    var writesAtAnyOffset: Bool { false }
    func received(_ metadata: StorageMetadata) {}
}

/// Collects a download in memory.
final class MemoryDownloadDestination: DownloadDestination {
    private let data = Mutex(Data())

    func reset() throws(StorageError) {
        data.withLock { $0.removeAll() }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        data.withLock { data in
            data.removeSubrange(Int(offset)...)
            data.append(contentsOf: bytes)
        }
    }

    func discard() async {
        data.withLock { $0 = Data() }
    }

    /// The bytes, handed over once the download is complete.
    func take() -> Data {
        data.withLock { data in
            defer { data = Data() }
            return data
        }
    }
}

/// Streams a download into a temporary file beside the target, so the target
/// only ever holds a complete, verified object.
final class FileDownloadDestination: DownloadDestination {
    let target: URL
    let temporary: URL
    /// The open temporary file, or -1 before ``create()`` and after close.
    private let descriptor = Mutex<Int32>(-1)

    init(target: URL) {
        self.target = target
        // Hidden and unique, in the same directory so the final rename is atomic.
        temporary = target.deletingLastPathComponent()
            .appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString.prefix(8)).download")
    }

    /// Creates (or truncates) the temporary file, off the cooperative pool.
    func create() async throws(StorageError) {
        let path = temporary.path
        let target = target
        let fd = try await BlockingIO.run { () throws(StorageError) -> Int32 in
            do throws(SystemCallError) {
                return try SystemCall.open(path, [.writeOnly, .create, .truncate, .closeOnExec], mode: 0o644)
            } catch {
                throw StorageError(
                    .unwritableFile,
                    "Cannot create a file next to \(target.path) for the download (errno \(error.errno)).")
            }
        }
        descriptor.withLock { $0 = fd }
    }

    func reset() throws(StorageError) {
        let fd = descriptor.withLock { $0 }
        do throws(SystemCallError) {
            guard fd >= 0 else { throw SystemCallError("ftruncate", errno: Errno.badDescriptor) }
            try SystemCall.truncate(fd, to: 0)
        } catch {
            throw StorageError(.unwritableFile, "Cannot truncate the download's temporary file (errno \(error.errno)).")
        }
    }

    /// `pwrite` at any offset: the slices of a sliced download write side by side.
    var writesAtAnyOffset: Bool { true }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { throw .cancelled() }
        do throws(SystemCallError) {
            try SystemCall.writeAll(fd, bytes, at: offset)
        } catch {
            throw StorageError(.unwritableFile, "Cannot write the downloaded bytes to disk (errno \(error.errno)).")
        }
    }

    /// Flushes the temporary file and renames it over the target.
    func commit() async throws(StorageError) {
        let fd = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        let (source, target) = (temporary.path, target.path)
        // Runs even when the task is cancelled by now: the descriptor is this call's to close.
        let failure = await BlockingIO.runToCompletion { () -> SystemCallError? in
            defer { if fd >= 0 { try? SystemCall.close(fd) } }
            do throws(SystemCallError) {
                guard fd >= 0 else { throw SystemCallError("fsync", errno: Errno.badDescriptor) }
                try SystemCall.sync(fd)
                try SystemCall.rename(source, to: target)
                return nil
            } catch {
                SystemCall.removeIfPresent(source)
                return error
            }
        }
        if let failure {
            throw StorageError(
                .unwritableFile, "Cannot move the download into place at \(target) (errno \(failure.errno)).")
        }
    }

    func discard() async {
        let fd = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        let path = temporary.path
        await BlockingIO.runToCompletion {
            if fd >= 0 { try? SystemCall.close(fd) }
            SystemCall.removeIfPresent(path)
        }
    }
}
