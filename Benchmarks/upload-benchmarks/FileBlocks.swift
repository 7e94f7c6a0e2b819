import FakeGCSServer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif

/// A file's bytes as an `AsyncSequence` of blocks (1 MiB unless told), each read off the
/// cooperative pool when asked for: the `putStream` scenarios' source, pulled as the upload
/// sends (so the peak memory it shows is the SDK's buffer, not a read-ahead of the producer's
/// own). Every block is a `Data` over a buffer of its own, never a slice of a larger read, so
/// an element the SDK keeps holds exactly its own bytes; ``live``, when given, counts them
/// from the read until their last reference goes.
struct FileBlocks: AsyncSequence, Sendable {
    typealias Element = Data
    let url: URL
    /// Bytes per element; the last one may be shorter.
    var blockSize = 1 << 20
    /// Counts the elements' bytes alive at once, when given.
    var live: LiveBytes?

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        let blockSize: Int
        let live: LiveBytes?
        var handle: SendableHandle?

        mutating func next() async throws -> Data? {
            if handle == nil {
                let url = url
                handle = try await BlockingWork.run { SendableHandle(try FileHandle(forReadingFrom: url)) }
            }
            guard let handle else { return nil }
            let (count, live) = (blockSize, self.live)
            return try await BlockingWork.run {
                try Self.readBlock(count, from: handle.value.fileDescriptor, live: live)
            }
        }

        /// Reads up to `count` bytes into a buffer of their own; nil at the end of the file.
        private static func readBlock(_ count: Int, from descriptor: Int32, live: LiveBytes?) throws -> Data? {
            guard let buffer = malloc(count) else { throw BenchmarkError("cannot allocate \(count) bytes") }
            var filled = 0
            while filled < count {
                let got = read(descriptor, buffer + filled, count - filled)
                if got < 0 && errno == EINTR { continue }
                guard got >= 0 else {
                    free(buffer)
                    throw BenchmarkError("read failed: errno \(errno)")
                }
                if got == 0 { break }
                filled += got
            }
            guard filled > 0 else {
                free(buffer)
                return nil
            }
            live?.add(filled)
            return Data(
                bytesNoCopy: buffer, count: filled,
                deallocator: .custom { pointer, size in
                    free(pointer)
                    live?.remove(size)
                })
        }
    }

    /// The open file; used by one reader at a time.
    final class SendableHandle: @unchecked Sendable {
        let value: FileHandle
        init(_ value: FileHandle) { self.value = value }
        deinit { try? value.close() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(url: url, blockSize: blockSize, live: live) }
}
