import Foundation
import Testing

@testable import CloudStorage

@Suite("Ranged download state machine")
struct RangedDownloadStateMachineTests {
    typealias Machine = RangedDownloadStateMachine
    typealias Event = Machine.Event
    typealias Action = Machine.Action

    static let object = Array("0123456789".utf8)
    static let objectCRC: UInt32 = {
        var crc = CRC32C()
        object.withUnsafeBytes { crc.update($0) }
        return crc.value
    }()
    static let flaky = StorageError(.unknown, "The connection was lost.", httpStatus: 503)
    static let refused = StorageError(
        .preconditionFailed, "A precondition of the request did not hold.", httpStatus: 412)
    static let changed = StorageError(
        .objectChanged,
        "The object changed on the server during the download (another generation, size or CRC32C).")

    /// One input fed to the machine and what it must answer.
    enum Step: Sendable {
        /// A run's event, and the action it must return.
        case event(Event, Action)
        /// The verdict on an answer's head, and what to do with the answer.
        case head(MediaHead, Machine.HeadAction)
        /// The object's bytes `from..<to` arriving as one chunk of a body: `skip`, an abort, or a
        /// write of `count` bytes after `dropped` at `offset` (then reported written, as the
        /// engine does, with their CRC32C).
        case body(from: Int, to: Int, Expected)
    }

    enum Expected: Sendable {
        case write(dropped: Int, count: Int, at: Int64, completes: Bool = false, inflates: Bool = false)
        case skip
        case abort(StorageError)
    }

