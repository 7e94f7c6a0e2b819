import Foundation
import Testing

@testable import CloudStorage

@Suite("Upload state machine")
struct UploadStateMachineTests {
    typealias Machine = StorageUploadTask.StateMachine

    static let stored: StorageMetadata = {
        var metadata = StorageMetadata()
        metadata.contentType = "image/png"
        return metadata
    }()
    static let failed = StorageError(.unauthorized, "no")

    @Test func startsRunningTheFirstWorker() {
        let machine = Machine()
        #expect(machine.state == .running(epoch: Machine.firstEpoch))
    }

    @Test func pauseAndResumeAlternateAndStartNewEpochs() {
        var machine = Machine()
        #expect(machine.pause() == .pauseWorker)
        #expect(machine.state == .paused(epoch: 1))
        #expect(machine.pause() == .none)
        #expect(machine.resume() == .startWorker(epoch: 2))
        #expect(machine.resume() == .none)
        #expect(machine.pause() == .pauseWorker)
        #expect(machine.resume() == .startWorker(epoch: 3))
        #expect(machine.state == .running(epoch: 3))
    }

    @Test func theCurrentWorkersFailureEndsTheTask() {
        var machine = Machine()
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(Self.failed)) == .finish(.failure(Self.failed)))
        #expect(machine.state == .finished)
        #expect(machine.pause() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.cancel() == .none)
    }

    @Test func aStoppedWorkersFailureIsIgnored() {
        var machine = Machine()
        _ = machine.pause()
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        _ = machine.resume()
        // Epoch 1 ending late (after epoch 2 started) changes nothing.
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        #expect(machine.state == .running(epoch: 2))
    }

    @Test func successWinsOverPauseAndCancel() {
        var paused = Machine()
        _ = paused.pause()
        #expect(paused.workerEnded(epoch: 1, outcome: .success(Self.stored)) == .finish(.success(Self.stored)))

        var cancelling = Machine()
        #expect(cancelling.cancel() == .tearDown)
        #expect(cancelling.workerEnded(epoch: 1, outcome: .success(Self.stored)) == .finish(.success(Self.stored)))
        #expect(cancelling.cancellationCompleted() == .none)
    }

    @Test func cancelTearsDownOnceAndEndsInCancelled() {
        var machine = Machine()
        _ = machine.pause()
        #expect(machine.cancel() == .tearDown)
        #expect(machine.cancel() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.pause() == .none)
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        #expect(machine.cancellationCompleted() == .finish(.failure(.cancelled())))
        #expect(machine.cancellationCompleted() == .none)
    }

    @Test func cancellationCompletedMeansNothingUnlessCancelling() {
        var machine = Machine()
        #expect(machine.cancellationCompleted() == .none)
        #expect(machine.state == .running(epoch: 1))
    }

    /// Random interleavings of every event: the task ends at most once,
    /// epochs only grow, and nothing happens after the end.
    @Test(arguments: 0..<200)
    func randomInterleavingsKeepTheInvariants(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        var machine = Machine()
        var finishes = 0
        var lastEpoch = Machine.firstEpoch
        var startedEpochs: [UInt64] = [Machine.firstEpoch]
        for _ in 0..<60 {
            let action: Machine.Action
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: action = machine.pause()
            case 1: action = machine.resume()
            case 2: action = machine.cancel()
            case 3: action = machine.cancellationCompleted()
            case 4:
                let epoch = startedEpochs.randomElement(using: &generator)!
                action = machine.workerEnded(epoch: epoch, outcome: .failure(.cancelled()))
            default:
                let epoch = startedEpochs.randomElement(using: &generator)!
                let outcome: Machine.Outcome =
                    Bool.random(using: &generator) ? .success(Self.stored) : .failure(Self.failed)
                action = machine.workerEnded(epoch: epoch, outcome: outcome)
            }
            switch action {
            case .finish:
                finishes += 1
                #expect(machine.state == .finished)
            case .startWorker(let epoch):
                #expect(epoch == lastEpoch + 1)
                lastEpoch = epoch
                startedEpochs.append(epoch)
            case .none, .pauseWorker, .tearDown:
                break
            }
            if finishes > 0 {
                #expect(machine.state == .finished)
            }
        }
        #expect(finishes <= 1)
    }
}

/// A small deterministic generator (SplitMix64) for reproducible random tests.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed &+ 0x9E37_79B9_7F4A_7C15
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
