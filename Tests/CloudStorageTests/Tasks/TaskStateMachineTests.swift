import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

@Suite("Task state machine")
struct TaskStateMachineTests {
    /// The job is a name and workers are numbered: the machine only holds them.
    typealias Machine = TaskStateMachine<String, Int, StorageMetadata>

    static let stored: StorageMetadata = {
        var metadata = StorageMetadata()
        metadata.contentType = "image/png"
        return metadata
    }()
    static let failed = StorageError(.unauthorized, "no")

    /// A machine whose first worker (numbered 1) runs.
    static func running() -> Machine {
        var (machine, action) = Machine.start("job")
        #expect(action == .start(epoch: 1, job: "job", after: nil, stop: nil))
        machine.started(1, epoch: 1)
        return machine
    }

    @Test func startsRunningTheFirstWorker() {
        let machine = Self.running()
        #expect(machine.state == .running(epoch: Machine.firstEpoch, job: "job", worker: 1))
        #expect(machine.shouldRun(epoch: 1))
    }

    @Test func pauseStopsTheWorkerAndResumeStartsTheNextAfterIt() {
        var machine = Self.running()
        #expect(machine.pause() == .stop(1, reason: .pause))
        #expect(machine.state == .paused(epoch: 1, job: "job", worker: 1))
        #expect(!machine.shouldRun(epoch: 1))
        #expect(machine.pause() == .none)
        #expect(machine.resume() == .start(epoch: 2, job: "job", after: 1, stop: nil))
        #expect(machine.resume() == .none)
        machine.started(2, epoch: 2)
        #expect(machine.pause() == .stop(2, reason: .pause))
        #expect(machine.resume() == .start(epoch: 3, job: "job", after: 2, stop: nil))
        machine.started(3, epoch: 3)
        #expect(machine.state == .running(epoch: 3, job: "job", worker: 3))
    }

    @Test func aPauseBeforeTheWorkerIsRecordedStillReachesIt() {
        var (machine, _) = Machine.start("job")
        #expect(machine.pause() == .stop(nil, reason: .pause))
        machine.started(1, epoch: 1)
        // The runner sets the reason on the worker it created; the worker then finds it should not run.
        #expect(machine.state == .paused(epoch: 1, job: "job", worker: 1))
        #expect(!machine.shouldRun(epoch: 1))
    }

    @Test func theCurrentWorkersFailureEndsTheTask() {
        var machine = Self.running()
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(Self.failed)) == .finish(.failure(Self.failed)))
        #expect(machine.state == .finished(.failure(Self.failed)))
        #expect(machine.pause() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.cancel() == .none)
        #expect(!machine.shouldRun(epoch: 1))
    }

    @Test func aStoppedWorkersFailureIsIgnored() {
        var machine = Self.running()
        _ = machine.pause()
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        _ = machine.resume()
        machine.started(2, epoch: 2)
        // Epoch 1 ending late (after epoch 2 started) changes nothing.
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        #expect(machine.state == .running(epoch: 2, job: "job", worker: 2))
    }

    @Test func successWinsOverPauseAndCancel() {
        var paused = Self.running()
        _ = paused.pause()
        #expect(paused.workerEnded(epoch: 1, outcome: .success(Self.stored)) == .finish(.success(Self.stored)))

        var cancelling = Self.running()
        #expect(cancelling.cancel() == .stop(1, reason: .cancel))
        #expect(cancelling.workerEnded(epoch: 1, outcome: .success(Self.stored)) == .finish(.success(Self.stored)))
        #expect(cancelling.state == .finished(.success(Self.stored)))
    }

    @Test func cancellingARunningWorkerEndsInCancelledWhenItStops() {
        var machine = Self.running()
        #expect(machine.cancel() == .stop(1, reason: .cancel))
        #expect(machine.cancel() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.pause() == .none)
        #expect(machine.shouldRun(epoch: 1), "a worker told to cancel still runs, to discard")
        // Whatever error the stopping worker brings, the task ends cancelled.
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(Self.failed)) == .finish(.failure(.cancelled())))
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
    }

    @Test func cancellingAPausedTaskStartsAWorkerThatOnlyDiscards() {
        var machine = Self.running()
        _ = machine.pause()
        #expect(machine.cancel() == .start(epoch: 2, job: "job", after: 1, stop: .cancel))
        machine.started(2, epoch: 2)
        #expect(machine.state == .cancelling(epoch: 2, worker: 2))
        #expect(machine.cancel() == .none)
        // The paused worker's end is not the cancellation's.
        #expect(machine.workerEnded(epoch: 1, outcome: .failure(.cancelled())) == .none)
        #expect(machine.workerEnded(epoch: 2, outcome: .failure(.cancelled())) == .finish(.failure(.cancelled())))
    }

    @Test func aWorkerRecordedAfterTheEndIsIgnored() {
        var machine = Self.running()
        _ = machine.pause()
        _ = machine.resume()
        _ = machine.workerEnded(epoch: 1, outcome: .success(Self.stored))
        machine.started(2, epoch: 2)
        #expect(machine.state == .finished(.success(Self.stored)))
        #expect(!machine.shouldRun(epoch: 2))
    }

    /// Random interleavings of every event: the task ends at most once,
    /// epochs only grow, at most one worker is wanted at a time, and
    /// nothing happens after the end.
    @Test(arguments: 0..<200)
    func randomInterleavingsKeepTheInvariants(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        var machine = Self.running()
        var finishes = 0
        var lastEpoch = Machine.firstEpoch
        var startedEpochs: [UInt64] = [Machine.firstEpoch]
        for _ in 0..<60 {
            let action: Machine.Action
            switch Int.random(in: 0..<5, using: &generator) {
            case 0: action = machine.pause()
            case 1: action = machine.resume()
            case 2: action = machine.cancel()
            case 3:
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
                guard case .finished = machine.state else {
                    Issue.record("finish without the finished state")
                    return
                }
            case .start(let epoch, _, let previous, _):
                #expect(epoch == lastEpoch + 1)
                #expect(previous == Int(lastEpoch), "each worker waits for the one before it")
                lastEpoch = epoch
                startedEpochs.append(epoch)
                machine.started(Int(epoch), epoch: epoch)
            case .stop(let worker, _):
                #expect(worker == Int(lastEpoch), "only the latest worker is ever told to stop")
            case .none:
                break
            }
            #expect(startedEpochs.filter { machine.shouldRun(epoch: $0) }.count <= 1)
        }
        #expect(finishes <= 1)
        if finishes == 1 {
            #expect(startedEpochs.allSatisfy { !machine.shouldRun(epoch: $0) })
        }
    }
}
