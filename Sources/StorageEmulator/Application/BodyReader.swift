import Foundation
import Synchronization

/// A fault fired while a request was being read: the application stops
/// processing and acts it out (answer with a status, or reset).
struct InjectedFault: Error {
    let instruction: FaultInstruction
}

/// Counts body bytes across all requests.
final class ByteCounter: Sendable {
    private let value = Atomic<Int64>(0)

    var total: Int64 { value.load(ordering: .relaxed) }

    func add(_ count: Int) {
        value.add(Int64(count), ordering: .relaxed)
    }
}

/// Reads a request's body for the handlers, counting bytes and acting out the
/// request's fault instruction at its trigger offset.
///
/// Handlers read bodies only through this, so every fault that waits for N
/// bytes fires at exactly N bytes (reads are cut short at the trigger), or at
/// the end of a shorter body, before the handler can process what it read. A retry test's
/// instruction (given with `unfired`) does not fire at the end of a shorter body: it goes back
/// to its test for the next request, as in Google's storage-testbench (see ``RetryTest``).
final class BodyReader {
    let request: any ServerRequest
    private(set) var instruction: FaultInstruction
    private(set) var bytesRead: Int64 = 0
    private var pendingTrigger: Int64?
    private let counter: ByteCounter
    private let unfired: (() -> Void)?

    /// - Parameter unfired: Called instead of firing when the body ends before the trigger
    ///   offset; nil fires the fault then.
    init(
        request: any ServerRequest, instruction: FaultInstruction, counter: ByteCounter,
        unfired: (() -> Void)? = nil
    ) {
        self.request = request
        self.instruction = instruction
        self.counter = counter
        self.unfired = unfired
        pendingTrigger = instruction.triggerOffset
    }

    /// Whether a fault that waits for body bytes has not fired yet.
    var faultPending: Bool { pendingTrigger != nil }

    /// Reads body bytes; 0 at the end of the body.
    ///
    /// - Throws: ``InjectedFault`` when the fault fires; the connection's errors.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var limit = buffer.count
        if let trigger = pendingTrigger {
            if bytesRead >= trigger {
                try fire()
                return try read(into: buffer)
            }
            limit = Int(min(Int64(limit), trigger - bytesRead))
        }
        let count = try request.readBody(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<limit]))
        if count == 0 {
            try endedBeforeTrigger()
            return 0
        }
        bytesRead += Int64(count)
        counter.add(count)
        return count
    }

    /// Fires the pending fault now (for requests that have no body to wait for).
    func fireNow() throws {
        guard let trigger = pendingTrigger else { return }
        if bytesRead >= trigger { try fire() } else { try endedBeforeTrigger() }
    }

    /// The body ended before the trigger offset: the fault fires, or goes back unused.
    private func endedBeforeTrigger() throws {
        guard pendingTrigger != nil else { return }
        guard let unfired else { return try fire() }
        pendingTrigger = nil
        unfired()
    }

    private func fire() throws {
        pendingTrigger = nil
        if case .stall(let milliseconds, _) = instruction {
            Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            return
        }
        throw InjectedFault(instruction: instruction)
    }

    /// Reads the rest of the body into memory.
    ///
    /// - Throws: ``HTTPError`` (413) past `limit` bytes; faults and connection errors.
    func readAll(limit: Int = 16 * 1024 * 1024) throws -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try read(into: $0) }
            if count == 0 { return data }
            data.append(contentsOf: chunk[0..<count])
            if data.count > limit { throw HTTPError(413, "The request body is too large.", reason: "uploadTooLarge") }
        }
    }

    /// Streams the rest of the body into `sink` in chunks; returns the byte count.
    func stream(into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        var total: Int64 = 0
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try read(into: $0) }
            if count == 0 { return total }
            try chunk.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            total += Int64(count)
        }
    }
}
