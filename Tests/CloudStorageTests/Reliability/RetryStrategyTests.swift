import Foundation
import HTTPClient
import Synchronization
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Google's retry strategy (cloud.google.com/storage/docs/retry-strategy), as the call executor
/// applies it: idempotent operations are retried, conditionally idempotent ones only under the
/// precondition that makes them safe, and the policy (per `Storage` and per call) can widen or
/// narrow that. Every case runs against the built-in emulator, whose fault plan
/// (`x-emulator-faults`) answers the first request with a retryable failure; the recorded
/// requests show how many attempts each call made.
@Suite("Google's retry strategy", .timeLimit(.minutes(10)))
struct RetryStrategyTests {
    typealias Policy = StorageConfiguration.Retry.Policy

    @Test func thePolicyDecidesFromTheRequestsIdempotency() {
        let generation = CallIdempotency.generationConditioned(StoragePreconditions(ifGenerationMatch: 0))
        let none = CallIdempotency.generationConditioned(.none)
        let metageneration = CallIdempotency.metagenerationConditioned(StoragePreconditions(ifMetagenerationMatch: 3))
        let pinned = CallIdempotency.delete(.none, generation: 7)
        let table: [(Policy, CallIdempotency, Bool)] = [
            (.idempotentOnly, .idempotent, true),
            (.idempotentOnly, generation, true),
            (.idempotentOnly, metageneration, true),
            (.idempotentOnly, pinned, true),
            (.idempotentOnly, none, false),
            (.idempotentOnly, .metagenerationConditioned(StoragePreconditions(ifGenerationMatch: 3)), false),
            (.idempotentOnly, .nonIdempotent, false),
            (.always, none, true),
            (.always, .nonIdempotent, true),
            (.never, .idempotent, false),
            (.never, generation, false),
        ]
        for (policy, idempotency, allowed) in table {
            let decision = RetryDecision(policy: policy, idempotency: idempotency)
            #expect(decision.allowsRetry == allowed, "\(policy) \(idempotency): \(decision.rule)")
        }
        #expect(RetryDecision(policy: .idempotentOnly, idempotency: generation).rule.contains("ifGenerationMatch=0"))
        #expect(RetryDecision(policy: .idempotentOnly, idempotency: pinned).rule.contains("generation=7"))
    }

    /// A conditionally idempotent object call, with and without the precondition that makes it
    /// idempotent.
    enum Write: String, CaseIterable, Sendable {
        case delete, updateMetadata, copy, compose, move, oneRequestUpload, resumableUploadStart

        /// The request's method and what its path or query shows, to count its attempts.
        func isAttempt(_ request: HTTPRequest) -> Bool {
            let path = request.url.path
            let query = request.url.query ?? ""
            switch self {
            case .delete: return request.method == "DELETE"
            case .updateMetadata: return request.method == "PATCH"
            case .copy: return path.contains("/rewriteTo/")
            case .compose: return path.hasSuffix("/compose")
            case .move: return path.contains("/moveTo/")
            case .oneRequestUpload: return request.method == "POST" && query.contains("uploadType=multipart")
            case .resumableUploadStart: return request.method == "POST" && query.contains("uploadType=resumable")
            }
        }

        /// Runs the call on `ref` (an object that exists), with `plan` selected for its requests.
        func run(_ ref: StorageReference, plan: String, conditioned: Bool) async throws {
            let current = try await ref.getMetadata()
            let faulty = ref.with(.init(headers: ["x-emulator-faults": plan]))
            let sameGeneration = conditioned ? StoragePreconditions(ifGenerationMatch: current.generation) : .none
            let target = ref.storage.reference(withPath: "target-\(rawValue)")
            let newTarget = conditioned ? StoragePreconditions.doesNotExist : .none
            switch self {
            case .delete:
                try await faulty.delete(preconditions: sameGeneration)
            case .updateMetadata:
                var update = StorageMetadataUpdate()
                update.customMetadata["pass"] = .set("2")
                let condition =
                    conditioned ? StoragePreconditions(ifMetagenerationMatch: current.metageneration) : .none
                _ = try await faulty.updateMetadata(update, preconditions: condition)
            case .copy:
                _ = try await faulty.copy(
                    to: target.with(.init(headers: ["x-emulator-faults": plan])), preconditions: newTarget)
            case .compose:
                _ = try await target.with(.init(headers: ["x-emulator-faults": plan]))
                    .compose(from: [ref, ref], preconditions: newTarget)
            case .move:
                _ = try await faulty.move(to: target, preconditions: newTarget)
            case .oneRequestUpload:
                _ = try await faulty.putDataAsync(Data("again".utf8), preconditions: sameGeneration)
            case .resumableUploadStart:
                var resumable = ref.storage.configuration
                resumable.uploads.multipartThreshold = 0
                let storage = Storage(
                    bucket: ref.storage.bucket, endpoint: ref.storage.endpoint, authorization: .none,
                    configuration: resumable, transport: ref.storage.transport)
                _ = try await storage.reference(withPath: ref.fullPath).with(
                    .init(headers: ["x-emulator-faults": plan])
                )
                .putDataAsync(Data("again".utf8), preconditions: sameGeneration)
            }
        }
    }

