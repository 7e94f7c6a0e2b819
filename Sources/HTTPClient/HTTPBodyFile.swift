/// An open file whose regions a request body sends
/// (``HTTPRequestBody/Segment/fileRegion(_:offset:length:)``).
///
/// The transport reads it and reports its failures, but never interprets
/// them: whatever an implementation throws or returns as an error travels
/// back untouched inside ``HTTPTransportError/Kind/bodySourceFailed``, for
/// the layer that opened the file to recover. An implementation must
/// guarantee:
/// - ``descriptor`` stays open and valid while the object lives, and nobody
///   moves its file position (reads use absolute offsets), so a transport may
///   hand it to `sendfile(2)` or `pread` from any thread.
/// - Its methods may block and are called from a transport's own threads,
///   never from Swift's cooperative pool, possibly concurrently.
package protocol HTTPBodyFile: Sendable {
    /// The open descriptor, for `sendfile(2)` and `pread` at absolute offsets.
    var descriptor: Int32 { get }

    /// Reads exactly `count` bytes at `offset` into `buffer`.
    ///
    /// - Throws: The implementation's own error when the read fails or the
    ///   file ends before `offset + count`.
    func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws

    /// The error for a file found to end at `end`, before a region the
    /// request still had to send (`sendfile` copied nothing).
    func endedEarlyError(at end: Int64) -> any Error

    /// The error for a read that the kernel failed with `code` (an `errno`).
    func readFailedError(errno code: Int32) -> any Error
}
