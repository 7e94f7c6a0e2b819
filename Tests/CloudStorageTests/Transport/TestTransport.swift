import Foundation
import HTTP1
import HTTPClient
import Synchronization

/// The one configurable test double of ``HTTPTransport``: it hands each request to a wrapped
/// transport (or answers it itself), records every request as sent with its answer's status,
/// and counts the requests in flight.
///
/// A test shapes it with hooks, added at any time and run in the order added:
/// 1. ``rewrite(_:)`` changes a request before it goes (a fault plan's header, a corrupting
///    sink), or acts just before it goes (another writer at that exact moment);
/// 2. the request, as rewritten, is recorded in ``sent`` and gets its index;
/// 3. ``answer(_:)`` may answer it instead of the wrapped transport (a scripted answer, or an
///    injected failure thrown), chosen by the request or its index; the first that answers
///    wins, and a request nothing answers goes to the wrapped transport;
/// 4. ``inspect(_:)`` sees, and may change, every answer before the caller gets it;
/// 5. the answer's status is recorded.
///
/// Wrapping a transport, it is transparent: the same ``maximumBodyLength``, the wrapped
/// transport's ``carrier(for:)`` (so the engine reads the capabilities of the transport that
/// really moves the bytes), and ``shutdown()`` passed on. Without one, every request must be
/// answered by a hook, or it fails with ``HTTPTransportError/Kind/other``.
///
/// ```swift
/// let transport = TestTransport(wrapping: route.makeTransport(for: endpoint))
/// transport.answer { _, index in index == 0 ? TestTransport.response(503) : nil }
/// // … run the operation through a Storage on `transport` …
/// #expect(transport.sent.map(\.status) == [503, 200])
/// ```
final class TestTransport: HTTPTransport {
    /// One request as it went out, and the status it was answered with.
    struct Sent: Sendable, CustomStringConvertible {
        /// Its place among every request this transport was given, from 0.
        var index: Int
        /// The request as it went out: after every ``TestTransport/rewrite(_:)``.
        var request: HTTPRequest
        /// The status of its answer, after every ``TestTransport/inspect(_:)``; nil while it is
        /// unanswered, and for a request that failed below HTTP.
        var status: Int?

        /// The request's method.
        var method: String { request.method }
        /// The request's URL.
        var url: URL { request.url }

        /// The value of the request's header field `name`.
        func header(_ name: String) -> String? { request.headers[name] }

        var description: String {
            let range = header("Content-Range") ?? header("Range") ?? ""
            return "\(method) \(range) → \(status.map(String.init) ?? "-")"
        }
    }

    /// Changes a request before it goes; it may suspend (to act at that moment) or throw (a
    /// failure before anything is sent).
    typealias Rewrite = @Sendable (_ request: inout HTTPRequest) async throws -> Void
    /// Answers the request at `index` itself, returning the answer or throwing the failure, or
    /// returns nil to let the next hook or the wrapped transport answer it.
    typealias Answer = @Sendable (_ request: HTTPRequest, _ index: Int) async throws -> HTTPResponse?
    /// Sees, and may change, the answer a request got.
    typealias Inspect = @Sendable (_ request: HTTPRequest, _ response: inout HTTPResponse) -> Void

    private struct Hooks {
        var rewrites: [Rewrite] = []
        var answers: [Answer] = []
        var inspections: [Inspect] = []
    }

    private struct Counts {
        var inFlight = 0
        var highWater = 0
    }

    private let inner: (any HTTPTransport)?
    private let ownCapabilities: HTTPTransportCapabilities
    private let hooks = Mutex(Hooks())
    private let log = Mutex<[Sent]>([])
    private let counts = Mutex(Counts())

    let maximumBodyLength: Int64?

    /// A transport that passes every request nothing else answers to `inner`.
    init(wrapping inner: any HTTPTransport) {
        self.inner = inner
        maximumBodyLength = inner.maximumBodyLength
        ownCapabilities = inner.capabilities
    }

    /// A transport that carries nothing itself: every request must be answered by a hook.
    ///
    /// - Parameters:
    ///   - maximumBodyLength: The longest body it claims to carry, nil for any.
    ///   - capabilities: What it claims to do beyond the protocol's guarantees.
    init(maximumBodyLength: Int64? = nil, capabilities: HTTPTransportCapabilities = []) {
        inner = nil
        self.maximumBodyLength = maximumBodyLength
        ownCapabilities = capabilities
    }

    /// The wrapped transport's, or those given.
    var capabilities: HTTPTransportCapabilities { ownCapabilities }

    /// The wrapped transport's carrier, whose capabilities the requests get; itself without one.
    func carrier(for url: URL) -> any HTTPTransport {
        inner?.carrier(for: url) ?? self
    }

    /// Every request sent so far, in the order they went out.
    var sent: [Sent] { log.withLock { $0 } }
    /// How many requests are in this transport now, answered or not.
    var inFlight: Int { counts.withLock { $0.inFlight } }
    /// The most requests that were in this transport at once.
    var highWater: Int { counts.withLock { $0.highWater } }

    /// Runs `change` on every later request before it goes, after the rewrites added before it.
    func rewrite(_ change: @escaping Rewrite) {
        hooks.withLock { $0.rewrites.append(change) }
    }

    /// Lets `answer` answer later requests before the wrapped transport, after the answers
    /// added before it.
    func answer(_ answer: @escaping Answer) {
        hooks.withLock { $0.answers.append(answer) }
    }

    /// Runs `inspection` on every later answer, after the inspections added before it.
    func inspect(_ inspection: @escaping Inspect) {
        hooks.withLock { $0.inspections.append(inspection) }
    }

    /// An answer of `status` whose body is `body`'s UTF-8 bytes, for ``answer(_:)``.
    static func response(_ status: Int, headers: HTTPHeaders = [:], body: String = "") -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: Data(body.utf8))
    }

    func execute(
        _ request: HTTPRequest, progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse {
        counts.withLock {
            $0.inFlight += 1
            $0.highWater = max($0.highWater, $0.inFlight)
        }
        defer { counts.withLock { $0.inFlight -= 1 } }
        // The hooks run outside the lock: they may suspend, and may add hooks of their own.
        let hooks = hooks.withLock { $0 }
        var request = request
        for rewrite in hooks.rewrites {
            try await rewrite(&request)
        }
        let sending = request
        let index = log.withLock { log in
            log.append(Sent(index: log.count, request: sending, status: nil))
            return log.count - 1
        }
        var response = try await answer(request, index: index, hooks.answers, progress: progress)
        for inspection in hooks.inspections {
            inspection(request, &response)
        }
        let status = response.status
        log.withLock { $0[index].status = status }
        return response
    }

    /// The first answer of `answers`, or else the wrapped transport's.
    private func answer(
        _ request: HTTPRequest, index: Int, _ answers: [Answer], progress: (@Sendable (Int64) -> Void)?
    ) async throws -> HTTPResponse {
        for answer in answers {
            if let response = try await answer(request, index) { return response }
        }
        guard let inner else {
            throw HTTPTransportError(kind: .other, message: "unscripted \(request.method) \(request.url)")
        }
        return try await inner.execute(request, progress: progress)
    }

    /// Shuts the wrapped transport down.
    func shutdown() {
        inner?.shutdown()
    }
}
