import Synchronization

/// An ordered list of fault instructions consumed one per request, or a
/// seeded random source of them.
///
/// Random plans are written `random:seed=<n>,rate=<0..1>`: each request draws
/// from a SplitMix64 generator seeded with `n`; with probability `rate` it gets
/// a fault chosen among the kinds (`return-503`, `return-408`, `return-429`,
/// `return-500`, `return-503-after-N`, `reset-after-N`, `stall-<ms>ms-after-N`,
/// `drop-response`, with N below 1 MiB and stalls below 200 ms), otherwise
/// `pass`. The same seed and the same order of requests give the same faults.
///
/// A random plan never draws `stall-after-<N>` or `hold-response` (holds that only the client's
/// time-out ends), and its short stalls are meant for clients whose request
/// time-out is orders of magnitude longer (the SDK's default is 60 s): with a
/// time-out near 200 ms a random stall would race it, and the outcome would
/// depend on the machine's load rather than on the seed.
///
/// A listed plan holds at most ``maxInstructions`` instructions, so that an
/// installed plan's memory is bounded.
package final class FaultPlan: Sendable {
    /// The most instructions one plan may list.
    package static let maxInstructions = 10_000

    private enum Source {
        case list([FaultInstruction], next: Int)
        case random(state: UInt64, rate: Double)
    }

    private let source: Mutex<Source>

    /// Parses a plan.
    ///
    /// - Throws: ``FaultPlanError`` for an empty plan, an invalid instruction,
    ///   or a `random:` specification that is malformed or not alone.
    package init(_ instructions: [String]) throws(FaultPlanError) {
        guard !instructions.isEmpty else {
            throw FaultPlanError(message: "A fault plan needs at least one instruction.")
        }
        guard instructions.count <= Self.maxInstructions else {
            throw FaultPlanError(
                message:
                    "A fault plan may list at most \(Self.maxInstructions) instructions; this one has \(instructions.count).",
                kind: .tooLarge)
        }
        if let first = instructions.first, first.lowercased().hasPrefix("random:") {
            guard instructions.count == 1 else {
                throw FaultPlanError(message: "A random fault plan cannot be combined with other instructions.")
            }
            let (seed, rate) = try Self.parseRandom(first)
            source = Mutex(.random(state: seed, rate: rate))
        } else {
            var parsed: [FaultInstruction] = []
            for text in instructions { parsed.append(try FaultInstruction.parse(text)) }
            source = Mutex(.list(parsed, next: 0))
        }
    }

    /// The instruction for the next request (`pass` once a list is used up).
    package func next() -> FaultInstruction {
        source.withLock { source in
            switch source {
            case .list(let instructions, let next):
                guard next < instructions.count else { return .pass }
                source = .list(instructions, next: next + 1)
                return instructions[next]
            case .random(var state, let rate):
                let draw = Self.splitMix(&state)
                let chosen: FaultInstruction
                if Double(draw >> 11) / Double(1 << 53) >= rate {
                    chosen = .pass
                } else {
                    let kind = Self.splitMix(&state) % 8
                    let bytes = Int64(Self.splitMix(&state) % (1 << 20))
                    switch kind {
                    case 0: chosen = .respond(status: 503)
                    case 1: chosen = .respond(status: 408)
                    case 2: chosen = .respond(status: 429)
                    case 3: chosen = .respond(status: 500)
                    case 4: chosen = .respondAfter(status: 503, bytes: bytes)
                    case 5: chosen = .resetAfter(bytes: bytes)
                    case 6: chosen = .stall(milliseconds: Int(Self.splitMix(&state) % 200), afterBytes: bytes)
                    default: chosen = .dropResponse
                    }
                }
                source = .random(state: state, rate: rate)
                return chosen
            }
        }
    }

    /// Whether every listed instruction has been used (never, for a random plan).
    package var isFinished: Bool { remaining == 0 }

    /// How many listed instructions are left (nil for a random plan).
    package var remaining: Int? {
        source.withLock { source in
            if case .list(let instructions, let next) = source { return instructions.count - next }
            return nil
        }
    }

    private static func parseRandom(_ text: String) throws(FaultPlanError) -> (UInt64, Double) {
        let invalid = FaultPlanError(
            message: "Invalid random fault plan '\(text)': expected random:seed=<n>,rate=<0..1>.")
        var seed: UInt64?
        var rate: Double?
        for item in text.dropFirst("random:".count).split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharactersInWhitespace() }
            guard pair.count == 2 else { throw invalid }
            switch pair[0].lowercased() {
            case "seed": seed = UInt64(pair[1])
            case "rate": rate = Double(pair[1])
            default: throw invalid
            }
        }
        guard let seed, let rate, rate >= 0, rate <= 1 else { throw invalid }
        return (seed, rate)
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
