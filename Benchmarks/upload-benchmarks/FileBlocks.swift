import FakeGCSServer
import Foundation

/// A file's bytes as an `AsyncSequence` of blocks (1 MiB unless told), each read off the
/// cooperative pool when asked for: the `putStream` scenarios' source, pulled as the upload
/// sends (so the peak memory it shows is the SDK's buffer, not a read-ahead of the producer's
/// own). Every block is a `Data` of its own, never a slice of a larger read, so an element the
/// SDK keeps holds exactly its own bytes.
struct FileBlocks: AsyncSequence, Sendable {
    typealias Element = Data
    let url: URL
    /// Bytes per element; the last one may be shorter.
    var blockSize = 1 << 20

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        let blockSize: Int
        var handle: SendableHandle?
        mutating func next() async throws -> Data? {
            if handle == nil {
                let url = url
                handle = try await BlockingWork.run { SendableHandle(try FileHandle(forReadingFrom: url)) }
            }
            guard let handle else { return nil }
            let count = blockSize
            let block = try await BlockingWork.run { try handle.value.read(upToCount: count) }
            guard let block, !block.isEmpty else { return nil }
            return block
        }
    }

    /// The open file; used by one reader at a time.
    final class SendableHandle: @unchecked Sendable {
        let value: FileHandle
        init(_ value: FileHandle) { self.value = value }
        deinit { try? value.close() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(url: url, blockSize: blockSize) }
}
