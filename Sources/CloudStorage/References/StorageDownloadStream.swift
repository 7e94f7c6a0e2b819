public import Foundation
import Synchronization

/// An object's bytes as an asynchronous sequence of chunks, read from the
/// network no faster than they are consumed.
///
/// Made by ``StorageReference/dataStream(preconditions:)`` and
/// ``StorageReference/dataStream(range:preconditions:)``. Each iteration is its own
/// download: `makeAsyncIterator()` starts a `GET`, and the chunks (each at
/// most 256 KiB, none empty) arrive in order.
///
/// - **Bounded memory.** At most about 1 MiB waits for the consumer; while it
///   does, the connection is not read, so TCP flow control holds the server
///   back, whatever the object's size. Not over the `URLSession` transport
///   (``StorageTransportChoice/urlSession``, or `https` where native TLS is
///   unavailable): swift-corelibs-foundation delivers every session's data on
///   one shared queue, so waiting there would stall every other request in
///   the process; there the chunks the consumer has not taken yet are kept.
/// - **Resumption.** A connection that breaks mid-body is retried within the
///   storage's retry budget with `Range` from the first byte not yet handed
///   on: no byte is repeated or skipped. A resumption that finds another
///   generation (or size, or checksum) of the object ends the stream with
///   ``StorageErrorCode/objectChanged``, since the bytes already handed on
///   cannot be taken back.
/// - **Integrity.** For a whole object, the CRC32C of every byte is compared
///   with the server's (`x-goog-hash`) after the last chunk; a mismatch is
///   thrown as ``StorageErrorCode/nonMatchingChecksum`` by the `next()` that
///   would have returned nil. **The consumer has already received the bytes
///   by then**, as with any streaming client: treat whatever it wrote as
///   unverified until the loop ends without an error. A range is checked for
///   its length only (the checksum covers the whole object).
/// - **Termination.** The loop ends after the last chunk, or with the
///   ``StorageError`` that ended the download. Breaking out of the loop,
///   dropping the iterator or cancelling the consuming task aborts the request
///   at once and closes its connection; a cancelled task's `next()` throws
///   ``StorageErrorCode/cancelled``.
///
/// ```swift
/// var file = try FileHandle(forWritingTo: URL(fileURLWithPath: "/tmp/log.txt"))
/// for try await chunk in storage.reference(withPath: "logs/today.txt").dataStream() {
///     try file.write(contentsOf: chunk)
/// }
/// ```
public struct StorageDownloadStream: AsyncSequence, Sendable {
    /// A chunk of the object's bytes, in order, never empty.
    public typealias Element = Data
    /// The error that ends a download.
    public typealias Failure = StorageError

    let reference: StorageReference
    /// The bytes wanted, or the error an invalid range gives on the first `next()`.
    let range: Result<ByteRange?, StorageError>
    /// The caller's conditions on the object.
    let preconditions: StoragePreconditions
    /// A download already under way (``StorageReference/download(preconditions:)``), which the
    /// first iteration takes over; later iterations start their own.
    var started: StartedDownload? = nil

    /// A download started before its stream was iterated; cancelled if no iteration takes it.
    final class StartedDownload: Sendable {
        private let buffer: Mutex<DownloadStreamBuffer?>

        init(_ buffer: DownloadStreamBuffer) { self.buffer = Mutex(buffer) }

        /// The download, to the first caller only.
        func take() -> DownloadStreamBuffer? { buffer.withLock { $0.take() } }

        deinit { buffer.withLock { $0 }?.cancel() }
    }

    /// Starts a download and returns its iterator.
    public func makeAsyncIterator() -> Iterator {
        if let buffer = started?.take() { return Iterator(buffer) }
        let storage = reference.storage
        let waits = storage.transport.carrier(for: storage.endpoint.baseURL).capabilities
            .contains(.letsResponseSinksWait)
        return Iterator(
            Self.start(
                reference: reference, range: range, preconditions: preconditions,
                buffer: DownloadStreamBuffer(waits: waits)))
    }

    /// Runs the download into a new buffer, on a task of its own.
    static func start(
        reference: StorageReference, range: Result<ByteRange?, StorageError>,
        preconditions: StoragePreconditions = .none, buffer: DownloadStreamBuffer
    ) -> DownloadStreamBuffer {
        switch range {
        case .failure(let error):
            buffer.finish(.failure(error))
        case .success(let range):
            var engine = DownloadEngine(
                storage: reference.storage, path: reference.path, generation: reference.generation,
                destination: buffer, maxSize: nil)
            engine.range = range
            engine.preconditions = preconditions
            buffer.attach(
                Task {
                    do throws(StorageError) {
                        _ = try await engine.run(checkpoint: engine.makeCheckpoint()) { _, _ in }
                        buffer.finish(.success(()))
                    } catch {
                        buffer.finish(.failure(error))
                    }
                })
        }
        return buffer
    }

    /// Takes the chunks of one download, in order.
    ///
    /// Not `Sendable`: one consumer reads it. Dropping it before the end
    /// cancels the download.
    public struct Iterator: AsyncIteratorProtocol {
        /// A chunk of the object's bytes.
        public typealias Element = Data
        /// The error that ended the download.
        public typealias Failure = StorageError

        /// Cancels the download when the last copy of the iterator goes away.
        final class Lifetime {
            let buffer: DownloadStreamBuffer

            init(_ buffer: DownloadStreamBuffer) { self.buffer = buffer }

            deinit { buffer.cancel() }
        }

        let lifetime: Lifetime

        init(_ buffer: DownloadStreamBuffer) {
            lifetime = Lifetime(buffer)
        }

        var buffer: DownloadStreamBuffer { lifetime.buffer }

        /// The next chunk, or nil once every byte arrived and was verified.
        ///
        /// - Throws: The ``StorageError`` that ended the download:
        ///   ``StorageErrorCode/nonMatchingChecksum`` after the last chunk of an
        ///   object whose bytes do not match the server's checksum;
        ///   ``StorageErrorCode/objectNotFound``;
        ///   ``StorageErrorCode/invalidArgument`` for a range that starts past
        ///   the object's end; ``StorageErrorCode/cancelled`` when the calling
        ///   task is cancelled.
        public mutating func next() async throws(StorageError) -> Data? {
            try await lifetime.buffer.next()
        }

        /// The next chunk; see ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(StorageError) -> Data? {
            try await lifetime.buffer.next()
        }
    }
}
