import Foundation
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// Each kind of operation is bounded by the retry time named for it —
/// `retry.maxUploadTime`, `retry.maxDownloadTime`, `retry.maxOperationTime` — and
/// by no other. A retry time of zero allows no retry, so a single `503` decides
/// the outcome without any race against a clock.
@Suite("Retry budgets", .timeLimit(.minutes(10)))
struct RetryBudgetTests {
    enum Operation: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case upload, download, metadata, delete

        var testDescription: String { rawValue }

        /// The setting that bounds the operation's retries.
        var budgetName: String {
            switch self {
            case .upload: "retry.maxUploadTime"
            case .download: "retry.maxDownloadTime"
            case .metadata, .delete: "retry.maxOperationTime"
            }
        }

        func perform(_ reference: StorageReference) async throws(StorageError) {
            switch self {
            case .upload: _ = try await reference.putDataAsync(Data(repeating: 7, count: 1000))
            case .download: _ = try await reference.data(maxSize: 1 << 20)
            case .metadata: _ = try await reference.getMetadata()
            case .delete: try await reference.delete()
            }
        }
    }

    /// A storage whose first request is answered `503`; `zeroed` is the one retry time set to zero.
    /// Every request may be retried (`always`): the subject is the retry times, not the policy.
    static func storage(_ route: Reliability.Route, _ emulator: StorageEmulator, zeroed budget: String) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try $0.retry.setMaxDelay(.milliseconds(5))
            try $0.retry.setMaxUploadTime(budget == "retry.maxUploadTime" ? .zero : .seconds(600))
            try $0.retry.setMaxDownloadTime(budget == "retry.maxDownloadTime" ? .zero : .seconds(600))
            try $0.retry.setMaxOperationTime(budget == "retry.maxOperationTime" ? .zero : .seconds(600))
            $0.retry.policy = .always
        }
        route.via.apply(to: &configuration)
        let endpoint = route.wire.endpoint(emulator.baseURL)
        let transport = TestTransport(wrapping: route.via.makeTransport(for: endpoint))
        transport.answer { _, index in
            index == 0 ? TestTransport.response(503, body: #"{"error":{"message":"scripted 503"}}"#) : nil
        }
        return Storage(
            bucket: Reliability.bucket, endpoint: endpoint, authorization: .none, configuration: configuration,
            transport: transport)
    }

    @Test(arguments: Reliability.Route.all, Operation.allCases)
    func anOperationIsBoundedByItsOwnRetryTime(route: Reliability.Route, operation: Operation) async throws {
        try await Reliability.withEmulator(for: route.via) { emulator in
            let seed = Reliability.storage(route, emulator)
            for name in ["a", "b"] {
                _ = try await seed.reference(withPath: name).putDataAsync(Data(repeating: 1, count: 1000))
            }
            // Its own retry time is zero: the 503 ends it, naming that setting.
            let bounded = Self.storage(route, emulator, zeroed: operation.budgetName)
            let error = await #expect(throws: StorageError.self) {
                try await operation.perform(bounded.reference(withPath: "a"))
            }
            #expect(error?.code == .retryLimitExceeded)
            #expect(error?.message.contains(operation.budgetName) == true)
            // Only the others are zero: the 503 is retried.
            for other in Set(Operation.allCases.map(\.budgetName)).subtracting([operation.budgetName]) {
                let unbounded = Self.storage(route, emulator, zeroed: other)
                try await operation.perform(unbounded.reference(withPath: "b"))
                _ = try await seed.reference(withPath: "b").putDataAsync(Data(repeating: 1, count: 1000))
            }
        }
    }
}
