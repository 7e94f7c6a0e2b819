import Foundation
import Synchronization

/// What an upload has achieved so far, kept across the pauses and retries of one task: the
/// opened source, and the server session as ``ResumableUploadStateMachine`` left it after its
/// last step (one value, read whole). Written by the engine only; read by the engine's next run
/// and by ``UploadSessionDescriber`` (from any thread, hence the lock).
final class UploadCheckpoint: Sendable {
    private struct State {
        var source: PreparedSource?
        var session = ResumableUploadStateMachine.Session()
        var parts = PartsCheckpoint()
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

    /// The opened source, once the first run opened it.
    var source: PreparedSource? {
        get { state.withLock { $0.source } }
        set { state.withLock { $0.source = newValue } }
    }

    /// The multipart upload of a file sent in parts: its id and the parts stored so far.
    var parts: PartsCheckpoint {
        get { state.withLock { $0.parts } }
        set { state.withLock { $0.parts = newValue } }
    }

    /// Records a stored part (parts finish concurrently, so one at a time under the lock).
    func partStored(_ number: Int, _ part: PartsCheckpoint.Part) {
        state.withLock { $0.parts.stored[number] = part }
    }

    /// The resumable session: its URL once the server opened one, what it committed, and
    /// whether it may be deleted.
    var session: ResumableUploadStateMachine.Session {
        get { state.withLock { $0.session } }
        set { state.withLock { $0.session = newValue } }
    }
}
