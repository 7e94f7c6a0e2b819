import Synchronization

/// A plan a ``PlanTable`` keeps: a list of fault instructions that requests use up.
package protocol FinishablePlan: AnyObject, Sendable {
    /// Whether every listed instruction has been used, so that the plan can no longer change a
    /// request (a plan that never ends, such as a random one, is never finished).
    var isFinished: Bool { get }
}

extension FaultPlan: FinishablePlan {}

/// The fault plans installed by id (``FaultPlanTable``), and the retry tests created by id
/// (``RetryTestTable``), bounded in number.
///
/// Plans are installed over HTTP by anyone who can reach the emulator, and a
/// test run may install one per test, so the table never grows past
/// ``capacity``: installing one more first drops the oldest plan whose listed
/// instructions are all used up (it can no longer change a request: its id
/// would only answer `pass`), and if none is finished, the oldest plan of all
/// (random plans never finish, so they go by age). A request naming a dropped
/// plan gets the same answer as a misspelt id (`400 Unknown fault plan`, or
/// `404` for a retry test), so a test that keeps more than ``capacity`` unfinished
/// plans alive learns it at once. Together with ``FaultPlan/maxInstructions`` this bounds
/// the memory plans use.
package final class PlanTable<Plan: FinishablePlan>: Sendable {
    /// How many plans are kept at most.
    package static var capacity: Int { 256 }

    private struct State {
        /// Oldest first; ids are unique.
        var entries: [(id: String, plan: Plan)] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// Stores a plan under `id`, dropping one first if the table is full.
    package func insert(_ plan: Plan, id: String) {
        state.withLock { state in
            if state.entries.count >= Self.capacity {
                let victim = state.entries.firstIndex { $0.plan.isFinished } ?? 0
                state.entries.remove(at: victim)
            }
            state.entries.append((id, plan))
        }
    }

    /// The plan stored under `id`, if it is still kept.
    package func plan(_ id: String) -> Plan? {
        state.withLock { state in state.entries.first { $0.id == id }?.plan }
    }

    /// Removes the plan stored under `id`.
    ///
    /// - Returns: Whether there was one.
    package func remove(_ id: String) -> Bool {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.id == id }) else { return false }
            state.entries.remove(at: index)
            return true
        }
    }

    /// Every plan kept, oldest first.
    package var all: [Plan] { state.withLock { $0.entries.map(\.plan) } }

    /// How many plans are kept.
    package var count: Int { state.withLock { $0.entries.count } }
}

/// The fault plans requests select with `x-emulator-faults: <id>`.
package typealias FaultPlanTable = PlanTable<FaultPlan>

/// The retry tests requests select with `x-retry-test-id: <id>`.
package typealias RetryTestTable = PlanTable<RetryTest>
