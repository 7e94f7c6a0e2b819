import FakeGCSServer
import Foundation

/// A file's bytes as an `AsyncSequence` of 1 MiB blocks, each read off the cooperative pool
/// when asked for: the `putStream` scenario's source, pulled as the upload sends (so the peak
/// memory it shows is the SDK's buffer, not a read-ahead of the producer's own).
struct FileBlocks: AsyncSequence, Sendable {
    typealias Element = Data
    let url: URL

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        var handle: SendableHandle?
        mutating func next() async throws -> Data? {
            if handle == nil {
                let url = url
                handle = try await BlockingWork.run { SendableHandle(try FileHandle(forReadingFrom: url)) }
            }
            guard let handle else { return nil }
            let block = try await BlockingWork.run { try handle.value.read(upToCount: 1 << 20) }
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

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(url: url) }
}
