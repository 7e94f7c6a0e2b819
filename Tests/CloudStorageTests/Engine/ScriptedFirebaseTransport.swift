import Foundation
import HTTP1
import Synchronization

@testable import CloudStorage
@testable import HTTPClient

/// A test double for the Firebase Storage v0 upload protocol: an in-memory
/// model of one bucket's `/v0/b/{bucket}/o` endpoints, strict about the
/// protocol (offsets, declared sizes, session states, multipart framing),
/// with faults scripted per request.
///
/// Unlike the Firebase emulator it honours `X-Goog-Upload-Offset`: bytes
/// below the committed offset are ignored, a gap is refused with 400.
/// Protocol compatibility with real servers is for integration tests; this
/// drives the engine through answers those servers will not give on demand.
final class ScriptedFirebaseTransport: HTTPTransport {
    let maximumBodyLength: Int64? = nil

    enum Fault: Sendable {
        /// Answer the next matching request with this status and no effect.
        case status(Int)
        /// Store this many bytes of the next upload, then fail as a broken connection.
        case commitThenDrop(Int)
        /// Act on the next matching request, then lose its answer (a broken connection).
        case dropAnswer
        /// Commit only this many bytes of the next upload and say so in
        /// `X-Goog-Upload-Size-Received`.
        case commitOnly(Int)
        /// Report a wrong CRC32C when the object is finalized.
        case wrongChecksum
        /// Hold the next matching request until the calling task is cancelled.
        case stall
        /// Forget the session: it answers 404 from now on.
        case forgetSession
        /// Mark the session cancelled before answering.
        case cancelSession
        /// Act on the next upload or query, then answer it as active with this
        /// `X-Goog-Upload-Size-Received`.
        case sizeReceived(String)
        /// Answer the next matching request `200` with its body cut after 10 bytes,
        /// having acted on it (`stores`) or not.
        case unreadableSuccess(stores: Bool)
    }

    struct Exchange: Sendable {
        var method: String
        var url: URL
        var headers: HTTPHeaders
        var body: Data
        var status: Int
        var command: String? { headers["X-Goog-Upload-Command"] }
    }

    private struct Session {
        var name: String
        var declaredSize: Int64
        var contentType: String
        var metadataJSON: Data
        var stored = Data()
        var status = "active"
    }

    private struct State {
        var sessions: [Int: Session] = [:]
        var sessionCount = 0
        var objects: [String: (data: Data, generation: Int64, checksum: UInt32)] = [:]
        var generation: Int64 = 100
        var finalized: Data?
        var faults: [(matches: @Sendable (HTTPRequest) -> Bool, fault: Fault)] = []
        var exchanges: [Exchange] = []
    }

    private let state = Mutex(State())
    /// Whether answers to upload commands carry `X-Goog-Upload-Size-Received`
    /// (the Firebase emulator's do not).
    private let reportsSizeOnUpload: Bool
    static let base = URL(string: "http://127.0.0.1:9")!

    init(reportsSizeOnUpload: Bool = false) {
        self.reportsSizeOnUpload = reportsSizeOnUpload
    }

    /// Queues a fault for the first later request that `matches`.
    func inject(_ fault: Fault, when matches: @escaping @Sendable (HTTPRequest) -> Bool) {
        state.withLock { $0.faults.append((matches, fault)) }
    }

    var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    var finalized: Data? { state.withLock { $0.finalized } }
    var sessionsStarted: Int { state.withLock { $0.sessionCount } }
    func object(_ name: String) -> Data? { state.withLock { $0.objects[name]?.data } }

    static func command(_ request: HTTPRequest) -> String? { request.headers["X-Goog-Upload-Command"] }
    static func isUpload(_ request: HTTPRequest) -> Bool { command(request)?.hasPrefix("upload") == true }
    static func isFinalUpload(_ request: HTTPRequest) -> Bool { command(request) == "upload, finalize" }
    static func isQuery(_ request: HTTPRequest) -> Bool { command(request) == "query" }

