import HTTPClient
import SystemCalls

/// An upload's file is what the transport sends regions of; its failures go
/// through the transport as the ``StorageError``s the engine expects back.
extension ReadOnlyFile: HTTPBodyFile {
    func endedEarlyError(at end: Int64) -> any Error {
        shrankError(endingAt: end)
    }

    func readFailedError(errno code: Int32) -> any Error {
        Self.readError(path: path, SystemCallError("read", errno: code))
    }
}