    /// Scenario 3 of Google's conformance tests: without a precondition, a conditionally
    /// idempotent call is sent once; its retryable failure is the call's, saying why it was not
    /// retried.
    @Test(arguments: Write.allCases)
    func aWriteWithoutItsPreconditionIsSentOnce(_ write: Write) async throws {
        for failure in ["return-503", "reset-after-0"] {
            try await withObject { ref, emulator, captured in
                let plan = try emulator.installFaultPlan([failure])
                let before = captured.all.filter(write.isAttempt).count
                do {
                    try await write.run(ref, plan: plan, conditioned: false)
                    Issue.record("\(write) after \(failure) succeeded: it was retried")
                } catch let error as StorageError {
                    #expect(error.message.contains("Not retried"), "\(write) \(failure): \(error)")
                    #expect(error.code != .retryLimitExceeded, "\(error)")
                }
                let after = captured.all.filter(write.isAttempt).count
                #expect(after - before == 1, "\(write) \(failure)")
            }
        }
    }

    /// Scenario 2: with the precondition, the same failure is retried and the call succeeds.
    @Test(arguments: Write.allCases)
    func aWriteUnderItsPreconditionIsRetried(_ write: Write) async throws {
        try await withObject { ref, emulator, captured in
            let plan = try emulator.installFaultPlan(["return-503", "return-503"])
            let before = captured.all.filter(write.isAttempt).count
            try await write.run(ref, plan: plan, conditioned: true)
            let after = captured.all.filter(write.isAttempt).count
            #expect(after - before == 3, "\(write)")
        }
    }

