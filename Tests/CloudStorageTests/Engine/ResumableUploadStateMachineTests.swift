import Foundation
import Testing

@testable import CloudStorage

@Suite("Resumable upload state machine")
struct ResumableUploadStateMachineTests {
    typealias Machine = ResumableUploadStateMachine
    typealias Event = Machine.Event
    typealias Action = Machine.Action

    static let url = URL(string: "http://127.0.0.1:9/upload/storage/v1/b/b/o?upload_id=1")!
    static let mib: Int64 = 1 << 20
    static let unit = StorageConfiguration.Uploads.chunkGranularity
    static let crc: UInt32 = 0xC0FF_EE00
    static let flaky = StorageError(.unknown, "The connection was lost.", httpStatus: 503)

    /// One event fed to the machine and the action it must answer with.
    struct Step: Sendable {
        var event: Event
        var action: Action
    }

    /// A run: the plan, the session earlier runs left, and every step in order.
    struct Script: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var plan: Machine.Plan
        var session = Machine.Session()
        var steps: [Step]
        /// The session the machine publishes after the last step, when it matters.
        var finalSession: Machine.Session?
    }

    static func stored(_ size: Int64) -> StorageMetadata {
        var metadata = StorageMetadata()
        metadata.size = size
        metadata.generation = 7
        return metadata
    }

    static func answer(_ state: UploadSessionState, status: Int = 308) -> Event {
        .answered(.init(state: state, httpStatus: status, serverMessage: nil))
    }

    static func active(_ committed: Int64) -> Event { answer(.active(committedBytes: committed)) }

    static func chunk(_ offset: Int64, _ end: Int64, final: Bool = false, crc32c: UInt32? = nil) -> Action {
        .send(.init(session: url, offset: offset, length: end - offset, finalizes: final, crc32c: crc32c))
    }

    static func prepare(_ offset: Int64, _ end: Int64) -> Action { .prepareSource(offset: offset, through: end + 1) }

    static func failure(_ code: StorageErrorCode, _ message: String, status: Int? = 308) -> Action {
        .fail(StorageError(code, message, httpStatus: status))
    }

    /// A file of `size` bytes, sent whole unless `chunk` bounds each request.
    static func file(_ size: Int64, chunk: Int64? = nil, checksum: Bool = false) -> Machine.Plan {
        .init(chunkSize: chunk, size: size, finalCarriesChecksum: checksum, checksumMayLag: true)
    }

    /// The steps that open a session and prepare its first chunk, ending at `end`.
    static func opening(_ end: Int64) -> [Step] {
        [Step(event: .began, action: .startSession), Step(event: .sessionStarted(url), action: prepare(0, end))]
    }

    static let paused = Machine.Session(url: url, committedBytes: 1 * mib, sentBytes: 2 * mib)

    static let scripts: [Script] = [
        Script(
            testDescription: "a file goes in one finalizing request with its checksum",
            plan: file(4 * mib, checksum: true),
            steps: opening(4 * mib) + [
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: .readChecksum(wait: false)),
                Step(event: .checksumRead(crc), action: chunk(0, 4 * mib, final: true, crc32c: crc)),
                Step(event: answer(.complete(stored(4 * mib)), status: 200), action: .finish(stored(4 * mib))),
            ],
            finalSession: Machine.Session(url: nil, committedBytes: 0, sentBytes: 4 * mib)),
        Script(
            testDescription: "a checksum still being computed holds back only an unaligned tail",
            plan: file(4 * mib + 100, checksum: true),
            steps: opening(4 * mib + 100) + [
                Step(event: .sourceReady(end: 4 * mib + 100, finished: true), action: .readChecksum(wait: false)),
                Step(event: .checksumRead(nil), action: chunk(0, 4 * mib)),
                Step(event: active(4 * mib), action: .report(committed: 4 * mib, newHigh: true)),
                Step(event: .done, action: prepare(4 * mib, 4 * mib + 100)),
                Step(event: .sourceReady(end: 4 * mib + 100, finished: true), action: .readChecksum(wait: true)),
                Step(event: .checksumRead(crc), action: chunk(4 * mib, 4 * mib + 100, final: true, crc32c: crc)),
            ]),
        Script(
            testDescription: "chunks follow the committed offsets up to the finalizing one",
            plan: file(2 * mib + 5, chunk: mib),
            steps: opening(mib) + [
                Step(event: .sourceReady(end: 2 * mib + 5, finished: true), action: chunk(0, mib)),
                Step(event: active(mib - unit), action: .report(committed: mib - unit, newHigh: true)),
                // Only what the server kept is sent again, from its offset.
                Step(event: .done, action: prepare(mib - unit, 2 * mib - unit)),
                Step(event: .sourceReady(end: 2 * mib + 5, finished: true), action: chunk(mib - unit, 2 * mib - unit)),
                Step(event: active(2 * mib - unit), action: .report(committed: 2 * mib - unit, newHigh: true)),
                Step(event: .done, action: prepare(2 * mib - unit, 2 * mib + 5)),
                Step(
                    event: .sourceReady(end: 2 * mib + 5, finished: true),
                    action: chunk(2 * mib - unit, 2 * mib + 5, final: true)),
                Step(event: answer(.completeWithoutMetadata, status: 200), action: .readStoredObject),
                Step(event: .storedObjectRead(stored(2 * mib + 5)), action: .finish(stored(2 * mib + 5))),
            ]),
        Script(
            testDescription: "a session from an earlier run is asked first, and a new high is progress",
            plan: file(4 * mib),
            session: paused,
            steps: [
                Step(event: .began, action: .query(url)),
                Step(event: active(2 * mib), action: .report(committed: 2 * mib, newHigh: true)),
                Step(event: .done, action: prepare(2 * mib, 4 * mib)),
            ]),
        Script(
            testDescription: "a failed request backs off, then asks the session what it kept",
            plan: file(4 * mib),
            steps: opening(4 * mib) + [
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, 4 * mib, final: true)),
                Step(event: .retryableFailure(flaky), action: .backOff(after: flaky)),
                Step(event: .done, action: .query(url)),
                Step(event: .retryableFailure(flaky), action: .backOff(after: flaky)),
                Step(event: .done, action: .query(url)),
                Step(event: active(mib), action: .report(committed: mib, newHigh: true)),
                Step(event: .done, action: prepare(mib, 4 * mib)),
            ]),
        Script(
            testDescription: "a failed start backs off and starts again",
            plan: file(4 * mib),
            steps: [
                Step(event: .began, action: .startSession),
                Step(event: .retryableFailure(flaky), action: .backOff(after: flaky)),
                Step(event: .done, action: .startSession),
            ]),
        Script(
            testDescription: "bytes sent and none kept count as a failure, then go again without a query",
            plan: file(4 * mib, chunk: mib),
            steps: opening(mib) + [
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, mib)),
                Step(event: active(0), action: .report(committed: 0, newHigh: false)),
                Step(
                    event: .done,
                    action: .backOff(
                        after: StorageError(.unknown, "The server committed none of the bytes sent.", httpStatus: 308))),
                Step(event: .done, action: prepare(0, mib)),
            ]),
        Script(
            testDescription: "a committed offset that goes back is a protocol violation",
            plan: file(4 * mib),
            session: paused,
            steps: [
                Step(event: .began, action: .query(url)),
                Step(
                    event: active(0),
                    action: failure(
                        .protocolViolation, "The server's committed offset went back from 1048576 to 0 bytes.")),
            ]),
        Script(
            testDescription: "a committed offset beyond the bytes sent is a protocol violation",
            plan: file(4 * mib, chunk: mib),
            steps: opening(mib) + [
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, mib)),
                Step(
                    event: active(3 * mib),
                    action: failure(
                        .protocolViolation,
                        "The server claims to have committed 3145728 bytes, but only 1048576 were sent."
                    )),
            ]),
        Script(
            testDescription: "an unreadable success marks the session as maybe final and asks it",
            plan: file(4 * mib),
            steps: opening(4 * mib) + [
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, 4 * mib, final: true)),
                Step(event: answer(.completeUnreadable(flaky), status: 200), action: .backOff(after: flaky)),
                Step(event: .done, action: .query(url)),
                Step(event: answer(.completeUnreadable(flaky), status: 200), action: .readStoredObject),
            ],
            finalSession: Machine.Session(url: url, committedBytes: 0, sentBytes: 4 * mib, mayBeFinalized: true)),
        Script(
            testDescription: "a lost session is replaced after the source is rewound",
            plan: file(4 * mib),
            session: paused,
            steps: [
                Step(event: .began, action: .query(url)),
                Step(event: answer(.gone, status: 404), action: .rewindSource),
                Step(event: .done, action: .report(committed: 0, newHigh: false)),
                Step(event: .done, action: .startSession),
                Step(event: .sessionStarted(url), action: prepare(0, 4 * mib)),
                Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, 4 * mib, final: true)),
                // Regaining the ground the lost session had is not progress.
                Step(event: active(mib), action: .report(committed: mib, newHigh: false)),
            ]),
        Script(
            testDescription: "an adopted session that is lost ends the upload",
            plan: file(4 * mib),
            session: .adopted(url, size: 4 * mib),
            steps: [
                Step(event: .began, action: .query(url)),
                Step(
                    event: answer(.gone, status: 404),
                    action: failure(
                        .uploadSessionExpired,
                        "The server no longer knows the upload session being resumed (it expired or was cancelled); upload the file again.",
                        status: 404)),
            ],
            finalSession: Machine.Session(url: nil, sentBytes: 4 * mib, isAdopted: true)),
        Script(
            testDescription: "an object finalized too early is deleted and uploaded again in a new session",
            plan: file(4 * mib),
            session: paused,
            steps: [
                Step(event: .began, action: .query(url)),
                Step(event: answer(.complete(stored(mib)), status: 200), action: .deleteObject(stored(mib))),
                Step(event: .done, action: .rewindSource),
                Step(event: .done, action: .report(committed: 0, newHigh: false)),
                Step(event: .done, action: .startSession),
            ]),
        Script(
            testDescription: "an adopted session finalized too early ends the upload once the object is deleted",
            plan: file(4 * mib),
            session: .adopted(url, size: 4 * mib),
            steps: [
                Step(event: .began, action: .query(url)),
                Step(event: answer(.complete(stored(mib)), status: 200), action: .deleteObject(stored(mib))),
                Step(event: .done, action: .rewindSource),
                Step(
                    event: .done,
                    action: failure(
                        .uploadSessionExpired,
                        "The server finalized an incomplete object of the upload session being resumed; upload the file again.",
                        status: 200)),
            ]),
        Script(
            testDescription: "a session lost more often than the restart budget allows ends the upload",
            plan: file(4 * mib),
            session: paused,
            steps: [Step(event: .began, action: .query(url))]
                + (1...Machine.maxSessionRestarts).flatMap { _ in
                    [
                        Step(event: answer(.gone, status: 410), action: .rewindSource),
                        Step(event: .done, action: .report(committed: 0, newHigh: false)),
                        Step(event: .done, action: .startSession),
                        Step(event: .sessionStarted(url), action: prepare(0, 4 * mib)),
                        Step(event: .sourceReady(end: 4 * mib, finished: true), action: chunk(0, 4 * mib, final: true)),
                    ]
                } + [
                    Step(event: answer(.gone, status: 410), action: .rewindSource),
                    Step(
                        event: .done,
                        action: failure(
                            .internalError, "The server lost the upload session 4 times; giving up.", status: 410)),
                ]),
        Script(
            testDescription: "a stream of unknown size finalizes with the size its end tells",
            plan: .init(chunkSize: mib, size: nil, finalCarriesChecksum: true, checksumMayLag: false),
            steps: [
                Step(event: .began, action: .startSession),
                Step(event: .sessionStarted(url), action: prepare(0, mib)),
                Step(event: .sourceReady(end: mib + 7, finished: true), action: chunk(0, mib)),
                Step(event: active(mib), action: .report(committed: mib, newHigh: true)),
                Step(event: .done, action: prepare(mib, mib + 7)),
                // A stream's checksum is known only at its end: waited for, never sent without.
                Step(event: .sourceReady(end: mib + 7, finished: true), action: .readChecksum(wait: true)),
                Step(event: .checksumRead(crc), action: chunk(mib, mib + 7, final: true, crc32c: crc)),
            ]),
        Script(
            testDescription: "a stream that ends before its declared size fails instead of sending less",
            plan: .init(chunkSize: mib, size: 2 * mib, finalCarriesChecksum: false, checksumMayLag: false),
            steps: opening(mib) + [
                Step(
                    event: .sourceReady(end: mib - 1, finished: true),
                    action: failure(
                        .internalError, "The stream ended at 1048575 bytes, before the 1048576 to send.", status: nil))
            ]),
        Script(
            testDescription: "an offset near Int64.max plans a chunk without trapping",
            plan: .init(chunkSize: mib, size: nil),
            session: .init(url: url, committedBytes: .max - 1, sentBytes: .max),
            steps: [
                Step(event: .began, action: .query(url)),
                Step(event: active(.max - 1), action: .report(committed: .max - 1, newHigh: false)),
                Step(event: .done, action: .prepareSource(offset: .max - 1, through: .max)),
            ]),
        Script(
            testDescription: "an event the machine did not ask for ends the run, and so does any after the end",
            plan: file(4 * mib),
            steps: [
                Step(
                    event: .done,
                    action: failure(
                        .internalError, "The upload's state machine received an event it did not ask for.", status: nil)
                ),
                Step(
                    event: .began,
                    action: failure(
                        .internalError, "The upload's state machine received an event it did not ask for.", status: nil)
                ),
            ]),
    ]

    @Test(arguments: scripts)
    func script(_ script: Script) {
        var machine = Machine(plan: script.plan, session: script.session)
        for (index, step) in script.steps.enumerated() {
            let action = machine.next(step.event)
            #expect(action == step.action, "step \(index + 1): \(step.event)")
        }
        if let expected = script.finalSession {
            #expect(machine.session == expected)
        }
    }

    @Test func aReadableAnswerClearsTheMaybeFinalizedMark() {
        var machine = Machine(
            plan: Self.file(4 * Self.mib),
            session: .init(url: Self.url, committedBytes: Self.mib, sentBytes: 4 * Self.mib, mayBeFinalized: true))
        #expect(machine.next(.began) == .query(Self.url))
        #expect(machine.next(Self.active(2 * Self.mib)) == .report(committed: 2 * Self.mib, newHigh: true))
        #expect(!machine.session.mayBeFinalized)
        #expect(machine.session.committedBytes == 2 * Self.mib)
    }

    @Test func theSentBytesRecordTheFurthestRequestAndResetWithTheSession() {
        let session = Machine.Session(url: Self.url, committedBytes: Self.mib, sentBytes: 3 * Self.mib)
        var machine = Machine(plan: Self.file(4 * Self.mib, chunk: Self.mib), session: session)
        #expect(machine.next(.began) == .query(Self.url))
        #expect(machine.next(Self.active(Self.mib)) == .report(committed: Self.mib, newHigh: false))
        #expect(machine.next(.done) == Self.prepare(Self.mib, 2 * Self.mib))
        #expect(machine.next(.sourceReady(end: 4 * Self.mib, finished: true)) == Self.chunk(Self.mib, 2 * Self.mib))
        // Sending again below the furthest request does not lower what the server may hold.
        #expect(machine.session.sentBytes == 3 * Self.mib)
        #expect(machine.next(Self.answer(.gone, status: 404)) == .rewindSource)
        #expect(machine.next(.done) == .report(committed: 0, newHigh: false))
        #expect(machine.session == Machine.Session())
    }

    @Test func lastAlignedOffsetLeavesATailUpToOneUnit() {
        let unit = Self.unit
        #expect(Machine.lastAlignedOffset(after: 0, before: unit) == nil)
        #expect(Machine.lastAlignedOffset(after: 0, before: unit + 1) == unit)
        #expect(Machine.lastAlignedOffset(after: 5, before: 2 * unit + 5) == unit + 5)
        #expect(Machine.lastAlignedOffset(after: 0, before: 3 * unit + 7) == 3 * unit)
    }
}
