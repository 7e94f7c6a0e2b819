import Synchronization

/// A retry test of Google's storage-testbench API: for each JSON API method
/// (`storage.objects.get`, as ``Route/APIMethod`` names them), a list of fault instructions
/// that requests carrying `x-retry-test-id: <id>` take one at a time.
///
/// Created by `POST /retry_test` with `{"instructions": {"<method>": ["return-503", …]},
/// "transport": "HTTP"}`; read by `GET /retry_test/<id>` and `GET /retry_tests`, removed by
/// `DELETE /retry_test/<id>`, answered as the testbench answers (see ``resource``). A request
/// of a method takes the first instruction left in that method's list, and requests of other
/// methods, or of a method whose list is used up, are served normally. The test is
/// ``isFinished`` (the testbench's `completed`) once every list is used up.
///
/// As in the testbench, an instruction that waits for N body bytes of the request
/// (`return-503-after-256K`) is used only by a request whose body reaches N bytes: a shorter
/// request (a resumable upload's start, whose body is its metadata) is served normally and
/// leaves the instruction first in its list. An `x-emulator-faults` plan fires such an
/// instruction at the end of a shorter body instead. A retry test never selects anything else
/// by the order of requests, so a runner that sends one request at a time gets exactly the
/// testbench's sequence.
///
/// Instructions follow ``FaultInstruction``'s grammar, which includes the testbench's names
/// (`return-<status>`, `return-<status>-after-<N>K`, `return-reset-connection`,
/// `return-broken-stream`, `return-broken-stream-after-<N>K`). A test lists at most
/// ``FaultPlan/maxInstructions`` instructions in all.
package final class RetryTest: FinishablePlan {
    /// One method's instructions, as written and as parsed, and how many were used.
    private struct List {
        var texts: [String]
        var instructions: [FaultInstruction]
        var used = 0
    }

    /// The id requests name in `x-retry-test-id`.
    package let id: String
    private let lists: Mutex<[String: List]>

    /// Parses a retry test.
    ///
    /// - Parameters:
    ///   - id: The id requests will name.
    ///   - instructions: Each method's instructions, in order.
    ///   - methods: The method names a list may be under (the route table's).
    /// - Throws: ``FaultPlanError`` for no lists, an unknown method, an invalid instruction,
    ///   or more than ``FaultPlan/maxInstructions`` instructions.
    package init(id: String, instructions: [String: [String]], methods: Set<String>) throws(FaultPlanError) {
        guard !instructions.isEmpty else {
            throw FaultPlanError(message: "A retry test needs instructions for at least one method.")
        }
        let total = instructions.values.reduce(0) { $0 + $1.count }
        guard total <= FaultPlan.maxInstructions else {
            throw FaultPlanError(
                message:
                    "A retry test may list at most \(FaultPlan.maxInstructions) instructions; this one has \(total).",
                kind: .tooLarge)
        }
        var lists: [String: List] = [:]
        for (method, texts) in instructions {
            guard methods.contains(method) else {
                throw FaultPlanError(message: "The emulator serves no JSON API method named '\(method)'.")
            }
            var parsed: [FaultInstruction] = []
            for text in texts { parsed.append(try FaultInstruction.parse(text)) }
            lists[method] = List(texts: texts, instructions: parsed)
        }
        self.id = id
        self.lists = Mutex(lists)
    }

    /// The instruction for the next request of `method` (`pass` once its list is used up).
    package func next(for method: String) -> FaultInstruction {
        lists.withLock { lists in
            guard var list = lists[method], list.used < list.instructions.count else { return .pass }
            let instruction = list.instructions[list.used]
            list.used += 1
            lists[method] = list
            return instruction
        }
    }

    /// Puts back the instruction the last request of `method` took without acting on it (its
    /// body ended before the instruction's byte count).
    package func giveBack(for method: String) {
        lists.withLock { lists in
            guard var list = lists[method], list.used > 0 else { return }
            list.used -= 1
            lists[method] = list
        }
    }

    /// Whether every list is used up (the testbench's `completed`).
    package var isFinished: Bool {
        lists.withLock { lists in lists.values.allSatisfy { $0.used == $0.instructions.count } }
    }

    /// The test as the testbench answers it: `id`, `instructions` (what is left of each list,
    /// as written), `completed`, and `transport` (always `HTTP`).
    package var resource: [String: Any] {
        lists.withLock { lists in
            [
                "id": id,
                "instructions": lists.mapValues { Array($0.texts[$0.used...]) },
                "completed": lists.values.allSatisfy { $0.used == $0.instructions.count },
                "transport": "HTTP",
            ]
        }
    }
}
