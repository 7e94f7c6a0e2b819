import CloudStorage
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cloud-storage sign`: arguments checked before anything happens, and the URL printed.
@Suite("cloud-storage sign")
struct SignCommandTests {
    static let keyFile = TestCredentials.url("conformance/test_service_account.not-a-test.json").path
    static let email = "test-iam-credentials@dummy-project-id.iam.gserviceaccount.com"

    /// Runs `sign` with `words`, returning the status and what it printed.
    static func sign(_ words: [String], environment: [String: String] = [:]) async throws -> (ExitCode, [String]) {
        let command = try SignCommand(words, environment: environment)
        var lines: [String] = []
        let status = await command.run { lines.append($0) }
        return (status, lines)
    }

    static func query(_ url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test(
        "bad arguments exit 2 before anything is signed or contacted",
        arguments: [
            [],
            ["bucket/path"],
            ["gs:///path"],
            ["gs://b/p", "gs://b/q"],
            ["gs://b/p", "--method", "PATCH"],
            ["gs://b/p", "--expires", "0"],
            ["gs://b/p", "--expires", "8d"],
            ["gs://b/p", "--expires", "604801"],
            ["gs://b/p", "--expires", "15x"],
            ["gs://b/p", "--expires", "-5m"],
            ["gs://b/p", "--expires", "99999999999999999999d"],
            ["gs://b/p", "--header", "no-colon"],
            ["gs://b/p", "--header", ":value"],
            ["gs://b/p", "--header", "A:1", "--header", "a:2"],
            ["gs://b/p", "--endpoint", "ftp://example.com"],
            ["gs://b/p", "--key-file", "/nonexistent/key.json"],
            ["gs://b/p", "--key-file", TestCredentials.url("service-account.pub").path],
            ["gs://b/p", "--unknown"],
        ])
    func badArguments(_ words: [String]) async {
        // Refused while the words are read, before any signing.
        #expect(throws: UsageError.self) { try SignCommand(["--key-file", Self.keyFile] + words, environment: [:]) }
        let status = await runCommandLine(["sign", "--key-file", Self.keyFile] + words, environment: [:])
        #expect(status == .usage)
    }

    @Test("a key file whose key cannot be used exits 2")
    func unusableKey() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("key.json")
        try Data(#"{"client_email":"a@b.iam.gserviceaccount.com","private_key":"not a key"}"#.utf8).write(to: file)
        #expect(await runCommandLine(["sign", "--key-file", file.path, "gs://b/p"], environment: [:]) == .usage)
    }

    @Test("--method PUT --expires 15m prints a path-style URL for Google Cloud Storage, valid 900 s")
    func printsURL() async throws {
        let (status, lines) = try await Self.sign(
            ["gs://my-bucket/dir/a b.txt", "--method", "put", "--expires", "15m", "--key-file", Self.keyFile])
        #expect(status == .success)
        #expect(lines.count == 1)
        let url = try #require(URL(string: lines.first ?? ""))
        #expect(url.absoluteString.hasPrefix("https://storage.googleapis.com/my-bucket/dir/a%20b.txt?"))
        let query = Self.query(url)
        #expect(query["X-Goog-Algorithm"] == "GOOG4-RSA-SHA256")
        #expect(query["X-Goog-Expires"] == "900")
        #expect(query["X-Goog-Credential"]?.hasPrefix(Self.email + "/") == true)
        #expect(query["X-Goog-SignedHeaders"] == "host")
        #expect(query["X-Goog-Signature"]?.count == 512)
    }

    @Test("expiry units, headers, POST's resumable header, virtual-hosted style and the emulator variable")
    func options() async throws {
        for (text, seconds) in [("900", "900"), ("90s", "90"), ("2h", "7200"), ("7d", "604800")] {
            let (_, lines) = try await Self.sign(["gs://b/p", "--expires", text, "--key-file", Self.keyFile])
            #expect(Self.query(try #require(URL(string: lines.first ?? "")))["X-Goog-Expires"] == seconds)
        }
        let (_, post) = try await Self.sign([
            "gs://b/p", "--method", "POST", "--header", "Content-Type: text/plain", "--virtual-hosted",
            "--key-file", Self.keyFile,
        ])
        let postURL = try #require(URL(string: post.first ?? ""))
        #expect(postURL.absoluteString.hasPrefix("https://b.storage.googleapis.com/p?"))
        #expect(Self.query(postURL)["X-Goog-SignedHeaders"] == "content-type;host;x-goog-resumable")
        let (_, emulator) = try await Self.sign(
            ["gs://b/p", "--key-file", Self.keyFile], environment: ["STORAGE_EMULATOR_HOST": "127.0.0.1:4443"])
        #expect(emulator.first?.hasPrefix("http://127.0.0.1:4443/b/p?") == true)
        let (_, endpoint) = try await Self.sign(
            ["gs://b/p", "--key-file", Self.keyFile, "--endpoint", "http://localhost:9000"],
            environment: ["STORAGE_EMULATOR_HOST": "127.0.0.1:4443"])
        #expect(endpoint.first?.hasPrefix("http://localhost:9000/b/p?") == true)
    }

    @Test("help sign and sign --help print the usage and succeed")
    func help() async {
        #expect(await runCommandLine(["help", "sign"], environment: [:]) == .success)
        #expect(await runCommandLine(["sign", "--help"], environment: [:]) == .success)
    }
}
