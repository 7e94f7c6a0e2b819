import Foundation
import HTTP1
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// Google's retry conformance tests, run as every official Cloud Storage library runs them
/// against storage-testbench, against the built-in emulator's retry-test API.
///
/// For every scenario × JSON API method the SDK implements × case × SDK transport (native
/// HTTP/1.1 and URLSession): the resources are created, a retry test with the case's
/// instructions under the method's name is created over HTTP (`POST /retry_test`), the SDK
/// call runs with `x-retry-test-id` and a 1 ms back-off, and it must succeed or fail as
/// `expectSuccess` says, with the retry test `completed` (every instruction used: a failing
/// case of scenario 3 with exactly one attempt).
///
/// Method → SDK call: `storage.objects.get` → `getMetadata()` and `data(maxSize:)` (the
/// `storage.objects.download` group: `data(maxSize:)` only); `storage.objects.list` →
/// `listAll()` and `list(maxResults:)`; `storage.objects.insert` → `putData` in one multipart
/// request and through a resumable session (the `storage.resumable.upload` group: the session
/// only), with `ifGenerationMatch: 0` when `preconditionProvided`; `storage.objects.patch` →
/// `updateMetadata` (`ifMetagenerationMatch`); `storage.objects.delete` → `delete`
/// (`ifGenerationMatch`); `storage.objects.rewrite` → `copy(to:)` (`ifGenerationMatch: 0`);
/// `storage.objects.compose` → `compose(from:)` (`ifGenerationMatch: 0`).
///
/// Skipped: `storage.objects.copy`, since `copy(to:)` sends `rewriteTo` (the emulator, like
/// Cloud Storage and the testbench, counts it as `storage.objects.rewrite`, whose cases it runs)
/// and no SDK call sends `copyTo`; `storage.objects.update`, since the SDK has no PUT of an
/// object's metadata (`updateMetadata` is a PATCH); every `storage.buckets.*`,
/// `bucket_acl`, `default_object_acl`, `object_acl`, `hmacKey`, `notifications` and
/// `serviceaccount` method, which the SDK does not call. Scenario 4 lists only such methods.
@Suite("Reliability: retry conformance", .timeLimit(.minutes(10)))
struct RetryConformanceTests {
    @Test("The scenarios are read, and each gives the SDK cases to run")
    func scenariosAreRead() {
        let (source, scenarios) = RetryConformance.scenarios()
        #expect(!scenarios.isEmpty, "no scenario could be read from \(source)")
        let cases = RetryConformance.cases
        #expect(!cases.isEmpty)
        let perScenario = Dictionary(grouping: cases, by: \.scenario).mapValues(\.count)
        print(
            "retry conformance: \(source): \(scenarios.count) scenarios, \(cases.count) cases \(perScenario.sorted { $0.key < $1.key })"
        )
    }

