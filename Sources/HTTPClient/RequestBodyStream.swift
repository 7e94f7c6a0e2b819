import Foundation
import Synchronization

/// An `InputStream` over an ``HTTPRequestBody``, for `URLSession`.
///
/// `URLSession` calls `read(_:maxLength:)` on its own thread with a buffer of
/// its own; data segments are copied into it from their storage and file
/// segments are `pread` straight into it, so nothing is staged in between.
/// A read failure or a short file (the file's own error, uninterpreted) is
/// handed to `onError` and ends the stream with an error, which aborts the
/// request.
///
/// Foundation declares streams non-`Sendable`; this one is created by the
/// awaiting task and then used only by `URLSession`.
final class RequestBodyStream: InputStream {
    private struct Position {
        var segment = 0
        var offsetInSegment: Int64 = 0
        var status: Stream.Status = .notOpen
        var error: (any Error)?
    }

    private let body: HTTPRequestBody
    private let onError: @Sendable (any Error) -> Void
    private let position = Mutex(Position())

    init(body: HTTPRequestBody, onError: @escaping @Sendable (any Error) -> Void) {
        self.body = body
        self.onError = onError
        super.init(data: Data())
    }

    /// Why reading failed, if it did.
    private var error: (any Error)? { position.withLock { $0.error } }

    override func open() {
        position.withLock { if $0.status == .notOpen { $0.status = .open } }
    }

    override func close() {
        position.withLock { $0.status = .closed }
    }

    override var streamStatus: Stream.Status { position.withLock { $0.status } }

    override var streamError: (any Error)? { error }

    override var hasBytesAvailable: Bool {
        position.withLock { $0.status == .open || $0.status == .reading }
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        // Only URLSession's single worker reads; the lock guards against misuse, not contention.
        let result = position.withLock { position -> (Int, (any Error)?) in
            var written = 0
            while written < maxLength, position.segment < body.segments.count {
                let segment = body.segments[position.segment]
                let remaining = segment.length - position.offsetInSegment
                if remaining == 0 {
                    position.segment += 1
                    position.offsetInSegment = 0
                    continue
                }
                let count = Int(min(Int64(maxLength - written), remaining))
                let destination = UnsafeMutableRawPointer(buffer + written)
                switch segment {
                case .data(let data):
                    let start = data.startIndex + Int(position.offsetInSegment)
                    data.copyBytes(to: buffer + written, from: start..<(start + count))
                case .fileRegion(let file, let offset, _):
                    do {
                        try file.readExactly(into: destination, count: count, at: offset + position.offsetInSegment)
                    } catch {
                        position.error = error
                        position.status = .error
                        return (-1, error)
                    }
                }
                written += count
                position.offsetInSegment += Int64(count)
            }
            if written == 0 && position.segment >= body.segments.count {
                position.status = .atEnd
            } else {
                position.status = .reading
            }
            return (written, nil)
        }
        if let error = result.1 {
            onError(error)
        }
        return result.0
    }
}
