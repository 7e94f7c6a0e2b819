import Foundation
import Testing

/// Google's retry conformance scenarios (`storage/v1/retry_tests.json` of
/// googleapis/conformance-tests), read in that file's format, and the cases the SDK runs of them.
///
/// The file itself is not committed. The runner reads it from the path in the environment
/// variable `CLOUD_STORAGE_RETRY_TESTS`, else from `../shared/conformance/retry_tests.json`
/// beside the package root, when either exists; otherwise it uses ``builtIn``, our own
/// statement of the same scenarios for the methods the SDK implements.
enum RetryConformance {
    /// The file's top level: `{"retryTests": […]}`.
    struct File: Decodable {
        var retryTests: [Scenario]
    }

    /// One scenario: instruction lists (cases) applied to each listed JSON API method.
    struct Scenario: Decodable, Sendable {
        var id: Int
        var description: String
        var cases: [InstructionCase]
        var methods: [Method]
        var preconditionProvided: Bool
        var expectSuccess: Bool
    }

    /// The instructions of one case, for the method under test.
    struct InstructionCase: Decodable, Sendable {
        var instructions: [String]
    }

    /// A JSON API method (`storage.objects.get`), with the group that narrows which calls of it
    /// a scenario means (`storage.objects.download`, `storage.resumable.upload`).
    struct Method: Decodable, Sendable {
        var name: String
        var group: String?
        var resources: [String]
    }

    /// Where the scenarios come from: Google's file when it is present, else ``builtIn``.
    static func scenarios() -> (source: String, scenarios: [Scenario]) {
        let environment = ProcessInfo.processInfo.environment["CLOUD_STORAGE_RETRY_TESTS"]
        let beside = packageRoot.appendingPathComponent("../shared/conformance/retry_tests.json").standardized.path
        for path in [environment, beside].compactMap({ $0 }) where FileManager.default.fileExists(atPath: path) {
            // A file that is present but unreadable must not silently fall back: no scenario fails loudly.
            guard let data = FileManager.default.contents(atPath: path),
                let file = try? JSONDecoder().decode(File.self, from: data)
            else { return (path, []) }
            return (path, file.retryTests)
        }
        return ("built-in table", builtIn)
    }

    /// The package's root directory, from this file's place in it.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Our own statement of Google's scenarios, for the JSON API methods the SDK implements
    /// (scenario 4, non-idempotent ACL, HMAC and notification methods, has none of them).
    static let builtIn: [Scenario] = [
        Scenario(
            id: 1, description: "always_idempotent",
            cases: cases(
                ["return-503", "return-503"], ["return-reset-connection", "return-reset-connection"],
                ["return-reset-connection", "return-503"]),
            methods: methods("storage.objects.get", "storage.objects.list"),
            preconditionProvided: false, expectSuccess: true),
        Scenario(
            id: 2, description: "conditionally_idempotent_retries_when_precondition_is_present",
            cases: cases(
                ["return-503", "return-503"], ["return-reset-connection", "return-reset-connection"],
                ["return-reset-connection", "return-503"]),
            methods: conditionallyIdempotent, preconditionProvided: true, expectSuccess: true),
        Scenario(
            id: 3, description: "conditionally_idempotent_no_retries_when_precondition_is_absent",
            cases: cases(["return-503"], ["return-reset-connection"]),
            methods: conditionallyIdempotent, preconditionProvided: false, expectSuccess: false),
        Scenario(
            id: 5, description: "non-retryable errors",
            cases: cases(["return-400"], ["return-401"]),
            methods: methods("storage.objects.get", "storage.objects.list") + conditionallyIdempotent,
            preconditionProvided: false, expectSuccess: false),
        Scenario(
            id: 6, description: "mix_retryable_non_retryable_errors",
            cases: cases(["return-503", "return-400"], ["return-reset-connection", "return-401"]),
            methods: methods("storage.objects.get", "storage.objects.list") + conditionallyIdempotent,
            preconditionProvided: true, expectSuccess: false),
        Scenario(
            id: 7, description: "resumable_uploads_handle_complex_retries",
            cases: cases(
                ["return-reset-connection", "return-503"], ["return-408"], ["return-503-after-256K"],
                ["return-503-after-8192K", "return-408"]),
            methods: [Method(name: "storage.objects.insert", group: "storage.resumable.upload", resources: ["BUCKET"])],
            preconditionProvided: true, expectSuccess: true),
        Scenario(
            id: 8, description: "downloads_handle_complex_retries",
            cases: cases(["return-broken-stream", "return-broken-stream"], ["return-broken-stream-after-256K"]),
            methods: [
                Method(name: "storage.objects.get", group: "storage.objects.download", resources: ["BUCKET", "OBJECT"])
            ],
            preconditionProvided: false, expectSuccess: true),
    ]

    /// The conditionally idempotent methods the SDK implements (scenarios 2 and 3).
    private static let conditionallyIdempotent = methods(
        "storage.objects.compose", "storage.objects.copy", "storage.objects.delete", "storage.objects.insert",
        "storage.objects.patch", "storage.objects.rewrite", "storage.objects.update")

    private static func cases(_ lists: [String]...) -> [InstructionCase] {
        lists.map { InstructionCase(instructions: $0) }
    }

    private static func methods(_ names: String...) -> [Method] {
        names.map {
            Method(name: $0, group: nil, resources: $0 == "storage.objects.insert" ? ["BUCKET"] : ["BUCKET", "OBJECT"])
        }
    }
}
