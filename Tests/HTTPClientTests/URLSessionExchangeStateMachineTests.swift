import Foundation
import HTTP1
import Testing

@testable import HTTPClient

/// How a URLSession exchange ends when the task never reports itself complete:
/// swift-corelibs-foundation sometimes does not after `cancel()`, so a
/// deadline, a cancellation or an abort must end the exchange by itself, once,
/// and a completion that comes late must change nothing.
@Suite("URLSession exchange state machine")
struct URLSessionExchangeStateMachineTests {
    typealias Machine = URLSessionExchangeStateMachine

    static func machine(method: String = "GET", limit: Int = 1024) -> Machine {
        Machine(maxBodyBytes: limit, server: "127.0.0.1:9", method: method)
    }

    static func kind(_ outcome: Result<HTTPResponse, any Error>?) -> HTTPTransportError.Kind? {
        guard case .failure(let error)? = outcome else { return nil }
        return (error as? HTTPTransportError)?.kind
    }

    static func response(_ outcome: Result<HTTPResponse, any Error>?) -> HTTPResponse? {
        guard case .success(let response)? = outcome else { return nil }
        return response
    }

    @Test func aDeadlineAfterAWhole204EndsWithItAndTheLateCompletionChangesNothing() {
        var machine = Self.machine(method: "DELETE")
        let accepted = machine.receiveHead(status: 204, headers: [:], streaming: false, refusal: nil)
        #expect(accepted)
        let outcome = machine.end(.deadlinePassed)
        #expect(Self.response(outcome)?.status == 204)
        let late = machine.end(.taskCompleted(nil))
        #expect(late == nil)
        let lateFailure = machine.end(.taskCompleted(URLError(.cancelled)))
        #expect(lateFailure == nil)
        let lateCancel = machine.end(.cancelled)
        #expect(lateCancel == nil)
    }

    @Test func aDeadlineAfterABodyWholeToItsLengthEndsWithTheResponse() {
        var machine = Self.machine()
        let accepted = machine.receiveHead(
            status: 200, headers: ["Content-Length": "5"], streaming: false, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("hel".utf8))
        #expect(taken == (false, false))
        let taken2 = machine.receive(Data("lo".utf8))
        #expect(taken2 == (false, false))
        let response = Self.response(machine.end(.deadlinePassed))
        #expect(response?.status == 200)
        #expect(response?.body == Data("hello".utf8))
    }

    @Test func aDeadlineBeforeTheBodyIsWholeTimesOutAtOnceAndLaterBytesAreRefused() {
        var machine = Self.machine()
        let accepted = machine.receiveHead(
            status: 200, headers: ["Content-Length": "5"], streaming: false, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("hel".utf8))
        #expect(taken == (false, false))
        let outcome = machine.end(.deadlinePassed)
        #expect(Self.kind(outcome) == .timedOut)
        // What the task still delivers is refused, and its completion ignored.
        let taken2 = machine.receive(Data("lo".utf8))
        #expect(taken2 == (false, true))
        let outcome2 = machine.end(.taskCompleted(nil))
        #expect(outcome2 == nil)
    }

    @Test(arguments: [
        ["Transfer-Encoding": "chunked"] as HTTPHeaders,
        ["Content-Length": "2", "Content-Encoding": "gzip"],
        [:],
    ])
    func aBodyWhoseEndCannotBeSeenIsNeverTakenAsWholeAtTheDeadline(headers: HTTPHeaders) {
        var machine = Self.machine()
        let accepted = machine.receiveHead(status: 200, headers: headers, streaming: false, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("ab".utf8))
        #expect(taken == (false, false))
        let outcome = machine.end(.deadlinePassed)
        #expect(Self.kind(outcome) == .timedOut)
    }

    @Test func aDeadlineBeforeAnyAnswerTimesOut() {
        var machine = Self.machine()
        let outcome = machine.end(.deadlinePassed)
        #expect(Self.kind(outcome) == .timedOut)
        let accepted = machine.receiveHead(status: 200, headers: [:], streaming: false, refusal: nil)
        #expect(!accepted)
    }

    @Test func theAnswerToAHeadRequestIsWholeWithItsHead() {
        var machine = Self.machine(method: "HEAD")
        let accepted = machine.receiveHead(
            status: 200, headers: ["Content-Length": "99"], streaming: false, refusal: nil)
        #expect(accepted)
        let outcome = machine.end(.deadlinePassed)
        #expect(Self.response(outcome)?.status == 200)
    }

