/// One step of a fault plan: what the emulator does to one request.
///
/// Grammar (one instruction per string, case-insensitive):
///
/// | Instruction | Effect |
/// |---|---|
/// | `pass` | the request is served normally |
/// | `return-<status>` | answer `<status>` (e.g. 408, 429, 500, 503) with the protocol's error JSON before reading any body byte |
/// | `return-<status>-after-<N>` | read N body bytes, commit what a real server would (see below), then answer `<status>` |
/// | `return-reset-connection` | end the connection with a TCP reset before reading any body byte or answering: the request takes no effect |
/// | `reset-after-<N>` | read N body bytes, commit them likewise, then end the connection with a TCP reset |
/// | `return-broken-stream` | serve the request fully (committing everything), send the answer's head and its first 4 body bytes, then close the connection |
/// | `return-broken-stream-after-<N>` | the same after N bytes of the answer's body |
/// | `stall-<ms>ms-after-<N>` | read N body bytes, sleep `<ms>` milliseconds, then carry on normally |
/// | `stall-after-<N>` | read N body bytes, commit them like `reset-after-<N>`, then send nothing more and hold the connection until the client closes it (or the emulator stops), then close it |
/// | `drop-response` | serve the request fully (committing everything), then close the connection without answering |
/// | `hold-response` | serve the request fully (committing everything), then send nothing and hold the connection as `stall-after-<N>` does: the answer of a request that took effect never comes |
///
/// `N` is a byte count with an optional `K` or `M` suffix (1024-based):
/// `256K` is 262144. A body shorter than N triggers the fault when the body
/// ends, before the request is processed.
///
/// What "commit" means: a resumable upload request (GCS session `PUT`, Firebase
/// `upload` command) persists its bytes in units of 256 KiB as they arrive,
/// like GCS, so a fault after N bytes leaves the session's committed size at
/// the largest multiple of 262144 not above what had arrived (counted from
/// the session's committed offset), and the client has to query and resume
/// from there. Single-request uploads (media, multipart) commit nothing.
///
/// Stalls and time-outs: `stall-<ms>ms-after-<N>` is for a slow server whose
/// request still succeeds, so `<ms>` must be far shorter than the client's
/// request time-out (e.g. 50 ms against 60 s); a sleep that is close to a
/// time-out is a race that a loaded machine decides. To make a client time
/// out, use `stall-after-<N>`: it waits for an event (the client giving up and
/// closing the connection), not for a clock, so the client's time-out is the
/// only way the request can end, however slow the machine. The hold is capped
/// at ``holdLimit`` so that a client without any time-out cannot keep an
/// emulator thread forever; the connection is then closed, which the client
/// also sees as a failure.
///
/// Media downloads are the exception: for a `GET` of an object's bytes (GCS
/// `alt=media` or `/download/...`, Firebase v0 `alt=media`) the body is the
/// response's, so `reset-after-<N>` sends the response head and N body bytes
/// (counted from the start of this response's body, i.e. of the requested
/// range), then resets; `stall-<ms>ms-after-<N>` sends N body bytes, sleeps,
/// then sends the rest; `stall-after-<N>` sends N body bytes, then holds the
/// connection until the client closes it. A body of N bytes or fewer is sent whole before the
/// fault. The reset may discard bytes still in the kernel's send buffer, so
/// the client receives at most N. `return-<status>-after-<N>` cannot change a
/// response already under way, so a download answers `<status>` before any
/// byte, as `return-<status>` does; `drop-response` closes without answering.
/// A download answered with an error, or of an empty object, has no body to
/// fault and gets the fault before its answer, like other body-less requests.
///
/// Broken streams act on every answer, whatever the request: metadata, listings, an upload's
/// resource, an error document, or an object's bytes (counted from the start of this answer's
/// body; stored bytes when the answer is transcoded). An answer of N bytes or fewer arrives
/// whole before the connection closes, so the client sees no failure. `return-broken-stream`,
/// `return-reset-connection`, and `return-<status>` with `-after-<N>` are the names Google's
/// storage-testbench gives these faults, and retry tests use them (see ``RetryTest``).
package enum FaultInstruction: Sendable, Equatable, CustomStringConvertible {
    case pass
    case respond(status: Int)
    case respondAfter(status: Int, bytes: Int64)
    case resetAfter(bytes: Int64)
    case stall(milliseconds: Int, afterBytes: Int64)
    /// `return-reset-connection`: reset before reading the body or answering.
    case resetConnection
    /// `return-broken-stream[-after-<N>]`: serve the request, then close the connection after N
    /// bytes of the answer's body (nil: ``brokenStreamDefaultBytes``).
    case brokenStream(afterBytes: Int64?)
    /// `stall-after-<N>`: hold the connection until the client closes it.
    case hold(afterBytes: Int64)
    case dropResponse
    /// `hold-response`: serve the request, then hold the connection, unanswered, until the client closes it.
    case holdResponse

    /// How many bytes of the answer's body `return-broken-stream` sends: "a few", as the testbench does.
    package static let brokenStreamDefaultBytes: Int64 = 4

    /// The longest a `stall-after-<N>` or `hold-response` holds a connection the client never closes.
    package static let holdLimit: Duration = .seconds(600)

    /// Parses one instruction.
    ///
    /// - Throws: ``FaultPlanError`` naming the instruction when it does not follow the grammar.
    package static func parse(_ text: String) throws(FaultPlanError) -> FaultInstruction {
        let lowered = text.trimmingCharactersInWhitespace().lowercased()
        let parts = lowered.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        let invalid = FaultPlanError(message: "Invalid fault instruction '\(text)'.")
        switch parts.first {
        case "pass" where parts.count == 1:
            return .pass
        case "drop" where parts == ["drop", "response"]:
            return .dropResponse
        case "hold" where parts == ["hold", "response"]:
            return .holdResponse
        case "return" where parts == ["return", "reset", "connection"]:
            return .resetConnection
        case "return" where parts.count > 2 && parts[1] == "broken" && parts[2] == "stream":
            if parts.count == 3 { return .brokenStream(afterBytes: nil) }
            guard parts.count == 5, parts[3] == "after", let bytes = parseByteCount(parts[4]) else { throw invalid }
            return .brokenStream(afterBytes: bytes)
        case "return":
            guard let status = parseStatus(parts.count > 1 ? parts[1] : "") else { throw invalid }
            if parts.count == 2 { return .respond(status: status) }
            guard parts.count == 4, parts[2] == "after", let bytes = parseByteCount(parts[3]) else { throw invalid }
            return .respondAfter(status: status, bytes: bytes)
        case "reset":
            guard parts.count == 3, parts[1] == "after", let bytes = parseByteCount(parts[2]) else { throw invalid }
            return .resetAfter(bytes: bytes)
        case "stall":
            if parts.count == 3, parts[1] == "after", let bytes = parseByteCount(parts[2]) {
                return .hold(afterBytes: bytes)
            }
            guard parts.count == 4, parts[1].hasSuffix("ms"), let milliseconds = Int(parts[1].dropLast(2)),
                milliseconds >= 0, milliseconds <= 600_000, parts[2] == "after",
                let bytes = parseByteCount(parts[3])
            else { throw invalid }
            return .stall(milliseconds: milliseconds, afterBytes: bytes)
        default:
            throw invalid
        }
    }

    /// The instruction in the grammar's spelling.
    package var description: String {
        switch self {
        case .pass: "pass"
        case .respond(let status): "return-\(status)"
        case .respondAfter(let status, let bytes): "return-\(status)-after-\(bytes)"
        case .resetAfter(let bytes): "reset-after-\(bytes)"
        case .resetConnection: "return-reset-connection"
        case .brokenStream(nil): "return-broken-stream"
        case .brokenStream(let bytes?): "return-broken-stream-after-\(bytes)"
        case .stall(let milliseconds, let bytes): "stall-\(milliseconds)ms-after-\(bytes)"
        case .hold(let bytes): "stall-after-\(bytes)"
        case .dropResponse: "drop-response"
        case .holdResponse: "hold-response"
        }
    }

    /// The byte count after which the fault fires, if it waits for body bytes: of the request's
    /// body, or for a media download's reset or stall, of the answer's.
    package var triggerOffset: Int64? {
        switch self {
        case .respondAfter(_, let bytes), .resetAfter(let bytes), .stall(_, let bytes), .hold(let bytes): bytes
        case .pass, .respond, .resetConnection, .brokenStream, .dropResponse, .holdResponse: nil
        }
    }

    /// For a broken stream, how many bytes of the answer's body are sent before the connection closes.
    package var brokenStreamBytes: Int64? {
        guard case .brokenStream(let bytes) = self else { return nil }
        return bytes ?? Self.brokenStreamDefaultBytes
    }

    private static func parseStatus(_ text: String) -> Int? {
        guard text.count == 3, let status = Int(text), (100...599).contains(status) else { return nil }
        return status
    }

    /// `123`, `256K`, `8M` (1024-based).
    static func parseByteCount(_ text: String) -> Int64? {
        var digits = text
        var multiplier: Int64 = 1
        if digits.hasSuffix("k") {
            multiplier = 1024
            digits.removeLast()
        } else if digits.hasSuffix("m") {
            multiplier = 1024 * 1024
            digits.removeLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let value = Int64(digits),
            value <= Int64.max / multiplier
        else { return nil }
        return value * multiplier
    }
}

/// A fault plan that cannot be installed.
package struct FaultPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the plan was refused.
    package enum Kind: Sendable, Equatable {
        /// An instruction does not follow the grammar, or the plan is empty or malformed (HTTP 400).
        case invalid
        /// The plan lists more than ``FaultPlan/maxInstructions`` instructions (HTTP 413).
        case tooLarge
    }

    /// What is wrong, naming the offending instruction.
    package let message: String
    /// Why the plan was refused.
    package let kind: Kind

    package init(message: String, kind: Kind = .invalid) {
        self.message = message
        self.kind = kind
    }

    package var description: String { message }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    func trimmingCharactersInWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
