import Foundation
import Synchronization

/// What an upload has achieved so far, kept across the pauses and retries of
/// one task: the opened source, the server session, and the bytes the server
/// has committed. Written and read by the engine only.
final class UploadCheckpoint: Sendable {
    private struct State {
        var source: PreparedSource?
        var session: URL?
        var committedBytes: Int64 = 0
        var sentBytes: Int64 = 0
        var sessionMayBeFinalized = false
        var sessionIsAdopted = false
    }

    /// Holds the description of a session a failure left open (see
    /// ``UploadEngine/sessionLeftOpen(after:stop:_:)``). A class of its own because the task's
    /// describer keeps it after the task lets go of this checkpoint, and with it of the source.
    final class LeftOpen: Sendable {
        private let value = Mutex<StorageUploadSession?>(nil)

        /// The description, once the upload ended leaving its session open; nil before and otherwise.
        var session: StorageUploadSession? {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    private let state = Mutex(State())

    /// The session the upload's failure left open for ``Storage/resumeUpload(_:from:)``, if any.
    let leftOpen = LeftOpen()

    var source: PreparedSource? {
        get { state.withLock { $0.source } }
        set { state.withLock { $0.source = newValue } }
    }

    /// The resumable session's URL, once the server opened one.
    var session: URL? {
        get { state.withLock { $0.session } }
        set { state.withLock { $0.session = newValue } }
    }

    /// The bytes the server last reported committed in the current session;
    /// it may never report fewer in that session.
    var committedBytes: Int64 {
        get { state.withLock { $0.committedBytes } }
        set { state.withLock { $0.committedBytes = newValue } }
    }

    /// The end of the furthest request sent in the current session: the server
    /// cannot have committed more.
    var sentBytes: Int64 {
        get { state.withLock { $0.sentBytes } }
        set { state.withLock { $0.sentBytes = newValue } }
    }

    /// Whether the server answered a finalizing request of the current session with
    /// success and an unreadable body: the object may be stored, so the session is
    /// never deleted (that could delete the object's upload), only forgotten.
    var sessionMayBeFinalized: Bool {
        get { state.withLock { $0.sessionMayBeFinalized } }
        set { state.withLock { $0.sessionMayBeFinalized = newValue } }
    }

    /// Whether the session came from a ``StorageUploadSession`` (another process opened it):
    /// the upload cannot open a new one in its place (it lacks the metadata and preconditions
    /// the first start sent), so losing it ends the upload.
    var sessionIsAdopted: Bool {
        get { state.withLock { $0.sessionIsAdopted } }
        set { state.withLock { $0.sessionIsAdopted = newValue } }
    }
}
