import Foundation

/// The baseline: a GCS resumable upload done by `curl`, without the SDK.
///
/// One `POST …?uploadType=resumable` opens the session and one
/// `PUT <session>` with `curl -T <file>` and
/// `Content-Range: bytes 0-(n-1)/n` sends the whole file, which is what
/// DESIGN.md compares the SDK against. Both requests are part of the timing,
/// as the SDK makes both too.
struct CurlBaseline: Sendable {
    /// The curl executable.
    let curl: String
    let baseURL: URL
    let bucket: String
    /// With `--tls`: the CA file passed as `--cacert` (full verification, as every client gets).
    var caFile: String? = nil

    /// The command line of the timed PUT, for the report.
    static let commandTemplate = "curl -sS -X PUT -T <file> -H 'Content-Range: bytes 0-(n-1)/n' <session>"
    /// The same over https.
    static let tlsCommandTemplate =
        "curl -sS --cacert Tests/TLSTestCertificates/test-ca.pem -X PUT -T <file> -H 'Content-Range: bytes 0-(n-1)/n' <https session>"

    /// What one baseline upload stored and what the two curl processes cost.
    struct Result: Sendable {
        var facts: ObjectFacts
        /// User + system CPU seconds of both curl processes.
        var cpuSeconds: Double
        /// Context switches of both curl processes.
        var contextSwitches: Int64
    }

    /// Uploads `file` (of `size` bytes) as `object`.
    ///
    /// - Returns: The facts from the object resource the final PUT returned, and curl's usage.
    /// - Throws: ``BenchmarkError`` when curl fails or the server refuses.
    func upload(file: URL, size: Int64, object: String) async throws -> Result {
        let start = baseURL.absoluteString + "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=\(object)"
        let trust = caFile.map { ["--cacert", $0] } ?? []
        let opened = try await ProcessRunner.run(
            curl,
            trust + [
                "-sS", "--max-time", "60", "-X", "POST", "-D", "-", "-o", "/dev/null",
                "-H", "Content-Type: application/json; charset=UTF-8",
                "-H", "X-Upload-Content-Length: \(size)",
                "--data-binary", "{\"name\":\"\(object)\"}",
                start,
            ]
        )
        guard opened.status == 0 else {
            throw BenchmarkError("curl could not open an upload session (exit \(opened.status)): \(opened.errorText)")
        }
        let headers = String(decoding: opened.standardOutput, as: UTF8.self)
        guard let session = Self.header("location", in: headers) else {
            throw BenchmarkError("the server opened no upload session for curl; response headers:\n\(headers)")
        }
        let sent = try await ProcessRunner.run(
            curl,
            trust + [
                "-sS", "--max-time", "600", "-X", "PUT", "-T", file.path,
                "-H", "Content-Range: bytes 0-\(size - 1)/\(size)",
                "-w", "\n%{http_code}", session,
            ]
        )
        guard sent.status == 0 else {
            throw BenchmarkError("curl's PUT failed (exit \(sent.status)): \(sent.errorText)")
        }
        let text = String(decoding: sent.standardOutput, as: UTF8.self)
        guard let newline = text.lastIndex(of: "\n"), let status = Int(text[text.index(after: newline)...]) else {
            throw BenchmarkError("curl printed no HTTP status for its PUT")
        }
        let body = Data(text[..<newline].utf8)
        guard status == 200 || status == 201 else {
            throw BenchmarkError(
                "the server answered curl's PUT with HTTP \(status): \(String(decoding: body.prefix(512), as: UTF8.self))"
            )
        }
        return Result(
            facts: try ObjectFacts(objectResource: body),
            cpuSeconds: opened.cpuSeconds + sent.cpuSeconds,
            contextSwitches: opened.contextSwitches + sent.contextSwitches
        )
    }

    /// The value of the last header named `name` (case-insensitive) in a raw header block.
    private static func header(_ name: String, in block: String) -> String? {
        var found: String?
        for line in block.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name else { continue }
            found = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return found
    }
}
