import Foundation
import HTTP1
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``HTTPTransport`` over Foundation's `URLSession`: available everywhere,
/// and the one used for `https://` on Apple platforms and wherever the native
/// transport cannot load OpenSSL 3.
///
/// One session serves every ``Storage``; each request carries its own idle
/// time-out.
///
/// On Apple platforms bodies of any length stream through
/// ``RequestBodyStream``, which reads file regions with `pread` straight into
/// the buffer `URLSession` hands it. swift-corelibs-foundation, however, sends
/// every streamed body with chunked transfer coding, and adding our
/// `Content-Length` to that makes a request that HTTP forbids (RFC 9112
/// §6.2) and strict servers refuse. So on Linux a body goes as one `Data` of
/// known length, gathered off the cooperative pool, and
/// ``maximumBodyLength`` bounds it (and with it the memory a request takes).
///
/// What comes back is bounded too: a response collected into memory may not
/// exceed ``maxResponseBodyBytes`` (the native transport's limit, with the
/// same error), an announced `Content-Length` above it is refused before a
/// body byte is taken, and ``URLSessionDelegateQueue`` holds the session back
/// while its callbacks, a response sink's included, fall behind. Known gap:
/// swift-corelibs-foundation itself gathers the body of a 301–308 answer
/// before telling the delegate anything, beyond any limit set here.
final class URLSessionTransport: HTTPTransport {
    static let shared = URLSessionTransport()

    #if canImport(FoundationNetworking)
    /// 32 MiB: large enough that round trips cost little next to the bytes,
    /// small enough to hold in memory per upload.
    let maximumBodyLength: Int64? = 32 * 1024 * 1024
    #else
    let maximumBodyLength: Int64? = nil
    #endif

    /// The largest response body collected into memory, the native
    /// transport's limit: storage answers are small JSON documents, and a
    /// longer one fails the request instead of growing the process.
    let maxResponseBodyBytes: Int
    /// Where the session's callbacks wait; it bounds how many may.
    let delegateQueue: URLSessionDelegateQueue
    private let session: URLSession
    private let router: TaskRouter

    /// - Parameters:
    ///   - maxResponseBodyBytes: The largest response body held in memory.
    ///   - maxPendingCallbacks: The most session callbacks (each at most one
    ///     libcurl buffer of body bytes) that may wait for the delegate queue.
    init(
        maxResponseBodyBytes: Int = NativeHTTPTransport.Configuration().maxResponseBodyBytes,
        maxPendingCallbacks: Int = 256
    ) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        let router = TaskRouter()
        let queue = URLSessionDelegateQueue(limit: maxPendingCallbacks)
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.delegateQueue = queue
        self.router = router
        self.session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
    }

    /// The `timeoutInterval` that gives a request `idleTimeout`, or as close
    /// to it as this platform's `URLSession` can.
    ///
    /// swift-corelibs-foundation keeps only whole seconds of a request's
    /// time-out (it arms its timer with `Int(timeoutInterval) * 1000`
    /// milliseconds), so 300 ms would become 0 and fail every request at once,
    /// and 1.5 s would become 1 s. There the time-out is rounded up to whole
    /// seconds: it may fire up to a second late, never early.
    static func timeoutInterval(for idleTimeout: Duration) -> TimeInterval {
        #if canImport(FoundationNetworking)
        return max(1, idleTimeout.timeInterval.rounded(.up))
        #else
        return idleTimeout.timeInterval
        #endif
    }

    func execute(
        _ request: HTTPRequest,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        // An idle time-out on both Linux and Apple platforms: it restarts whenever bytes
        // move (checked here with a 64 MiB body sent over 6 s against a 2 s time-out).
        urlRequest.timeoutInterval = Self.timeoutInterval(for: request.idleTimeout)
        for (name, value) in request.headers {
            urlRequest.addValue(value, forHTTPHeaderField: name)
        }
        #if canImport(FoundationNetworking)
        // libcurl silently resends a request whose reused connection died before any
        // answer (a reset, a server that committed and then closed), rewinding the
        // body through `needNewBodyStream`, which swift-corelibs-foundation cannot do
        // for a `Data` body (see there). On a fresh connection it never resends: the
        // failure reaches the engine, which asks the server what it kept and resumes.
        urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        let bodyLength = request.body.length
        let exchange = Exchange(
            body: request.body, progress: progress, sink: request.responseSink,
            limit: ResponseLimit(bytes: maxResponseBodyBytes, server: Self.serverName(request.url)))
        if bodyLength == 0 {
            if request.method != "GET" && request.method != "HEAD" {
                urlRequest.setValue("0", forHTTPHeaderField: "Content-Length")
            }
        } else {
            #if canImport(FoundationNetworking)
            urlRequest.httpBody = try await request.body.collected()
            #else
            // With a length, Apple's URLSession streams the body without chunked coding.
            urlRequest.setValue(String(bodyLength), forHTTPHeaderField: "Content-Length")
            urlRequest.httpBodyStream = exchange.makeBodyStream()
            #endif
        }
        let dataTask = session.dataTask(with: urlRequest)
        // URLSession knows only idle time-outs (and one per session for everything): the
        // request's deadline cancels the task, which then completes as timed out. A dispatch
        // timer, not a sleeping task, so that a busy cooperative pool cannot delay it; off that
        // pool too because swift-corelibs-foundation's cancel() may wait for its queues.
        let expiry = request.deadline.map { deadline in
            let item = DispatchWorkItem {
                exchange.expire()
                dataTask.cancel()
            }
            let left = ContinuousClock.now.duration(to: deadline)
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, left.timeInterval), execute: item)
            return item
        }
        defer { expiry?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                exchange.begin(continuation)
                router.register(exchange, for: dataTask)
                if exchange.isCancelled {
                    // Cancelled before the task existed: never start it.
                    router.unregister(dataTask)
                    exchange.complete(.failure(CancellationError()))
                } else {
                    dataTask.resume()
                }
            }
        } onCancel: {
            exchange.cancel()
            dataTask.cancel()
        }
    }
}