    func execute(_ request: HTTPRequest, progress: (@Sendable (Int64) -> Void)?) async throws -> HTTPResponse {
        try Task.checkCancellation()
        let body = try ScriptedGCSTransport.bytes(of: request.body)
        let fault = state.withLock { state in
            state.faults.firstIndex { $0.matches(request) }.map { state.faults.remove(at: $0).fault }
        }
        if case .stall? = fault {
            state.withLock {
                $0.exchanges.append(
                    Exchange(method: request.method, url: request.url, headers: request.headers, body: body, status: -2)
                )
            }
            try await Task.sleep(for: .seconds(600))
        }
        progress?(Int64(body.count))
        let result: Result<HTTPResponse, HTTPTransportError> = state.withLock { state in
            var result = Self.answer(request, body: body, fault: fault, reportsSize: reportsSizeOnUpload, &state)
            if case .unreadableSuccess(let stores)? = fault {
                let cut = Data(#"{"name": "o"#.utf8)
                if stores, case .success(var answer) = result {
                    answer.body = cut
                    result = .success(answer)
                } else if !stores {
                    result = .success(HTTPResponse(status: 200, headers: [:], body: cut))
                }
            }
            let status = (try? result.get())?.status ?? -1
            state.exchanges.append(
                Exchange(method: request.method, url: request.url, headers: request.headers, body: body, status: status)
            )
            return result
        }
        if case .dropAnswer? = fault {
            throw HTTPTransportError(kind: .connectionLost, message: "scripted lost answer")
        }
        return try result.get()
    }

    // MARK: The model

    private static func answer(
        _ request: HTTPRequest, body: Data, fault: Fault?, reportsSize: Bool, _ state: inout State
    ) -> Result<HTTPResponse, HTTPTransportError> {
        if case .unreadableSuccess(stores: false)? = fault {
            return .success(status(200))  // replaced by the cut answer; the request has no effect
        }
        if case .status(let status)? = fault {
            return .success(
                HTTPResponse(
                    status: status, headers: [:], body: Data("{\"error\":{\"message\":\"scripted \(status)\"}}".utf8)))
        }
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        let query = Dictionary(
            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        let path = components?.percentEncodedPath ?? ""
        guard path.hasPrefix("/v0/b/b/o") else { return .success(status(404)) }
        let objectName = path == "/v0/b/b/o" ? nil : path.dropFirst("/v0/b/b/o/".count).removingPercentEncoding

        switch request.method {
        case "GET":
            guard let name = objectName, let object = state.objects[name] else { return .success(status(404)) }
            return .success(
                HTTPResponse(
                    status: 200, headers: [:],
                    body: metadata(name: name, object.data, generation: object.generation, crc: object.checksum)))
        case "DELETE":
            guard let name = objectName, state.objects.removeValue(forKey: name) != nil else {
                return .success(status(404))
            }
            return .success(status(204))
        case "POST" where objectName == nil:
            break
        default:
            return .failure(HTTPTransportError(kind: .other, message: "unscripted \(request.method) \(path)"))
        }

        if let id = query["upload_id"].flatMap(Int.init) {
            let response = sessionAnswer(request, id: id, body: body, fault: fault, reportsSize: reportsSize, &state)
            guard response.status != -1 else {
                return .failure(HTTPTransportError(kind: .connectionLost, message: "scripted drop"))
            }
            return .success(response)
        }
        guard let name = query["name"], !name.isEmpty else { return .success(status(400)) }
        switch request.headers["X-Goog-Upload-Protocol"] {
        case "multipart":
            guard let media = parseMultipart(request, body) else { return .success(status(400)) }
            return .success(store(name: name, media, fault: fault, &state))
        case "resumable" where command(request) == "start":
            guard let size = request.headers["X-Goog-Upload-Header-Content-Length"].flatMap(Int64.init),
                let contentType = request.headers["X-Goog-Upload-Header-Content-Type"]
            else { return .success(status(400)) }
            state.sessionCount += 1
            state.sessions[state.sessionCount] = Session(
                name: name, declaredSize: size, contentType: contentType, metadataJSON: body)
            var url = URLComponents()
            url.scheme = request.url.scheme
            url.host = request.url.host
            url.port = request.url.port
            url.path = "/v0/b/b/o"
            url.queryItems = [
                URLQueryItem(name: "name", value: name),
                URLQueryItem(name: "upload_id", value: "\(state.sessionCount)"),
                URLQueryItem(name: "upload_protocol", value: "resumable"),
            ]
            return .success(
                HTTPResponse(
                    status: 200,
                    headers: [
                        "X-Goog-Upload-Status": "active", "X-Goog-Upload-URL": url.string ?? "",
                        "X-Goog-Upload-Chunk-Granularity": "262144",
                    ],
                    body: Data()))
        default:
            return .success(status(400))
        }
    }

    private static func sessionAnswer(
        _ request: HTTPRequest, id: Int, body: Data, fault: Fault?, reportsSize: Bool, _ state: inout State
    ) -> HTTPResponse {
        if case .forgetSession? = fault { state.sessions[id] = nil }
        if case .cancelSession? = fault { state.sessions[id]?.status = "cancelled" }
        guard var session = state.sessions[id] else { return status(404) }
        defer { state.sessions[id] = session }
        if case .sizeReceived(let value)? = fault {
            if command(request)?.hasPrefix("upload") == true,
                let offset = request.headers["X-Goog-Upload-Offset"].flatMap(Int.init), offset <= session.stored.count
            {
                session.stored.append(body.dropFirst(session.stored.count - offset))
            }
            return HTTPResponse(
                status: 200, headers: ["X-Goog-Upload-Status": "active", "X-Goog-Upload-Size-Received": value],
                body: Data())
        }
        switch command(request) {
        case "query":
            return HTTPResponse(
                status: 200,
                headers: [
                    "X-Goog-Upload-Status": session.status, "X-Goog-Upload-Size-Received": "\(session.stored.count)",
                ],
                body: Data())
        case "cancel":
            guard session.status == "active" else { return status(400) }
            session.status = "cancelled"
            return status(200)
        case "upload", "upload, finalize":
            let finalize = command(request) == "upload, finalize"
            if session.status == "final" && finalize {
                // A finalize repeated after its answer was lost: final, without metadata.
                return HTTPResponse(status: 200, headers: ["X-Goog-Upload-Status": "final"], body: Data())
            }
            guard session.status == "active",
                let offset = request.headers["X-Goog-Upload-Offset"].flatMap(Int.init),
                offset <= session.stored.count
            else { return status(400) }
            var incoming = body
            if case .commitThenDrop(let count)? = fault { incoming = body.prefix(count) }
            if case .commitOnly(let count)? = fault { incoming = body.prefix(count) }
            let skip = session.stored.count - offset
            if skip < incoming.count { session.stored.append(incoming.dropFirst(skip)) }
            if case .commitThenDrop? = fault {
                return status(-1)  // turned into a broken connection below
            }
            var partial = false
            if case .commitOnly? = fault { partial = true }
            guard finalize && !partial else {
                var headers: HTTPHeaders = ["X-Goog-Upload-Status": "active"]
                if reportsSize || partial { headers.add("X-Goog-Upload-Size-Received", "\(session.stored.count)") }
                return HTTPResponse(status: 200, headers: headers, body: Data())
            }
            guard Int64(session.stored.count) == session.declaredSize else { return status(400) }
            session.status = "final"
            let stored = session.stored
            state.finalized = stored
            let answer = store(name: session.name, stored, fault: fault, &state)
            var headers = answer.headers
            headers.add("X-Goog-Upload-Status", "final")
            return HTTPResponse(status: answer.status, headers: headers, body: answer.body)
        default:
            return status(400)
        }
    }

    private static func store(name: String, _ data: Data, fault: Fault?, _ state: inout State) -> HTTPResponse {
        state.generation += 1
        var crc = CRC32C.checksum(data)
        if case .wrongChecksum? = fault { crc ^= 1 }
        state.objects[name] = (data, state.generation, crc)
        return HTTPResponse(
            status: 200, headers: [:], body: metadata(name: name, data, generation: state.generation, crc: crc))
    }

    /// Metadata in the Firebase emulator's shape: sizes and generations as
    /// strings, CRC32C as a decimal string, comma-separated download tokens.
    static func metadata(name: String, _ data: Data, generation: Int64, crc: UInt32) -> Data {
        let json = """
            {"name":"\(name)","bucket":"b","generation":"\(generation)","metageneration":"1",\
            "contentType":"application/octet-stream","timeCreated":"2024-05-01T10:00:00.000Z",\
            "updated":"2024-05-01T10:00:00.000Z","storageClass":"STANDARD","size":"\(data.count)",\
            "md5Hash":"","contentEncoding":"identity","contentDisposition":"inline","crc32c":"\(crc)",\
            "etag":"x","downloadTokens":"token-1,token-2","metadata":{}}
            """
        return Data(json.utf8)
    }

    /// The media of a two-part multipart/related body, or nil when its
    /// framing is not exactly the one the Firebase SDKs send.
    static func parseMultipart(_ request: HTTPRequest, _ body: Data) -> Data? {
        guard let type = request.headers["Content-Type"], type.hasPrefix("multipart/related; boundary="),
            let boundary = type.split(separator: "=", maxSplits: 1).last.map(String.init)
        else { return nil }
        let delimiter = Data("--\(boundary)".utf8)
        let jsonHead = Data(
            "\(String(decoding: delimiter, as: UTF8.self))\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
                .utf8)
        guard body.starts(with: jsonHead) else { return nil }
        let afterHead = body[(body.startIndex + jsonHead.count)...]
        guard let second = afterHead.firstRange(of: Data("\r\n".utf8) + delimiter + Data("\r\n".utf8)) else {
            return nil
        }
        let json = afterHead[..<second.lowerBound]
        guard (try? JSONSerialization.jsonObject(with: json)) != nil else { return nil }
        let rest = afterHead[second.upperBound...]
        guard let headerEnd = rest.firstRange(of: Data("\r\n\r\n".utf8)),
            String(decoding: rest[..<headerEnd.lowerBound], as: UTF8.self).hasPrefix("Content-Type: ")
        else { return nil }
        let closing = Data("\r\n".utf8) + delimiter + Data("--".utf8)
        let media = rest[headerEnd.upperBound...]
        guard media.count >= closing.count, media.suffix(closing.count) == closing else { return nil }
        return Data(media.dropLast(closing.count))
    }

    private static func status(_ code: Int) -> HTTPResponse {
        HTTPResponse(status: code, headers: [:], body: Data())
    }
}
