import Synchronization

/// The fault plans installed by id, bounded in number.
///
/// Plans are installed over HTTP by anyone who can reach the emulator, and a
/// test run may install one per test, so the table never grows past
/// ``capacity``: installing one more first drops the oldest plan whose listed
/// instructions are all used up (it can no longer change a request: its id
/// would only answer `pass`), and if none is finished, the oldest plan of all
/// (random plans never finish, so they go by age). A request naming a dropped
/// plan gets `400 Unknown fault plan`, the same as a misspelt id, so a test
/// that keeps more than ``capacity`` unfinished plans alive learns it at once.
/// Together with ``FaultPlan/maxInstructions`` this bounds the memory plans use.
package final class FaultPlanTable: Sendable {
    /// How many plans are kept at most.
    package static let capacity = 256

    private struct State {
        /// Oldest first; ids are unique.
        var entries: [(id: String, plan: FaultPlan)] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// Stores a plan under `id`, dropping one first if the table is full.
    package func insert(_ plan: FaultPlan, id: String) {
        state.withLock { state in
            if state.entries.count >= Self.capacity {
                let victim = state.entries.firstIndex { $0.plan.isFinished } ?? 0
                state.entries.remove(at: victim)
            }
            state.entries.append((id, plan))
        }
    }

    /// The plan stored under `id`, if it is still kept.
    package func plan(_ id: String) -> FaultPlan? {
        state.withLock { state in state.entries.first { $0.id == id }?.plan }
    }

    /// How many plans are kept.
    package var count: Int { state.withLock { $0.entries.count } }
}