    struct Script: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var setup = Machine.Setup()
        var steps: [Step]
    }

    static func range(_ bounds: some RangeExpression<Int64>) -> ByteRange? {
        try? ByteRange(bounds)
    }

    static func read(_ offset: Int64, last: Int64? = nil, pinned: Int64? = nil) -> Action {
        .request(MediaRead(offset: offset, last: last, expectedGeneration: pinned))
    }

    /// The head of a `200` with the whole 10-byte object.
    static func whole(
        size: Int64? = 10, generation: Int64? = 7, crc32c: UInt32? = objectCRC, encoding: String? = nil,
        stored: String? = nil
    ) -> MediaHead {
        MediaHead(
            content: .whole, objectSize: size, generation: generation, crc32c: crc32c, md5: nil,
            contentEncoding: encoding, storedEncoding: stored ?? encoding)
    }

    /// The head of a `206` with bytes `first...last` of the 10-byte object.
    static func part(
        _ first: Int64, _ last: Int64, generation: Int64? = 7, crc32c: UInt32? = objectCRC, encoding: String? = nil
    ) -> MediaHead {
        MediaHead(
            content: .part(first: first, last: last), objectSize: 10, generation: generation, crc32c: crc32c,
            md5: nil, contentEncoding: encoding, storedEncoding: encoding)
    }

    static func deliver(
        _ received: Int64, _ expected: Int64?, discarding: Bool = false, coding: Machine.BodyCoding = .stored
    ) -> Machine.HeadAction {
        .deliver(received: received, expected: expected, discardingWritten: discarding, coding: coding)
    }

    static func fail(_ code: StorageErrorCode, _ message: String, status: Int? = nil) -> Action {
        .fail(StorageError(code, message, httpStatus: status))
    }

    static let mismatch: String =
        "The downloaded bytes' CRC32C (" + CRC32CEncoding.base64(objectCRC) + ") differs from the server's (AQIDBA==)."

    /// Four bytes arrive, then the connection breaks: the retry asks for the rest of generation 7.
    static let brokenAfterFour: [Step] = [
        .event(.began, read(0)),
        .head(whole(), deliver(0, 10)),
        .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0)),
        .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: true)),
    ]

    /// Four bytes arrive and the connection breaks, then `rest`.
    static func resumed(_ rest: [Step]) -> [Step] { brokenAfterFour + rest }

    /// Each resumption finds that another generation replaced the one pinned, four times.
    static func keepsChanging() -> [Step] {
        var steps: [Step] = []
        for restart in 0..<4 {
            let generation = 7 + Int64(restart)
            steps += [
                .event(restart == 0 ? .began : .failed(refused), read(0)),
                .head(whole(generation: generation), deliver(0, 10, discarding: restart > 0)),
                .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: restart == 0)),
                .event(.done, read(4, pinned: generation)),
            ]
        }
        let end = fail(.objectChanged, "The object kept changing on the server during the download.", status: 412)
        return steps + [.event(.failed(refused), end)]
    }

    static let answers: [Script] = [
        Script(
            testDescription: "the whole object in one answer is verified against its CRC32C",
            steps: [
                .event(.began, read(0)),
                .head(whole(), deliver(0, 10)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "bytes whose CRC32C differs from the server's fail",
            steps: [
                .event(.began, read(0)),
                .head(whole(crc32c: 0x0102_0304), deliver(0, 10)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(
                    .answered,
                    fail(.nonMatchingChecksum, mismatch)),
            ]),
        Script(
            testDescription: "an answer that ends short of the size it stated fails",
            steps: [
                .event(.began, read(0)),
                .head(whole(), deliver(0, 10)),
                .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0)),
                .event(.answered, fail(.nonMatchingChecksum, "The server sent 4 of the 10 bytes expected.")),
            ]),
        Script(
            testDescription: "a resumption asks for the rest of the generation the first answer came from",
            setup: Machine.Setup(pinsResumptions: true),
            steps: resumed([
                .event(.done, read(4, pinned: 7)),
                .head(part(4, 9), deliver(4, 10)),
                .body(from: 4, to: 10, .write(dropped: 0, count: 6, at: 4)),
                .event(.answered, .finish(10)),
            ])),
        Script(
            testDescription: "a failure that regains no new ground is no progress",
            steps: resumed([
                .event(.done, read(4)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: false)),
                .event(.done, read(4)),
            ])),
        Script(
            testDescription: "the pinned generation refused: a file starts over, discarding what it wrote",
            setup: Machine.Setup(pinsResumptions: true),
            steps: resumed([
                .event(.done, read(4, pinned: 7)),
                .event(.failed(refused), read(0)),
                .head(whole(generation: 8), deliver(0, 10, discarding: true)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.answered, .finish(10)),
            ])),
        Script(
            testDescription: "the pinned generation refused: a stream cannot take its bytes back",
            setup: Machine.Setup(pinsResumptions: true, isRewindable: false),
            steps: resumed([
                .event(.done, read(4, pinned: 7)),
                .event(
                    .failed(refused),
                    fail(
                        .objectChanged,
                        "The object changed on the server during the download (another generation).",
                        status: 412)),
            ])),
    ]

    static let resumptions: [Script] = [
        Script(
            testDescription: "an object that keeps changing ends the download after three restarts",
            setup: Machine.Setup(pinsResumptions: true),
            steps: keepsChanging()),
        Script(
            testDescription: "without a pin, an answer of another generation starts a file over",
            steps: resumed([
                .event(.done, read(4)),
                .head(part(4, 9, generation: 8), .startOver(changed)),
                .event(.failed(changed), read(0)),
                .head(whole(generation: 8), deliver(0, 10)),
            ])),
        Script(
            testDescription: "an answer of another size or checksum is another object too",
            steps: resumed([
                .event(.done, read(4)),
                .head(part(4, 9, generation: nil, crc32c: 1), .startOver(changed)),
            ])),
        Script(
            testDescription: "without a pin, an answer of another generation ends a stream",
            setup: Machine.Setup(isRewindable: false),
            steps: resumed([
                .event(.done, read(4)),
                .head(part(4, 9, generation: 8), .abort(changed)),
                .event(.failed(changed), .fail(changed)),
            ])),
        Script(
            testDescription: "a whole object answering a resumption is skipped to the byte wanted",
            steps: resumed([
                .event(.done, read(4)),
                .head(whole(), deliver(4, 10)),
                .body(from: 0, to: 3, .skip),
                .body(from: 3, to: 10, .write(dropped: 1, count: 6, at: 4)),
                .event(.answered, .finish(10)),
            ])),
        Script(
            testDescription:
                "a whole object answering a range: its part is kept, the rest not read, and that is the answer",
            setup: Machine.Setup(range: range(2...5)),
            steps: [
                .event(.began, read(2, last: 5)),
                .head(whole(crc32c: 1), deliver(0, 4)),
                .body(from: 0, to: 10, .write(dropped: 2, count: 4, at: 0, completes: true)),
                // A range is not checked against the whole object's CRC32C.
                .event(.answered, .finish(4)),
            ]),
        Script(
            testDescription: "a range that starts past the end of the object is refused",
            setup: Machine.Setup(range: range(20...)),
            steps: [
                .event(.began, read(20)),
                .head(
                    whole(),
                    .abort(.invalidArgument("The range starts at byte 20, past the end of the 10-byte object."))),
            ]),
    ]

    static let limits: [Script] = [
        Script(
            testDescription: "an object larger than the download allows is refused at its head",
            setup: Machine.Setup(maxSize: 5),
            steps: [
                .event(.began, read(0)),
                .head(
                    whole(),
                    .abort(
                        StorageError(
                            .downloadSizeExceeded,
                            "The object (at least 10 bytes) is larger than the 5 bytes the download allows."))),
            ]),
        Script(
            testDescription: "transcoded bytes: no size to trust, a size limit met by the bytes, no checksum",
            setup: Machine.Setup(maxSize: 6),
            steps: [
                .event(.began, read(0)),
                .head(whole(crc32c: 1, stored: "gzip"), deliver(0, nil, coding: .transcoded)),
                .body(from: 0, to: 6, .write(dropped: 0, count: 6, at: 0)),
                .body(
                    from: 6, to: 10,
                    .abort(
                        StorageError(
                            .downloadSizeExceeded,
                            "The object (at least 10 bytes) is larger than the 6 bytes the download allows."))),
            ]),
        Script(
            testDescription: "transcoded bytes are not held to the stored object's checksum",
            steps: [
                .event(.began, read(0)),
                .head(whole(crc32c: 1, stored: "gzip"), deliver(0, nil, coding: .transcoded)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "a transport that decodes gzip makes stored gzip bytes transcoded ones",
            setup: Machine.Setup(transportDecodes: true),
            steps: [
                .event(.began, read(0)),
                .head(whole(crc32c: 1, encoding: "gzip"), deliver(0, nil, coding: .transcoded)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "stored gzip bytes are inflated, held to the checksum, and resumed with a Range",
            setup: Machine.Setup(maxSize: 4),
            steps: [
                .event(.began, read(0)),
                // maxSize holds the inflated bytes (the engine's), not the 10 stored ones.
                .head(whole(encoding: "gzip"), deliver(0, 10, coding: .inflated)),
                .body(from: 0, to: 6, .write(dropped: 0, count: 6, at: 0, inflates: true)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: true)),
                .event(.done, read(6)),
                .head(part(6, 9, encoding: "gzip"), deliver(6, 10, coding: .inflated)),
                .body(from: 6, to: 10, .write(dropped: 0, count: 4, at: 6, inflates: true)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "stored gzip bytes with a wrong checksum fail",
            steps: [
                .event(.began, read(0)),
                .head(whole(crc32c: 1, encoding: "gzip"), deliver(0, 10, coding: .inflated)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0, inflates: true)),
                .event(
                    .answered,
                    fail(
                        .nonMatchingChecksum,
                        "The downloaded bytes' CRC32C (\(CRC32CEncoding.base64(objectCRC))) differs from the server's (AAAAAQ==)."
                    )
                ),
            ]),
        Script(
            testDescription: "the raw setting delivers stored gzip bytes as they are",
            setup: Machine.Setup(decodesGzip: false),
            steps: [
                .event(.began, read(0)),
                .head(whole(encoding: "gzip"), deliver(0, 10, coding: .stored)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "the raw setting refuses bytes a server decompressed",
            setup: Machine.Setup(decodesGzip: false),
            steps: [
                .event(.began, read(0)),
                .head(
                    whole(stored: "gzip"),
                    .abort(
                        .protocolViolation(
                            "The server (or the transport) decompressed the gzip-stored object, whose stored bytes were asked for."
                        ))),
            ]),
        Script(
            testDescription: "a broken transcoded answer is asked for again whole, and what arrived skipped",
            steps: [
                .event(.began, read(0)),
                .head(whole(stored: "gzip"), deliver(0, nil, coding: .transcoded)),
                .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: true)),
                .event(.done, .request(MediaRead(offset: 4, wholeObject: true))),
                .head(whole(stored: "gzip"), deliver(4, nil, coding: .transcoded)),
                .body(from: 0, to: 3, .skip),
                .body(from: 3, to: 10, .write(dropped: 1, count: 6, at: 4)),
                .event(.answered, .finish(10)),
            ]),
        Script(
            testDescription: "an answer whose coding differs from the first one's means the object changed",
            steps: [
                .event(.began, read(0)),
                .head(whole(encoding: "gzip"), deliver(0, 10, coding: .inflated)),
                .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0, inflates: true)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: true)),
                .event(.done, read(4)),
                .head(whole(stored: "gzip"), .startOver(changed)),
            ]),
        Script(
            testDescription: "a run after a pause that came once every byte arrived asks for nothing",
            steps: [
                .event(.began, read(0)),
                .head(whole(), deliver(0, 10)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.failed(.cancelled()), .fail(.cancelled())),
                .event(.began, .finish(10)),
            ]),
        Script(
            testDescription: "every byte arrived before the connection broke: no request after the back-off",
            steps: [
                .event(.began, read(0)),
                .head(whole(), deliver(0, 10)),
                .body(from: 0, to: 10, .write(dropped: 0, count: 10, at: 0)),
                .event(.retryableFailure(flaky), .backOff(after: flaky, newHigh: true)),
                // A range from the end would be refused (416).
                .event(.done, .finish(10)),
            ]),
        Script(
            testDescription: "a paused download resumes from its bytes in the next run",
            setup: Machine.Setup(pinsResumptions: true),
            steps: [
                .event(.began, read(0)),
                .head(whole(), deliver(0, 10)),
                .body(from: 0, to: 4, .write(dropped: 0, count: 4, at: 0)),
                .event(.failed(.cancelled()), .fail(.cancelled())),
                .event(.began, read(4, pinned: 7)),
            ]),
        Script(
            testDescription: "an event the machine did not ask for is an internal error",
            steps: [
                .event(.began, read(0)),
                .event(
                    .done, fail(.internalError, "The download's state machine received an event it did not ask for.")),
            ]),
    ]

    @Test(arguments: answers + resumptions + limits)
    func script(_ script: Script) {
        var machine = Machine(setup: script.setup)
        for (index, step) in script.steps.enumerated() {
            switch step {
            case .event(let event, let expected):
                let action = machine.next(event)
                #expect(action == expected, "step \(index)")
            case .head(let head, let expected):
                let action = machine.headArrived(head)
                #expect(action == expected, "step \(index)")
            case .body(let from, let to, let expected):
                let action = machine.bodyArrived(to - from)
                Self.check(action, expected, step: index, bytes: Self.object[from..<to], &machine)
            }
        }
    }

    /// Compares a body action with what the script expects and, for a write, reports it
    /// written with its bytes' CRC32C, as the engine's sink does.
    static func check(
        _ action: Machine.BodyAction, _ expected: Expected, step: Int, bytes: ArraySlice<UInt8>,
        _ machine: inout Machine
    ) {
        switch (action, expected) {
        case (.write(let delivery), .write(let dropped, let count, let offset, let completes, let inflates)):
            #expect(delivery.inflates == inflates, "step \(step)")
            #expect(delivery.dropped == dropped && delivery.count == count, "step \(step)")
            #expect(delivery.offset == offset && delivery.completesRange == completes, "step \(step)")
            var crc = delivery.crc
            bytes.dropFirst(dropped).prefix(count).withUnsafeBytes { crc.update($0) }
            machine.bodyWritten(delivery, crc: crc)
        case (.skip, .skip):
            break
        case (.abort(let error), .abort(let wanted)):
            #expect(error.code == wanted.code && error.message == wanted.message, "step \(step)")
        default:
            Issue.record("step \(step): \(action), expected \(expected)")
        }
    }

    /// A transcoded download's verdict says who decoded the bytes, not that only part was read.
    @Test(arguments: [
        (Machine.Setup(), whole(crc32c: 1, stored: "gzip"), "the server decompressed the object on the way out"),
        (Machine.Setup(transportDecodes: true), whole(crc32c: 1, encoding: "gzip"), "the transport decompressed"),
    ])
    func aTranscodedDownloadSaysWhyItsChecksumIsNotCompared(setup: Machine.Setup, head: MediaHead, says: String) {
        var machine = Machine(setup: setup)
        _ = machine.next(.began)
        #expect(machine.headArrived(head) == Self.deliver(0, nil, coding: .transcoded))
        Self.check(
            machine.bodyArrived(10), .write(dropped: 0, count: 10, at: 0), step: 0, bytes: Self.object[...], &machine)
        #expect(machine.next(.answered) == .finish(10))
        guard case .notCheckable(let reason) = machine.checksumVerdict else {
            Issue.record("verdict \(String(describing: machine.checksumVerdict))")
            return
        }
        #expect(reason.hasPrefix(says), "\(reason)")
    }

    /// A range addresses the stored bytes: decoded ones are refused, not taken for the range's.
    @Test func aRangeAnsweredWithDecodedBytesIsAProtocolViolation() {
        var machine = Machine(setup: Machine.Setup(range: Self.range(0...3)))
        #expect(machine.next(.began) == Self.read(0, last: 3))
        guard case .abort(let error) = machine.headArrived(Self.whole(crc32c: 1, stored: "gzip")) else {
            Issue.record("the decoded answer was not refused")
            return
        }
        #expect(error.code == .protocolViolation)
    }

    /// Bytes compressed on the way out are checked once inflated, against the stored bytes' CRC32C.
    @Test func bytesCompressedInTransitAreCheckedOnceInflated() throws {
        var machine = Machine(setup: Machine.Setup())
        _ = machine.next(.began)
        let head = MediaHead(
            content: .whole, objectSize: 4, generation: 7, crc32c: Self.objectCRC, md5: nil, contentEncoding: "gzip",
            storedEncoding: nil)
        #expect(machine.headArrived(head) == Self.deliver(0, nil, coding: .compressedInTransit))
        Self.check(
            machine.bodyArrived(4), .write(dropped: 0, count: 4, at: 0, inflates: true), step: 0,
            bytes: Self.object[0..<4], &machine)
        #expect(machine.next(.answered) == .finish(4))
        #expect(machine.checksumVerdict == nil, "decided once inflated")
        var wrong = machine
        #expect(throws: StorageError.self) { try wrong.checkInflated(crc: Self.objectCRC ^ 1) }
        try machine.checkInflated(crc: Self.objectCRC)
        #expect(machine.checksumVerdict == .matched)
    }

    @Test func theLengthExpectedFollowsTheRangeInsideTheObject() {
        var machine = Machine(setup: Machine.Setup(range: Self.range(6...20)))
        #expect(machine.expectedLength == 15, "before the size is known: the range's own length")
        _ = machine.next(.began)
        _ = machine.headArrived(Self.part(6, 9))
        #expect(machine.expectedLength == 4, "a range running past the end stops at the last byte")
    }
}
