import Foundation
import HTTP1
import Synchronization

/// The gzip form of bytes in memory or of a file, produced block by block as it is read, on the
/// blocking pool (never the cooperative one): reading and deflating are both work that blocks.
///
/// Why a stream, and not a compressed copy first: the upload then holds one request's bytes,
/// whatever the file's size, and needs no temporary file to clean up on every exit path. The
/// price is the streamed upload's: the size is not known until the end (a resumable session,
/// never one request), and bytes the server lost after the buffer dropped them are
/// ``StorageErrorCode/dataLoss`` rather than a re-read. The encoding is deterministic (no name,
/// time zero), so uploading the same bytes again gives the same object.
struct CompressedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    typealias Failure = any Error

    enum Source: Sendable {
        case data(Data)
        case file(URL)
    }

    let source: Source
    /// The most original bytes compressed per element.
    static let blockSize = 1 << 20

    init(_ source: Source) {
        self.source = source
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(state: State(source: source))
    }

    /// What one iteration holds: the encoder and where the source stands. Used by one iterator
    /// at a time, each step on a blocking thread, one after the other.
    ///
    /// SAFETY (`@unchecked Sendable`): `next()` awaits each step before the next one starts, so
    /// no two threads touch it at once.
    final class State: @unchecked Sendable {  // SAFETY: see the note above
        let source: Source
        var encoder: GzipEncoder?
        var file: ReadOnlyFile?
        var offset: Int64 = 0
        var finished = false

        init(source: Source) {
            self.source = source
        }

        /// The next compressed bytes (possibly empty while zlib holds them), or nil at the end.
        func step() throws(StorageError) -> Data? {
            guard !finished else { return nil }
            if encoder == nil {
                do throws(GzipError) {
                    encoder = try GzipEncoder()
                } catch {
                    throw StorageError(.internalError, "Cannot compress the upload: \(error).")
                }
            }
            var output = Data()
            let sink = { (piece: UnsafeRawBufferPointer) throws(StorageError) in output.append(contentsOf: piece) }
            let failure = { (error: GzipError) in StorageError(.internalError, "Cannot compress the upload: \(error).")
            }
            switch source {
            case .data(let data):
                let end = Swift.min(data.count, Int(offset) + Self.blockSize)
                let last = end == data.count
                // `withUnsafeBytes` rethrows untyped: the outcome comes back as a value.
                let outcome = data[(data.startIndex + Int(offset))..<(data.startIndex + end)].withUnsafeBytes {
                    block in
                    Result { () throws(StorageError) in
                        try encoder!.encode(block, finish: last, failure: failure, into: sink)
                    }
                }
                try outcome.get()
                offset = Int64(end)
                finished = last
            case .file(let url):
                if file == nil { file = try ReadOnlyFile(path: url.path) }
                let file = file!
                let count = Int(Swift.min(Int64(Self.blockSize), file.size - offset))
                let last = offset + Int64(count) == file.size
                let block = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(1, count), alignment: 1)
                defer { block.deallocate() }
                if count > 0 { try file.readExactly(into: block.baseAddress!, count: count, at: offset) }
                try encoder!.encode(
                    UnsafeRawBufferPointer(rebasing: block[..<count]), finish: last, failure: failure, into: sink)
                offset += Int64(count)
                finished = last
            }
            return output
        }

        private static let blockSize = CompressedChunks.blockSize
    }

    /// Takes the compressed elements, in order.
    struct Iterator: AsyncIteratorProtocol {
        let state: State

        mutating func next() async throws -> Data? {
            while true {
                let state = state
                guard let chunk = try await BlockingIO.run({ () throws(StorageError) in try state.step() }) else {
                    return nil
                }
                if !chunk.isEmpty { return chunk }
            }
        }
    }
}
