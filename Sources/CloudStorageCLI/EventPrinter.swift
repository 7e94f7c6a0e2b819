import CloudStorage
import Foundation

/// Prints each SDK event to standard error, one line each (`--verbose`).
///
/// It runs on the SDK's event thread, so its blocking write never holds up a request; the events
/// are already redacted and on one line.
struct EventPrinter: StorageEventHandler {
    func handle(_ event: StorageEvent) {
        FileHandle.standardError.write(Data("[cloud-storage] \(event)\n".utf8))
    }
}