extension URLSessionTransport {
    /// `host:port`, as the native transport names a server in its errors;
    /// never the path or query, which may hold an upload session's secret.
    static func serverName(_ url: URL) -> String {
        let host = url.host ?? "the server"
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return "\(host):\(port)"
    }
}

/// The most response body bytes a request may collect into memory.
private struct ResponseLimit: Sendable {
    var bytes: Int
    /// `host:port`, for the error.
    var server: String

    /// The error the native transport throws for the same response.
    var exceeded: HTTPTransportError {
        HTTPTransportError(
            kind: .responseTooLarge, message: "The response from \(server) is larger than \(bytes) bytes.")
    }

    /// Whether a `Content-Length` header announces more than the limit: refused before reading.
    func isExceeded(byAnnounced headers: HTTPHeaders) -> Bool {
        guard let text = headers["Content-Length"]?.trimmingCharacters(in: .whitespaces) else { return false }
        guard let length = Int64(text) else {
            // Digits too many for Int64 are too many bytes; anything else is libcurl's to refuse.
            return !text.isEmpty && text.allSatisfy(\.isASCIIDigit)
        }
        return length > Int64(bytes)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// One request's state, shared between the awaiting task and the delegate queue.
private final class Exchange: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var cancelled = false
        var status = 0
        var headers = HTTPHeaders()
        var body = Data()
        var bodyError: (any Error)?
        /// Whether the body goes to the sink rather than into `body`.
        var streaming = false
        /// What the sink threw; the request is being aborted.
        var sinkError: (any Error)?
        /// The body collected into memory outgrew the limit; the request is being aborted.
        var tooLarge = false
        /// Whether the task's cancellation was asked for on the delegate's behalf.
        var aborting = false
        /// Whether the request's deadline passed (and the task is being cancelled for it).
        var expired = false
    }

    let requestBody: HTTPRequestBody
    let progress: (@Sendable (Int64) -> Void)?
    let sink: HTTPResponseSink?
    let limit: ResponseLimit
    private let state = Mutex(State())

    init(
        body: HTTPRequestBody, progress: (@Sendable (Int64) -> Void)?, sink: HTTPResponseSink?, limit: ResponseLimit
    ) {
        self.requestBody = body
        self.progress = progress
        self.sink = sink
        self.limit = limit
    }

