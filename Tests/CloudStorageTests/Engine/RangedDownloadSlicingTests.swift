import Foundation
import Testing

@testable import CloudStorage

/// The state machine's side of sliced downloads: how an object is cut, when the first answer
/// slices, and how a slice treats another generation (never a restart over other slices' bytes).
@Suite("Ranged download state machine: slices")
struct RangedDownloadSlicingTests {
    typealias Machine = RangedDownloadStateMachine
    typealias Tests = RangedDownloadStateMachineTests

    @Test(arguments: [
        (10, 4, "0-2 3-5 6-7 8-9"), (3, 4, "0-0 1-1 2-2"), (1, 8, "0-0"), (7, 1, "0-6"), (9, 3, "0-2 3-5 6-8"),
    ])
    func slicesAreEvenAndCoverEveryByte(size: Int64, count: Int, expected: String) {
        let plan = Machine.slices(of: size, count: count)
        #expect(plan.map { "\($0.start)-\($0.end!)" }.joined(separator: " ") == expected)
    }

    static func slicing(threshold: Int64 = 5, count: Int = 2) -> Machine.Setup {
        var setup = Machine.Setup(pinsResumptions: true)
        setup.slicing = Machine.Slicing(threshold: threshold, count: count)
        return setup
    }

    @Test func theFirstAnswerKeepsTheFirstSliceAndPlansTheOthers() {
        var machine = Machine(setup: Self.slicing())
        #expect(machine.next(.began) == Tests.read(0))
        #expect(machine.headArrived(Tests.whole()) == Tests.deliver(0, 5))
        #expect(machine.slicePlan == [ByteRange(start: 5, end: 9)])
        #expect(machine.pinnedObject == Machine.PinnedObject(generation: 7, size: 10, crc32c: Tests.objectCRC))
        // The whole object arrives: the first slice's five bytes are written, and the answer ends there.
        guard case .write(let delivery) = machine.bodyArrived(10) else {
            Issue.record("no write")
            return
        }
        #expect(delivery.count == 5 && delivery.completesRange && delivery.sliceStart == 0)
    }

    @Test(arguments: [
        ("below the threshold", Tests.whole(size: 4)),
        ("stored gzip", Tests.whole(encoding: "gzip")),
        ("transcoded", Tests.whole(stored: "gzip")),
        ("no generation", Tests.whole(generation: nil)),
    ])
    func answersThatAreNotSliced(_ label: String, head: MediaHead) {
        var machine = Machine(setup: Self.slicing())
        _ = machine.next(.began)
        _ = machine.headArrived(head)
        #expect(machine.slicePlan == nil, "\(label)")
    }

    /// A download that may be sliced once a probe of 100 bytes per second (and at most
    /// `maximumClientLoad` processors busy) measured its first connection.
    static func probing(maximumClientLoad: Double? = 0.75) throws -> Machine {
        var setup = slicing()
        setup.slicing?.probe = try StorageConfiguration.Downloads.SlicingProbe(
            duration: .zero, rate: 100, maximumClientLoad: maximumClientLoad)
        return Machine(setup: setup)
    }

    /// Reads 4 of the 10 bytes on the first connection, whose measure then begins.
    static func fourBytesRead(_ machine: inout Machine) {
        _ = machine.next(.began)
        #expect(machine.headArrived(Tests.whole()) == Tests.deliver(0, 10), "the whole object, not yet a slice")
        #expect(machine.probeStart == 0 && machine.slicePlan == nil)
        guard case .write(let delivery) = machine.bodyArrived(4) else {
            Issue.record("no write")
            return
        }
        machine.bodyWritten(delivery, crc: CRC32C())
    }

    @Test func aFirstConnectionAtTheProbesRateKeepsTheWholeDownload() throws {
        var machine = try Self.probing()
        Self.fourBytesRead(&machine)
        let sliced = machine.probed(.init(elapsed: .milliseconds(10), processorTime: .zero))
        #expect(!sliced, "400 bytes per second is enough")
        #expect(machine.slicePlan == nil && machine.probeStart == nil && machine.expectedLength == 10)
        let again = machine.probed(.init(elapsed: .seconds(10), processorTime: .zero))
        #expect(!again, "measured once")
        guard case .write(let rest) = machine.bodyArrived(6) else {
            Issue.record("no write")
            return
        }
        #expect(rest.count == 6 && !rest.completesRange)
    }

