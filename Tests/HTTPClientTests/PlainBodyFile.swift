import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// The smallest ``HTTPBodyFile``: a read-only descriptor read with `pread`, for tests of the
/// client's file bodies without the SDK's own file type (which reports its errors as the SDK's).
final class PlainBodyFile: HTTPBodyFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(description: "open \(path): errno \(errno)") }
    }

    deinit {
        close(descriptor)
    }

    func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
        var done = 0
        while done < count {
            let read = pread(descriptor, buffer + done, count - done, off_t(offset) + off_t(done))
            if read < 0 && errno == EINTR { continue }
            if read < 0 { throw readFailedError(errno: errno) }
            if read == 0 { throw endedEarlyError(at: offset + Int64(done)) }
            done += read
        }
    }

    func endedEarlyError(at end: Int64) -> any Error { Failure(description: "the file ended at byte \(end)") }
    func readFailedError(errno code: Int32) -> any Error { Failure(description: "pread: errno \(code)") }
}