    var sinkError: (any Error)? { state.withLock { $0.sinkError } }

    /// The error that ends a response found larger than the limit, if it was.
    var limitError: HTTPTransportError? { state.withLock { $0.tooLarge } ? limit.exceeded : nil }

    /// A stream over the request body from its start; read failures are kept here.
    func makeBodyStream() -> InputStream {
        RequestBodyStream(body: requestBody) { [weak self] error in
            self?.state.withLock { $0.bodyError = $0.bodyError ?? error }
        }
    }

    var bodyError: (any Error)? { state.withLock { $0.bodyError } }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    var hasResponse: Bool { state.withLock { $0.status != 0 } }

    func begin(_ continuation: CheckedContinuation<HTTPResponse, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
    }

    /// Marks the request as past its deadline; the caller cancels the task.
    func expire() {
        state.withLock { $0.expired = true }
    }

    var isExpired: Bool { state.withLock { $0.expired } }

    /// True the first time only: whoever gets it cancels the task.
    func takeAbort() -> Bool {
        state.withLock { state in
            defer { state.aborting = true }
            return !state.aborting
        }
    }

    /// Records the response head and asks the sink whether to stream.
    ///
    /// - Returns: False when the sink refused the response: abort the task.
    @discardableResult
    func receive(_ response: HTTPURLResponse) -> Bool {
        var headers = HTTPHeaders()
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers.add(name, value)
            }
        }
        var streaming = false
        var refusal: (any Error)?
        if let sink {
            // Called on the session's delegate queue, never the cooperative pool.
            do {
                streaming = try sink.begin(response.statusCode, headers)
            } catch {
                refusal = error
            }
        }
        // A body bound for memory that announces more than the limit is refused unread.
        let tooLarge = refusal == nil && !streaming && limit.isExceeded(byAnnounced: headers)
        state.withLock {
            $0.status = response.statusCode
            $0.headers = headers
            $0.body = Data()
            $0.streaming = streaming
            $0.sinkError = $0.sinkError ?? refusal
            $0.tooLarge = $0.tooLarge || tooLarge
        }
        return refusal == nil && !tooLarge
    }

    /// Takes body bytes: into the sink when streaming, else into the body
    /// within the limit.
    ///
    /// - Returns: False when the sink threw or the body outgrew the limit: abort the task.
    func receive(_ data: Data) -> Bool {
        let limit = limit.bytes
        let (streaming, failed) = state.withLock { state -> (Bool, Bool) in
            if !state.streaming && !state.tooLarge {
                // Checked before appending, so memory never holds more than the limit.
                if data.count > limit - state.body.count {
                    state.tooLarge = true
                    state.body = Data()
                } else {
                    state.body.append(data)
                }
            }
            return (state.streaming, state.sinkError != nil || state.tooLarge)
        }
        guard streaming, let sink, !failed else { return !failed }
        let delivered = data.withUnsafeBytes { raw in
            Result { try sink.receive(raw) }
        }
        guard case .failure(let error) = delivered else { return true }
        state.withLock { $0.sinkError = $0.sinkError ?? error }
        return false
    }

    /// Finishes the exchange once; later calls do nothing.
    func complete(_ result: Result<HTTPResponse, any Error>) {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    func completeWithResponse() {
        let response = state.withLock { HTTPResponse(status: $0.status, headers: $0.headers, body: $0.body) }
        guard response.status != 0 else {
            complete(
                .failure(
                    HTTPTransportError(
                        kind: .connectionLost, message: "The server closed the connection without an answer.")))
            return
        }
        complete(.success(response))
    }
}