    @Test(arguments: RetryConformance.cases, TestRoute.plain)
    func conformance(_ item: RetryConformance.Case, via route: TestRoute) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: route) { emulator in
                let storage = Reliability.storage(Reliability.Route(wire: .gcs, via: route), emulator) {
                    try $0.retry.setInitialDelay(.milliseconds(1))
                    try $0.retry.setMaxDelay(.milliseconds(4))
                    // The SDK's default policy is what is tested (the reliability suites retry every request).
                    $0.retry.policy = StorageConfiguration.Retry().policy
                    if item.call == .insertResumable { $0.uploads.multipartThreshold = -1 }
                }
                let fixture = try await Fixture.make(in: storage)
                let id = try await Self.createRetryTest(on: emulator, [item.method: item.instructions])
                let tested = storage.with(StorageRequestOptions(headers: ["x-retry-test-id": id]))
                let outcome = await Self.perform(item, on: tested, fixture)
                if item.expectSuccess {
                    #expect(throws: Never.self, "the call succeeds") { try outcome.get() }
                } else {
                    #expect(throws: StorageError.self, "the call fails") { try outcome.get() }
                }
                let test = try await Self.retryTest(id, on: emulator)
                #expect(test["completed"] as? Bool == true, "every instruction was used: \(test)")
            }
        }
    }

    /// What the calls work on, created without the retry test's header.
    struct Fixture {
        static let objectName = "object"
        static let payload = TestSupport.payload(size: 512 * 1024, seed: 30)
        var generation: Int64
        var metageneration: Int64

        static func make(in storage: Storage) async throws -> Fixture {
            let stored = try await storage.reference(objectName: objectName).putDataAsync(payload)
            return Fixture(
                generation: try #require(stored.generation), metageneration: try #require(stored.metageneration))
        }
    }

    /// Runs the case's SDK call.
    static func perform(
        _ item: RetryConformance.Case, on storage: Storage, _ fixture: Fixture
    ) async -> Result<Void, StorageError> {
        let object = storage.reference(objectName: Fixture.objectName)
        let conditional = item.preconditionProvided
        do throws(StorageError) {
            switch item.call {
            case .getMetadata: _ = try await object.getMetadata()
            case .download: _ = try await object.data(maxSize: 1 << 30)
            case .listAll: _ = try await storage.reference().listAll()
            case .listPage: _ = try await storage.reference().list(maxResults: 10)
            case .insertMultipart, .insertResumable:
                let payload = item.instructions.contains { $0.hasSuffix("-after-8192K") } ? bigPayload : Fixture.payload
                _ = try await storage.reference(objectName: "inserted").putDataAsync(
                    payload, preconditions: conditional ? .init(ifGenerationMatch: 0) : .none)
            case .patch:
                var metadata = StorageMetadata()
                metadata.contentType = "text/plain"
                _ = try await object.updateMetadata(
                    metadata, preconditions: conditional ? .init(ifMetagenerationMatch: fixture.metageneration) : .none)
            case .delete:
                try await object.delete(
                    preconditions: conditional ? .init(ifGenerationMatch: fixture.generation) : .none)
            case .rewrite:
                _ = try await object.copy(
                    to: storage.reference(objectName: "copied"),
                    preconditions: conditional ? .init(ifGenerationMatch: 0) : .none)
            case .compose:
                _ = try await storage.reference(objectName: "composed").compose(
                    from: [object], preconditions: conditional ? .init(ifGenerationMatch: 0) : .none)
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Above 8 MiB, for `return-503-after-8192K`.
    static let bigPayload = TestSupport.payload(size: 9 * 1024 * 1024, seed: 31)

    /// `POST /retry_test`, as a runner for storage-testbench sends it.
    static func createRetryTest(on emulator: StorageEmulator, _ instructions: [String: [String]]) async throws -> String
    {
        let body = try JSONSerialization.data(withJSONObject: ["instructions": instructions, "transport": "HTTP"])
        var headers = HTTPHeaders()
        headers.set("Content-Type", "application/json")
        let url = try #require(URL(string: emulator.baseURL.absoluteString + "/retry_test"))
        let response = try await TestRoute.reader.execute(
            HTTPRequest(method: "POST", url: url, headers: headers, body: .data(body)), progress: nil)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let created = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        return try #require(created?["id"] as? String)
    }

    /// `GET /retry_test/<id>`.
    static func retryTest(_ id: String, on emulator: StorageEmulator) async throws -> [String: Any] {
        let url = try #require(URL(string: emulator.baseURL.absoluteString + "/retry_test/\(id)"))
        let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
        #expect(response.status == 200)
        return try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
    }
}

extension RetryConformance {
    /// An SDK call that a JSON API method maps to.
    enum Call: String, Sendable {
        case getMetadata, download, listAll, listPage, insertMultipart, insertResumable, patch, delete, rewrite,
            compose
    }

    /// One scenario's case for one SDK call of one method.
    struct Case: Sendable, CustomTestStringConvertible {
        var scenario: Int
        var method: String
        var call: Call
        var instructions: [String]
        var preconditionProvided: Bool
        var expectSuccess: Bool

        var testDescription: String {
            "scenario \(scenario) \(method) \(call) [\(instructions.joined(separator: ", "))]"
        }
    }

    /// The SDK calls of a method; none for the methods the runner skips (see ``RetryConformanceTests``).
    static func calls(for method: Method) -> [Call] {
        switch method.name {
        case "storage.objects.get":
            method.group == "storage.objects.download" ? [.download] : [.getMetadata, .download]
        case "storage.objects.list": [.listAll, .listPage]
        case "storage.objects.insert":
            method.group == "storage.resumable.upload" ? [.insertResumable] : [.insertMultipart, .insertResumable]
        case "storage.objects.patch": [.patch]
        case "storage.objects.delete": [.delete]
        case "storage.objects.rewrite": [.rewrite]
        case "storage.objects.compose": [.compose]
        default: []
        }
    }

    /// Every case the runner runs, in the file's order.
    static let cases: [Case] = scenarios().scenarios.flatMap { scenario in
        scenario.methods.flatMap { method in
            calls(for: method).flatMap { call in
                scenario.cases.map { instructionCase in
                    Case(
                        scenario: scenario.id, method: method.name, call: call,
                        instructions: instructionCase.instructions,
                        preconditionProvided: scenario.preconditionProvided, expectSuccess: scenario.expectSuccess)
                }
            }
        }
    }
}
