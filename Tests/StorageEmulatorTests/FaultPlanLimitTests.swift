import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Installed fault plans are bounded: in size (instructions and request bytes) and in number.
/// Without the bounds, 200 plans of 1 MB posted to the control endpoint took 630 MB that
/// were never freed.
@Suite("Fault plan limits")
struct FaultPlanLimitTests {
    @Test("A plan over the instruction limit is refused: FaultPlanError, 413 over HTTP")
    func tooManyInstructions() throws {
        let harness = try Harness()
        let tooMany = Array(repeating: "pass", count: FaultPlan.maxInstructions + 1)
        let error = #expect(throws: FaultPlanError.self) { try harness.app.installFaultPlan(tooMany) }
        #expect(error?.kind == .tooLarge)
        let refused = harness.send("POST", "/_emulator/v1/faults", json: ["instructions": tooMany])
        #expect(refused.status == 413)
        #expect(refused.errorMessage.contains("at most \(FaultPlan.maxInstructions)"))
        #expect(harness.app.plans.count == 0)
        // The limit itself is fine.
        let most = Array(repeating: "stall-20ms-after-64K", count: FaultPlan.maxInstructions)
        #expect(harness.send("POST", "/_emulator/v1/faults", json: ["instructions": most]).status == 200)
        #expect(harness.app.plans.count == 1)
    }

    @Test("A control request body over 512 KiB is refused with 413 and stores nothing")
    func bodyTooLarge() throws {
        let harness = try Harness()
        // 1 MB of one long (invalid) instruction: refused for its size before it is parsed.
        let huge = String(repeating: "p", count: 1024 * 1024)
        let refused = harness.send("POST", "/_emulator/v1/faults", json: ["instructions": [huge]])
        #expect(refused.status == 413)
        let chunked = harness.send(
            "POST", "/_emulator/v1/faults", headers: ["Content-Type": "application/json"],
            body: Array("{\"instructions\": [\"\(huge)\"]}".utf8), chunked: true)
        #expect(chunked.status == 413)
        #expect(harness.app.plans.count == 0)
    }

    @Test("At most FaultPlanTable.capacity plans are kept; the oldest goes first")
    func boundedCount() throws {
        let harness = try Harness()
        var ids: [String] = []
        for _ in 0..<(FaultPlanTable.capacity + 50) {
            let installed = harness.send("POST", "/_emulator/v1/faults", json: ["instructions": ["return-503"]])
            #expect(installed.status == 200)
            ids.append(try #require(installed.json["id"] as? String))
        }
        #expect(harness.app.plans.count == FaultPlanTable.capacity)
        // The 50 oldest were dropped: naming one is an unknown plan; the newest still work.
        let dropped = harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": ids[49]])
        #expect(dropped.status == 400)
        #expect(dropped.errorMessage.contains("Unknown fault plan"))
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": ids[50]]).status == 503)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": ids.last!]).status == 503)
    }

    @Test("A finished plan is dropped before an older unfinished one; random plans go by age")
    func finishedPlansGoFirst() throws {
        let harness = try Harness()
        let unfinished = try harness.app.installFaultPlan(["return-503", "return-500"])
        let random = try harness.app.installFaultPlan(["random:seed=1,rate=1"])
        let finished = try harness.app.installFaultPlan(["return-429"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": finished]).status == 429)
        for _ in 3..<FaultPlanTable.capacity { _ = try harness.app.installFaultPlan(["return-503"]) }
        #expect(harness.app.plans.count == FaultPlanTable.capacity)

        _ = try harness.app.installFaultPlan(["pass"])
        #expect(harness.app.plans.plan(finished) == nil, "the used-up plan made room")
        #expect(harness.app.plans.plan(unfinished) != nil)
        #expect(harness.app.plans.plan(random) != nil)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": unfinished]).status == 503)

        // Nothing is finished now except the newest `pass` plan once used; the oldest goes.
        _ = try harness.app.installFaultPlan(["pass"])
        #expect(harness.app.plans.plan(unfinished) == nil)
        _ = try harness.app.installFaultPlan(["pass"])
        #expect(harness.app.plans.plan(random) == nil, "a random plan never finishes, so it goes by age")
        #expect(harness.app.plans.count == FaultPlanTable.capacity)
    }
}
