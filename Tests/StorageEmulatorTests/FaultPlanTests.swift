import Testing

@testable import StorageEmulator

@Suite("Fault plan grammar")
struct FaultPlanTests {
    @Test("Every instruction kind parses, with K and M suffixes")
    func parsesGrammar() throws {
        #expect(try FaultInstruction.parse("pass") == .pass)
        #expect(try FaultInstruction.parse("return-503") == .respond(status: 503))
        #expect(try FaultInstruction.parse("RETURN-429") == .respond(status: 429))
        #expect(try FaultInstruction.parse("return-500-after-256K") == .respondAfter(status: 500, bytes: 262_144))
        #expect(try FaultInstruction.parse("reset-after-1M") == .resetAfter(bytes: 1_048_576))
        #expect(try FaultInstruction.parse("reset-after-0") == .resetAfter(bytes: 0))
        #expect(try FaultInstruction.parse("stall-250ms-after-100") == .stall(milliseconds: 250, afterBytes: 100))
        #expect(try FaultInstruction.parse(" drop-response ") == .dropResponse)
        #expect(try FaultInstruction.parse("Hold-Response") == .holdResponse)
        #expect(FaultInstruction.holdResponse.description == "hold-response")
        #expect(try FaultInstruction.parse("stall-after-64K") == .hold(afterBytes: 65_536))
        #expect(FaultInstruction.hold(afterBytes: 7).description == "stall-after-7")
        #expect(try FaultInstruction.parse(FaultInstruction.hold(afterBytes: 7).description) == .hold(afterBytes: 7))
    }

    @Test("The names of Google's storage-testbench parse, and print as written")
    func parsesTestbenchNames() throws {
        #expect(try FaultInstruction.parse("return-reset-connection") == .resetConnection)
        #expect(try FaultInstruction.parse("return-broken-stream") == .brokenStream(afterBytes: nil))
        #expect(try FaultInstruction.parse("return-broken-stream-after-256K") == .brokenStream(afterBytes: 262_144))
        #expect(try FaultInstruction.parse("return-503-after-8192K") == .respondAfter(status: 503, bytes: 8_388_608))
        #expect(try FaultInstruction.parse("return-408") == .respond(status: 408))
        for text in ["return-reset-connection", "return-broken-stream", "return-broken-stream-after-7"] {
            #expect(try FaultInstruction.parse(text).description == text)
        }
        #expect(FaultInstruction.brokenStream(afterBytes: nil).brokenStreamBytes == 4)
        #expect(FaultInstruction.brokenStream(afterBytes: nil).triggerOffset == nil, "it waits for no request bytes")
    }

    @Test(
        "Invalid instructions are rejected with a message naming them",
        arguments: [
            "", "fail", "return", "return-5000", "return-abc", "return-503-after", "return-503-after-12X",
            "return-503-before-10", "reset", "reset-after--1", "stall-10-after-5", "stall-10ms-5",
            "drop", "pass-1", "return-99", "stall-after", "stall-after-x", "stall-after-5-ms",
            "return-reset", "return-reset-connection-1", "return-broken", "return-broken-stream-after",
            "return-broken-stream-256K", "return-broken-stream-after-x",
        ])
    func rejectsInvalid(_ text: String) {
        #expect(throws: FaultPlanError.self) { try FaultInstruction.parse(text) }
        do {
            _ = try FaultInstruction.parse(text)
        } catch {
            #expect(error.message.contains("'\(text)'"))
        }
    }

    @Test("A plan hands out its instructions in order, then passes")
    func ordered() throws {
        let plan = try FaultPlan(["return-503", "pass", "reset-after-10"])
        #expect(plan.next() == .respond(status: 503))
        #expect(plan.next() == .pass)
        #expect(plan.next() == .resetAfter(bytes: 10))
        #expect(plan.next() == .pass)
        #expect(plan.remaining == 0)
    }

    @Test("Plans: empty, mixed random and invalid random specifications are refused")
    func invalidPlans() {
        #expect(throws: FaultPlanError.self) { try FaultPlan([]) }
        #expect(throws: FaultPlanError.self) { try FaultPlan(["random:seed=1,rate=0.5", "pass"]) }
        #expect(throws: FaultPlanError.self) { try FaultPlan(["random:seed=1"]) }
        #expect(throws: FaultPlanError.self) { try FaultPlan(["random:seed=1,rate=1.5"]) }
        #expect(throws: FaultPlanError.self) { try FaultPlan(["random:seed=x,rate=0.1"]) }
        #expect(throws: FaultPlanError.self) { try FaultPlan(["pass", "bogus"]) }
    }

    @Test("Random plans are deterministic per seed and honour the rate")
    func random() throws {
        let first = try FaultPlan(["random:seed=42,rate=0.3"])
        let second = try FaultPlan(["random:seed=42,rate=0.3"])
        let other = try FaultPlan(["random:seed=43,rate=0.3"])
        let a = (0..<1000).map { _ in first.next() }
        let b = (0..<1000).map { _ in second.next() }
        let c = (0..<1000).map { _ in other.next() }
        #expect(a == b)
        #expect(a != c)
        let faults = a.filter { $0 != .pass }.count
        #expect(faults > 220 && faults < 380, "about 30% of 1000, got \(faults)")
        let kinds = Set(
            a.map { instruction -> String in
                switch instruction {
                case .pass: "pass"
                case .respond: "return"
                case .respondAfter: "return-after"
                case .resetAfter: "reset"
                case .stall: "stall"
                case .hold: "hold"
                case .dropResponse: "drop"
                case .holdResponse: "hold-response"
                case .resetConnection: "reset-connection"
                case .brokenStream: "broken-stream"
                }
            })
        #expect(kinds.count == 6, "a random plan never holds a connection")
        // Short stalls only: far below any client time-out a random plan is used with.
        #expect(a.allSatisfy { if case .stall(let ms, _) = $0 { ms < 200 } else { true } })
        let never = try FaultPlan(["random:seed=1,rate=0"])
        #expect((0..<100).allSatisfy { _ in never.next() == .pass })
    }
}
