import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// A request over in-memory bytes, delivered in `readSize` pieces.
final class TestRequest: ServerRequest {
    let method: String
    let target: String
    let path: String
    let queryItems: [(name: String, value: String)]
    let headers: HTTPHeaders
    let contentLength: Int64?
    private(set) var bodyBytesRead: Int64 = 0
    private let body: [UInt8]
    private let readSize: Int
    /// Throw a connection error once this many body bytes have been read.
    private let breakAfter: Int?

    init(
        _ method: String, _ target: String, headers: HTTPHeaders = [:], body: [UInt8] = [], chunked: Bool = false,
        readSize: Int = 100_000, breakAfter: Int? = nil, declaredLength: Int64? = nil
    ) {
        self.method = method
        self.target = target
        let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(pieces[0])
        var items: [(name: String, value: String)] = []
        if pieces.count > 1 {
            for pair in pieces[1].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
                items.append((name, value))
            }
        }
        queryItems = items
        var headers = headers
        if headers["Host"] == nil { headers.add("Host", "emulator.test") }
        self.headers = headers
        // A declared length that differs from the body's plays a client that lies about its size.
        contentLength = chunked ? nil : (declaredLength ?? Int64(body.count))
        self.body = body
        self.readSize = readSize
        self.breakAfter = breakAfter
    }

    struct ConnectionBroke: Error {}

    func readBody(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let breakAfter, bodyBytesRead >= Int64(breakAfter) { throw ConnectionBroke() }
        var count = min(buffer.count, readSize, body.count - Int(bodyBytesRead))
        if let breakAfter { count = min(count, breakAfter - Int(bodyBytesRead)) }
        guard count > 0 else { return 0 }
        body.withUnsafeBytes { raw in
            buffer.copyMemory(
                from: UnsafeRawBufferPointer(rebasing: raw[Int(bodyBytesRead)..<Int(bodyBytesRead) + count]))
        }
        bodyBytesRead += Int64(count)
        return count
    }
}

/// Records what the application did.
final class TestResponder: ServerResponder {
    var status: Int?
    var headers = HTTPHeaders()
    var body = Data()
    var resets = 0
    var closes = 0
    /// `holdConnection` calls (the connection would be held until the client closes it).
    var holds = 0
    /// Holds after a streamed answer's head (counted here, not in `holds` or `answers`).
    var midBodyHolds = 0
    var answers = 0
    /// Resets after a streamed answer's head (counted here, not in `resets` or `answers`).
    var midBodyResets = 0
    /// Closes after an answer's head (a broken stream; counted here, not in `closes` or `answers`).
    var midBodyCloses = 0
    /// The `Content-Length` a streamed answer announced.
    var announcedLength: Int64?

    func respond(status: Int, headers: HTTPHeaders, body: Data) throws {
        answers += 1
        self.status = status
        self.headers = headers
        self.body = body
    }

    func respondStreaming(
        status: Int, headers: HTTPHeaders, contentLength: Int64?,
        writeBody: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        answers += 1
        self.status = status
        self.headers = headers
        announcedLength = contentLength
        body = Data()
        try writeBody { body.append(contentsOf: $0) }
        if let contentLength { #expect(Int64(body.count) == contentLength) }
    }

    func resetConnection() {
        if answers > 0 {
            // The head went out; the reset cuts the body short.
            answers -= 1
            midBodyResets += 1
        } else {
            resets += 1
        }
    }
    func closeConnection() {
        if answers > 0 {
            // The head went out; the close cuts the body short (or ends a whole answer's connection).
            answers -= 1
            midBodyCloses += 1
        } else {
            closes += 1
        }
    }
    func holdConnection(limit: Duration) {
        if answers > 0 {
            // The head went out; the hold cuts the body short.
            answers -= 1
            midBodyHolds += 1
        } else {
            holds += 1
        }
    }

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }

    var errorMessage: String {
        ((json["error"] as? [String: Any])?["message"] as? String) ?? ""
    }
}

/// An application with an in-memory harness.
struct Harness {
    let app: EmulatorApplication
    let store: any ObjectStore

    init(
        store: any ObjectStore = MemoryObjectStore(), token: String? = nil, acceptOwner: Bool = false,
        autoCreate: Bool = true, faults: [String] = [],
        adjust: (inout EmulatorApplication.Settings) -> Void = { _ in }
    ) throws {
        var settings = EmulatorApplication.Settings()
        settings.requiredToken = token
        settings.acceptsOwner = acceptOwner
        adjust(&settings)
        settings.autoCreateBuckets = autoCreate
        self.store = store
        app = try EmulatorApplication(store: store, settings: settings, globalFaults: faults)
    }

    @discardableResult
    func send(
        _ method: String, _ target: String, headers: HTTPHeaders = [:], body: [UInt8] = [], chunked: Bool = false,
        readSize: Int = 100_000, breakAfter: Int? = nil, declaredLength: Int64? = nil
    ) -> TestResponder {
        let request = TestRequest(
            method, target, headers: headers, body: body, chunked: chunked, readSize: readSize, breakAfter: breakAfter,
            declaredLength: declaredLength)
        let responder = TestResponder()
        app.handle(request, responder)
        #expect(
            responder.answers + responder.resets + responder.closes + responder.midBodyResets + responder.holds
                + responder.midBodyHolds + responder.midBodyCloses == 1,
            "exactly one outcome")
        return responder
    }

    func send(_ method: String, _ target: String, headers: HTTPHeaders = [:], json: [String: Any]) -> TestResponder {
        let body = (try? JSONSerialization.data(withJSONObject: json)) ?? Data()
        var headers = headers
        headers.add("Content-Type", "application/json")
        return send(method, target, headers: headers, body: Array(body))
    }

    /// Starts a GCS resumable session; returns the session path+query.
    func startGCSSession(
        bucket: String = "bkt", name: String, metadata: [String: Any] = [:], headers: HTTPHeaders = [:]
    ) -> String {
        let response = send(
            "POST", "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=\(URLText.encodeComponent(name))",
            headers: headers, json: metadata)
        #expect(response.status == 200)
        let location = response.headers["Location"] ?? ""
        #expect(
            location.hasPrefix("http://emulator.test/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&upload_id="))
        return String(location.dropFirst("http://emulator.test".count))
    }

    func object(_ bucket: String, _ name: String) -> Data? {
        guard let record = store.record(bucket: bucket, name: name) else { return nil }
        return try? store.readAll(record)
    }
}

/// Deterministic test bytes.
func testBytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    var state = UInt32(seed) &* 2_654_435_761 &+ 1
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

func crc32cBase64(_ bytes: [UInt8]) -> String {
    var checksums = Checksums()
    bytes.withUnsafeBytes { checksums.update($0) }
    return ChecksumEncoding.base64(crc32c: checksums.crc32c)
}

func md5Base64(_ bytes: [UInt8]) -> String {
    Data(MD5.digest(bytes)).base64EncodedString()
}

let kib256 = 262_144