    /// The policy set per call wins over the `Storage`'s: `always` retries a write without a
    /// precondition, `never` does not even retry a read.
    @Test func aPerCallPolicyOverridesTheStorages() async throws {
        try await withObject { ref, emulator, captured in
            var always = ref.storage.configuration.retry
            always.policy = .always
            let retried = try emulator.installFaultPlan(["return-503"])
            try await ref.with(.init(retry: always, headers: ["x-emulator-faults": retried])).delete()
            #expect(captured.count(of: "DELETE") == 2)

            _ = try await ref.putDataAsync(Data("back".utf8))
            var never = ref.storage.configuration.retry
            never.policy = .never
            let once = try emulator.installFaultPlan(["return-503"])
            let gets = captured.count(of: "GET")
            let error = await #expect(throws: StorageError.self) {
                _ = try await ref.with(.init(retry: never, headers: ["x-emulator-faults": once])).getMetadata()
            }
            #expect(error?.httpStatus == 503)
            #expect(error?.message.contains("the retry policy is never") == true, "\(String(describing: error))")
            #expect(captured.count(of: "GET") - gets == 1)
        }
    }

    /// Every attempt of one call carries the call's id and its attempt number, as Google's
    /// clients send them; another call has another id.
    @Test func everyAttemptOfACallCarriesItsInvocationID() async throws {
        try await withObject { ref, emulator, captured in
            let plan = try emulator.installFaultPlan(["return-503", "return-503"])
            let start = captured.all.count
            _ = try await ref.with(.init(headers: ["x-emulator-faults": plan])).getMetadata()
            _ = try await ref.getMetadata()
            let requests = captured.all.dropFirst(start).filter(\.isGET)
            #expect(requests.count == 4)
            let clients = requests.map { $0.headers["x-goog-api-client"] ?? "" }
            let ids = clients.map { Self.token("gccl-invocation-id/", in: $0) }
            #expect(Set(ids[0...2]).count == 1 && ids[0] != nil && ids[3] != ids[0], "\(clients)")
            #expect(clients.map { Self.token("gccl-attempt-count/", in: $0) } == ["1", "2", "3", "1"])
            #expect(clients.allSatisfy { $0.hasPrefix("gl-swift/") && $0.contains(" gccl/") })
            #expect(requests.map { $0.headers["x-goog-gcs-idempotency-token"] } == ids)
        }
    }

    /// Each retry is an event that names the failure and the rule that allowed it.
    @Test func aRetryEventNamesItsRule() async throws {
        let recorder = EventRecorder()
        try await withObject(configure: { try $0.events.setHandler(recorder) }) { ref, emulator, _ in
            let plan = try emulator.installFaultPlan(["return-503"])
            try await ref.with(.init(headers: ["x-emulator-faults": plan]))
                .delete(preconditions: StoragePreconditions(ifGenerationMatch: try await ref.getMetadata().generation))
            await ref.storage.configuration.events.flush()
            let retries = recorder.events(.retry)
            #expect(retries.count == 1)
            #expect(
                retries.first?.metadata["rule"]?.stringValue?.hasPrefix("the request is made idempotent by ifGenerationMatch=")
                    == true)
            #expect(retries.first?.metadata["status"] == 503)
            #expect(retries.first?.metadata["attempt"] == 1)
        }
    }

    /// Firebase endpoints keep the Firebase SDKs' semantics: a delete, which Firebase Storage
    /// takes without preconditions, is retried.
    @Test func firebaseEndpointsRetryAsTheFirebaseSDKsDo() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = RequestOptionsTests.Captured()
        let storage = RequestOptionsTests.storage(emulator, firebase: true, captured: captured)
        let ref = storage.reference(withPath: "firebase/retried.txt")
        _ = try await ref.putDataAsync(Data("x".utf8))
        let plan = try emulator.installFaultPlan(["return-503"])
        try await ref.with(.init(headers: ["x-emulator-faults": plan])).delete()
        #expect(captured.count(of: "DELETE") == 2)
    }

    /// The retry time of an operation that moves no object bytes counts from the call's start:
    /// a first attempt that hangs until its time-out uses up a retry time as long as that
    /// time-out, and nothing is retried. (Counted from the first failure, it was not: the call
    /// took the time-out plus the whole retry time.)
    @Test func anOperationsRetryTimeCountsFromTheCallsStart() async throws {
        try await withObject(configure: {
            try $0.timeouts.setRequest(.milliseconds(300))
            try $0.retry.setMaxOperationTime(.milliseconds(300))
        }) { ref, emulator, captured in
            let plan = try emulator.installFaultPlan(["stall-after-0", "stall-after-0", "stall-after-0"])
            let gets = captured.count(of: "GET")
            let error = await #expect(throws: StorageError.self) {
                _ = try await ref.with(.init(headers: ["x-emulator-faults": plan])).getMetadata()
            }
            #expect(error?.code == .retryLimitExceeded, "\(String(describing: error))")
            #expect(captured.count(of: "GET") - gets == 1)
        }
    }

    /// Runs `body` with an object on a fresh emulator, through a `Storage` whose requests are
    /// recorded, with a short back-off.
    private func withObject(
        configure: (inout StorageConfiguration) throws -> Void = { _ in },
        _ body: (StorageReference, StorageEmulator, RequestOptionsTests.Captured) async throws -> Void
    ) async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = RequestOptionsTests.Captured()
        let storage = RequestOptionsTests.storage(emulator, captured: captured) {
            try $0.retry.setInitialDelay(.milliseconds(5))
            try configure(&$0)
        }
        let ref = storage.reference(withPath: "strategy/object.txt")
        _ = try await ref.putDataAsync(Data("first".utf8))
        try await body(ref, emulator, captured)
    }

    /// The value of the `name/value` token starting with `prefix` in an `x-goog-api-client`.
    private static func token(_ prefix: String, in header: String) -> String? {
        header.split(separator: " ").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }
}

extension RequestOptionsTests.Captured {
    /// How many requests of `method` were sent. (A closure written inside `#expect` and another
    /// one beside it in the same function were once compiled as one: keep closures out of it.)
    func count(of method: String) -> Int {
        all.reduce(0) { $0 + ($1.method == method ? 1 : 0) }
    }
}

extension HTTPRequest {
    fileprivate var isGET: Bool { method == "GET" }
}

/// One call executor: no code of the SDK or the CLI waits between attempts but the executor's
/// retry gate, and nothing but the executor hands a request to a transport.
@Suite("One call executor")
struct CallExecutorLayeringTests {
    @Test func onlyTheCallExecutorSleepsBetweenAttemptsOrTalksToATransport() throws {
        var checked = 0
        for folder in ["CloudStorage", "CloudStorageCLI"] {
            let root = TransportLayeringTests.sources.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" {
                let name = file.lastPathComponent
                let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
                // The token cache waits for a deadline, the CLI's interruption for a grace period:
                // neither is a retry.
                if !["CallExecutor.swift", "TokenCache.swift", "Interruption.swift"].contains(name) {
                    #expect(!code.contains("Task.sleep"), "\(name) sleeps outside the call executor")
                }
                if !["CallExecutor.swift", "SchemeRoutingTransport.swift"].contains(name) {
                    #expect(!code.contains("transport.execute("), "\(name) sends outside the call executor")
                    #expect(!code.contains(".execute(request, progress"), "\(name) sends outside the call executor")
                }
                checked += 1
            }
        }
        #expect(checked > 150)
    }
}