/// The session delegate: routes callbacks to the ``Exchange`` of each task.
private final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Mutex<[Int: Exchange]>([:])

    func register(_ exchange: Exchange, for task: URLSessionTask) {
        exchanges.withLock { $0[task.taskIdentifier] = exchange }
    }

    func unregister(_ task: URLSessionTask) {
        _ = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let response = response as? HTTPURLResponse, let exchange = exchange(dataTask),
            !exchange.receive(response)
        {
            completionHandler(.cancel)
            // swift-corelibs-foundation ignores the disposition and reads on.
            abort(dataTask, of: exchange)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let exchange = exchange(dataTask), !exchange.receive(data) {
            abort(dataTask, of: exchange)
        }
    }

    /// Cancels `task`, once, from off the delegate queue.
    ///
    /// swift-corelibs-foundation's `cancel()` may wait for the session's work
    /// queue, and that queue may itself be waiting for room on the delegate
    /// queue (see ``URLSessionDelegateQueue``): called from here, neither would
    /// ever move again. Once is enough, and keeps chunks still arriving from
    /// tying up a thread each.
    private func abort(_ task: URLSessionTask, of exchange: Exchange) {
        guard exchange.takeAbort() else { return }
        DispatchQueue.global().async { task.cancel() }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        exchange(task)?.progress?(totalBytesSent)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // A resumable upload's 308 is an answer, not a redirect.
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping (InputStream?) -> Void
    ) {
        #if canImport(FoundationNetworking)
        // Bodies go as `httpBody` here, and swift-corelibs-foundation can only rewind
        // stream bodies: handed a stream for a `Data` body it stops the process with
        // `fatalError` (NativeProtocol.seekInputStream). Without one it resends what
        // is left of the body, short of its Content-Length, and the request stalls
        // until its time-out; `Connection: close` on every request keeps libcurl from
        // resending at all, so this is only a guard against the crash.
        completionHandler(nil)
        #else
        // URLSession asks for a fresh stream when it must resend the body.
        completionHandler(exchange(task)?.makeBodyStream())
        #endif
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else {
            return
        }
        if let bodyError = exchange.bodyError {
            // The body could not be read: whatever the server said, the request was not what we meant to send.
            exchange.complete(.failure(HTTPTransportError.bodySourceFailed(bodyError)))
        } else if let sinkError = exchange.sinkError {
            exchange.complete(.failure(HTTPTransportError.sinkFailed(sinkError)))
        } else if let limitError = exchange.limitError {
            exchange.complete(.failure(limitError))
        } else if exchange.isCancelled {
            exchange.complete(.failure(CancellationError()))
        } else if error != nil, exchange.isExpired {
            exchange.complete(
                .failure(
                    HTTPTransportError(
                        kind: .timedOut,
                        message:
                            "The exchange with \(exchange.limit.server) was not over by its deadline (however steadily bytes moved)."
                    )))
        } else if let error {
            exchange.complete(.failure(HTTPTransportError(error, server: exchange.limit.server)))
        } else {
            // A 3xx whose redirect was declined (a resumable upload's 308) may
            // complete without a `didReceive response` callback.
            if let response = task.response as? HTTPURLResponse, !exchange.hasResponse {
                exchange.receive(response)
            }
            if let limitError = exchange.limitError {
                exchange.complete(.failure(limitError))
            } else {
                exchange.completeWithResponse()
            }
        }
    }
}

extension HTTPTransportError {
    /// Classifies a `URLSession` failure; a TLS failure retrying cannot fix is
    /// ``Kind/tlsFailure``, permanent, naming the cause (see ``URLSessionTLSFailure``).
    ///
    /// - Parameters:
    ///   - error: What the task completed with.
    ///   - server: `host:port`, for the message.
    fileprivate init(_ error: any Error, server: String) {
        if let failure = URLSessionTLSFailure(error) {
            self = failure.transportError(server: server)
            return
        }
        let code = (error as? URLError)?.code
        let kind: Kind
        switch code {
        case .timedOut?:
            kind = .timedOut
        case .cannotConnectToHost?, .cannotFindHost?, .dnsLookupFailed?, .notConnectedToInternet?:
            kind = .connectFailed
        case .networkConnectionLost?, .badServerResponse?, .cannotParseResponse?, .secureConnectionFailed?:
            kind = .connectionLost
        default:
            kind = .other
        }
        // Never the error's description: URLError's names the URL, and an upload
        // session's URL is a credential.
        self.init(kind: kind, message: "URL loading failed (\(code.map { String($0.rawValue) } ?? "unknown code"))")
        // A URL that URLSession cannot load at all will not load on a retry either.
        let unloadable: [URLError.Code] = [.badURL, .unsupportedURL, .userAuthenticationRequired]
        permanent = code.map(unloadable.contains) ?? false
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