    @Test func belowTheProbesRateTheBytesStillToComeAreSliced() throws {
        var machine = try Self.probing()
        Self.fourBytesRead(&machine)
        let sliced = machine.probed(.init(elapsed: .seconds(1), processorTime: .zero))
        #expect(sliced, "4 bytes per second is not enough")
        // Six bytes to come in two slices: this connection keeps bytes 4-6, another reads 7-9.
        #expect(machine.slicePlan == [ByteRange(start: 7, end: 9)])
        #expect(machine.expectedLength == 7 && machine.isSlice)
        #expect(machine.pinnedObject == Machine.PinnedObject(generation: 7, size: 10, crc32c: Tests.objectCRC))
        guard case .write(let rest) = machine.bodyArrived(6) else {
            Issue.record("no write")
            return
        }
        #expect(rest.count == 3 && rest.completesRange, "the rest of this answer is not read")
    }

    /// Below the rate, but the process kept more than the probe's 0.75 processors busy: the
    /// client, not the connection, is the limit, and the download stays whole. Without a
    /// maximum load the rate alone decides.
    @Test(arguments: [Duration.milliseconds(700), .milliseconds(750), .milliseconds(751), .seconds(2)])
    func aBusyClientKeepsTheWholeDownload(processorTime: Duration) throws {
        let measure = Machine.ProbeMeasure(elapsed: .seconds(1), processorTime: processorTime)
        var machine = try Self.probing()
        Self.fourBytesRead(&machine)
        let sliced = machine.probed(measure)
        #expect(sliced == (processorTime <= .milliseconds(750)))
        #expect((machine.slicePlan != nil) == sliced && machine.probeStart == nil)
        var unbounded = try Self.probing(maximumClientLoad: nil)
        Self.fourBytesRead(&unbounded)
        let slicedByRate = unbounded.probed(measure)
        #expect(slicedByRate, "the rate alone decides")
    }

    @Test func aResumedAnswerMeasuresAgainFromWhereItResumes() throws {
        var machine = try Self.probing()
        Self.fourBytesRead(&machine)
        let backOff = machine.next(.retryableFailure(Tests.flaky))
        #expect(backOff == .backOff(after: Tests.flaky, newHigh: true))
        let resumed = machine.next(.done)
        #expect(resumed == Tests.read(4, pinned: 7))
        _ = machine.headArrived(Tests.part(4, 9))
        #expect(machine.probeStart == 4)
        let sliced = machine.probed(.init(elapsed: .seconds(1), processorTime: .zero))
        #expect(sliced)
        #expect(machine.slicePlan == [ByteRange(start: 7, end: 9)])
    }

    static func slice() -> Machine {
        var setup = Machine.Setup(range: ByteRange(start: 5, end: 9), pinsResumptions: true, isRewindable: false)
        setup.pinned = Machine.PinnedObject(generation: 7, size: 10, crc32c: Tests.objectCRC)
        return Machine(setup: setup)
    }

    @Test func aSliceAsksForThePinnedGenerationFromItsFirstRequestAndWritesAtItsStart() {
        var machine = Self.slice()
        #expect(machine.next(.began) == Tests.read(5, last: 9, pinned: 7))
        #expect(machine.headArrived(Tests.part(5, 9)) == Tests.deliver(0, 5))
        guard case .write(let delivery) = machine.bodyArrived(5) else {
            Issue.record("no write")
            return
        }
        #expect(delivery.offset == 0 && delivery.sliceStart == 5)
    }

    @Test func aSliceThatMeetsAnotherGenerationEndsAsObjectChanged() {
        var machine = Self.slice()
        _ = machine.next(.began)
        #expect(machine.headArrived(Tests.part(5, 9, generation: 8)) == .abort(Tests.changed))

        var refused = Self.slice()
        _ = refused.next(.began)
        guard case .fail(let error) = refused.next(.failed(Tests.refused)) else {
            Issue.record("a slice started over")
            return
        }
        #expect(error.code == .objectChanged)
    }
}
