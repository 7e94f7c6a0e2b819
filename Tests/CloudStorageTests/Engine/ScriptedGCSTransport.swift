import Foundation
import HTTP1
import Synchronization

@testable import CloudStorage
@testable import HTTPClient

/// A test double for the engine's protocol state machine: an in-memory model
/// of one GCS bucket's upload endpoints with faults scripted per request.
/// Protocol compatibility is proven against real servers; this exists to
/// drive the engine through answers those servers will not give on demand.
final class ScriptedGCSTransport: HTTPTransport {
    enum Fault: Sendable {
        /// Answer the next matching request with this status and no effect.
        case status(Int)
        /// Store this many bytes of the next PUT, then fail as a broken connection.
        case commitThenDrop(Int)
        /// Forget every stored byte and answer the next query with a 308 without Range.
        case forgetEverything
        /// Report a wrong CRC32C when the object is finalized.
        case wrongChecksum
        /// Claim more bytes than the object has on the next query.
        case overclaim
        /// Act on the next request, then answer `308` with this `Range` header (nil: none).
        case range(String?)
    }

    struct Exchange: Sendable {
        var method: String
        var url: URL
        var headers: HTTPHeaders
        var status: Int
    }

    private struct State {
        var stored = Data()
        var sessions = 0
        var finalized: Data?
        var faults: [(matches: @Sendable (HTTPRequest) -> Bool, fault: Fault)] = []
        var exchanges: [Exchange] = []
    }

    private let state = Mutex(State())
    /// Random delay before and after the server acts on a request, so that
    /// pauses and cancellations land at every point of an exchange.
    private let latency: ClosedRange<Int>?
    static let base = URL(string: "http://127.0.0.1:9")!

    let maximumBodyLength: Int64?

    /// - Parameters:
    ///   - latencyMicroseconds: Delay range applied twice per request, or nil for none.
    ///   - maximumBodyLength: The longest body the double claims to carry.
    init(latencyMicroseconds: ClosedRange<Int>? = nil, maximumBodyLength: Int64? = nil) {
        latency = latencyMicroseconds
        self.maximumBodyLength = maximumBodyLength
    }

    private func delay() async throws {
        if let latency {
            try await Task.sleep(for: .microseconds(Int.random(in: latency)))
        }
    }

    /// Queues a fault for the first later request that `matches`.
    func inject(_ fault: Fault, when matches: @escaping @Sendable (HTTPRequest) -> Bool) {
        state.withLock { $0.faults.append((matches, fault)) }
    }

    var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    var finalized: Data? { state.withLock { $0.finalized } }
    /// Whether the newest session was deleted with a DELETE.
    var lastSessionDeleted: Bool {
        state.withLock { state in
            state.exchanges.contains { $0.method == "DELETE" && $0.url.path == "/session/\(state.sessions)" }
        }
    }
    var sessionsStarted: Int { state.withLock { $0.sessions } }

    func execute(_ request: HTTPRequest, progress: (@Sendable (Int64) -> Void)?) async throws -> HTTPResponse {
        try Task.checkCancellation()
        try await delay()
        let body = try Self.bytes(of: request.body)
        progress?(Int64(body.count))
        let result: Result<HTTPResponse, HTTPTransportError> = state.withLock { state in
            let fault = state.faults.firstIndex { $0.matches(request) }.map { state.faults.remove(at: $0).fault }
            let result = Self.answer(request, body: body, fault: fault, state: &state)
            let status = (try? result.get())?.status ?? -1
            state.exchanges.append(
                Exchange(method: request.method, url: request.url, headers: request.headers, status: status))
            return result
        }
        // The server has acted; a cancellation now loses only the answer, as on a real network.
        try await delay()
        return try result.get()
    }