    @Test func aCancellationEndsWithCancellationErrorEvenAfterAWholeAnswer() {
        var machine = Self.machine()
        let accepted = machine.receiveHead(status: 204, headers: [:], streaming: false, refusal: nil)
        #expect(accepted)
        guard case .failure(let error)? = machine.end(.cancelled) else {
            Issue.record("a cancelled exchange must fail")
            return
        }
        #expect(error is CancellationError)
        let outcome = machine.end(.taskCompleted(nil))
        #expect(outcome == nil)
    }

    @Test func aCompletionWithAnErrorIsClassified() {
        var machine = Self.machine()
        let outcome = machine.end(.taskCompleted(URLError(.timedOut)))
        #expect(Self.kind(outcome) == .timedOut)
        let outcome2 = machine.end(.deadlinePassed)
        #expect(outcome2 == nil)
    }

    @Test func aCompletionWithoutAnAnswerIsALostConnection() {
        var machine = Self.machine()
        let outcome = machine.end(.taskCompleted(nil))
        #expect(Self.kind(outcome) == .connectionLost)
    }

    @Test func anEndWhileTheSinkRunsWaitsForItToReturn() {
        var machine = Self.machine()
        let started = machine.startDelivery()
        #expect(started)
        let accepted = machine.receiveHead(status: 200, headers: ["Content-Length": "4"], streaming: true, refusal: nil)
        #expect(accepted)
        let returned = machine.finishDelivery()
        #expect(returned == nil)
        let taken = machine.receive(Data("ab".utf8))
        #expect(taken == (true, false))
        // The deadline passes while the sink writes: nothing ends until it returns.
        let outcome = machine.end(.deadlinePassed)
        #expect(outcome == nil)
        let outcome2 = machine.end(.cancelled)
        #expect(outcome2 == nil)
        #expect(!machine.isEnded)
        // The first end decides, once the sink is done.
        let returned2 = machine.finishDelivery()
        #expect(Self.kind(returned2) == .timedOut)
        #expect(machine.isEnded)
        let started2 = machine.startDelivery()
        #expect(!started2)
        let taken2 = machine.receive(Data("cd".utf8))
        #expect(taken2 == (false, true))
    }

    @Test func aStreamedBodyWholeToItsLengthEndsWithAnEmptyBody() {
        var machine = Self.machine()
        let accepted = machine.receiveHead(status: 200, headers: ["Content-Length": "4"], streaming: true, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("abcd".utf8))
        #expect(taken == (true, false))
        let returned = machine.finishDelivery()
        #expect(returned == nil)
        let response = Self.response(machine.end(.deadlinePassed))
        #expect(response?.status == 200)
        #expect(response?.body.isEmpty == true)
    }

    @Test func whatTheSinkThrewEndsTheAbortedExchange() {
        struct Full: Error {}
        var machine = Self.machine()
        let accepted = machine.receiveHead(status: 200, headers: [:], streaming: true, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("ab".utf8))
        #expect(taken == (true, false))
        let returned = machine.finishDelivery(.failure(Full()))
        #expect(returned == nil)
        #expect(machine.abortsTask)
        guard case .failure(let error)? = machine.end(.aborted) else {
            Issue.record("an aborted exchange must fail")
            return
        }
        #expect((error as? HTTPTransportError)?.kind == .sinkFailed)
        #expect((error as? HTTPTransportError)?.underlying is Full)
    }

    @Test func aBodyOverTheLimitEndsTheAbortedExchangeAsTooLarge() {
        var machine = Self.machine(limit: 3)
        let accepted = machine.receiveHead(status: 200, headers: [:], streaming: false, refusal: nil)
        #expect(accepted)
        let taken = machine.receive(Data("abcd".utf8))
        #expect(taken == (false, true))
        let outcome = machine.end(.aborted)
        #expect(Self.kind(outcome) == .responseTooLarge)
        var announced = Self.machine(limit: 3)
        let accepted2 = announced.receiveHead(
            status: 200, headers: ["Content-Length": "4"], streaming: false, refusal: nil)
        #expect(!accepted2)
    }
}