    private static func answer(
        _ request: HTTPRequest, body: Data, fault: Fault?, state: inout State
    ) -> Result<HTTPResponse, HTTPTransportError> {
        if case .status(let status)? = fault {
            return .success(
                HTTPResponse(
                    status: status, headers: [:], body: Data("{\"error\":{\"message\":\"scripted \(status)\"}}".utf8)))
        }
        let query = request.url.query ?? ""
        switch request.method {
        case "POST" where query.contains("uploadType=resumable"):
            state.sessions += 1
            state.stored = Data()
            return .success(
                HTTPResponse(
                    status: 200, headers: ["Location": "http://127.0.0.1:9/session/\(state.sessions)"], body: Data()))
        case "POST":
            return .failure(HTTPTransportError(kind: .other, message: "multipart not scripted"))
        case "DELETE" where request.url.path.hasPrefix("/session"):
            return .success(HTTPResponse(status: 499, headers: [:], body: Data()))
        case "DELETE":
            return .success(HTTPResponse(status: 204, headers: [:], body: Data()))
        case "PUT":
            guard request.url.path == "/session/\(state.sessions)" else {
                return .success(HTTPResponse(status: 404, headers: [:], body: Data()))
            }
            let range = request.headers["Content-Range"] ?? ""
            if case .forgetEverything? = fault { state.stored = Data() }
            if range == "bytes */*" {
                if case .range(let header)? = fault {
                    return .success(
                        HTTPResponse(status: 308, headers: header.map { ["Range": $0] } ?? [:], body: Data()))
                }
                if case .overclaim? = fault {
                    return .success(rangeAnswer(committed: state.stored.count + 1_000_000))
                }
                return .success(rangeAnswer(committed: state.stored.count))
            }
            // "bytes a-b/total" or "bytes a-b/*"
            let spec = range.dropFirst("bytes ".count)
            let parts = spec.split(separator: "/")
            let first = Int(parts[0].split(separator: "-")[0]) ?? 0
            let total = parts.count > 1 ? Int(parts[1]) : nil
            guard first <= state.stored.count else {
                return .success(HTTPResponse(status: 400, headers: [:], body: Data("gap".utf8)))
            }
            var incoming = body
            if case .commitThenDrop(let count)? = fault { incoming = body.prefix(count) }
            let skip = state.stored.count - first
            if skip < incoming.count { state.stored.append(incoming.dropFirst(skip)) }
            if case .commitThenDrop? = fault {
                return .failure(HTTPTransportError(kind: .connectionLost, message: "scripted drop"))
            }
            if case .range(let header)? = fault {
                return .success(HTTPResponse(status: 308, headers: header.map { ["Range": $0] } ?? [:], body: Data()))
            }
            if let total, state.stored.count == total {
                state.finalized = state.stored
                var crc = CRC32C.checksum(state.stored)
                if case .wrongChecksum? = fault { crc ^= 1 }
                let json =
                    "{\"name\":\"obj\",\"bucket\":\"b\",\"size\":\"\(total)\",\"generation\":\"7\",\"crc32c\":\"\(CRC32CEncoding.base64(crc))\"}"
                return .success(HTTPResponse(status: 200, headers: [:], body: Data(json.utf8)))
            }
            return .success(rangeAnswer(committed: state.stored.count))
        default:
            return .failure(HTTPTransportError(kind: .other, message: "unscripted \(request.method)"))
        }
    }

    private static func rangeAnswer(committed: Int) -> HTTPResponse {
        HTTPResponse(status: 308, headers: committed > 0 ? ["Range": "bytes=0-\(committed - 1)"] : [:], body: Data())
    }

    /// The bytes of a body, read the way a transport would.
    static func bytes(of body: HTTPRequestBody) throws -> Data {
        var data = Data()
        for segment in body.segments {
            switch segment {
            case .data(let bytes):
                data.append(bytes)
            case .fileRegion(let file, let offset, let length):
                var chunk = Data(count: Int(length))
                try chunk.withUnsafeMutableBytes {
                    try file.readExactly(into: $0.baseAddress!, count: Int(length), at: offset)
                }
                data.append(chunk)
            }
        }
        return data
    }
}
