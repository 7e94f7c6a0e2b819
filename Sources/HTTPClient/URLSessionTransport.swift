package import Foundation
import HTTP1
import Synchronization
import SystemCalls

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``HTTPTransport`` over Foundation's `URLSession`: available everywhere,
/// and the one used for `https://` on Apple platforms and wherever the native
/// transport cannot load OpenSSL 3.
///
/// One session serves every caller; each request carries its own idle
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
/// swift-corelibs-foundation itself gathers the body of a redirect (3xx) answer
/// before telling the delegate anything, beyond any limit set here.
package final class URLSessionTransport: HTTPTransport {
    /// The process's one session.
    package static let shared = URLSessionTransport()

    #if canImport(FoundationNetworking)
    /// 32 MiB: large enough that round trips cost little next to the bytes,
    /// small enough to hold in memory per upload.
    package let maximumBodyLength: Int64? = 32 * 1024 * 1024
    #else
    package let maximumBodyLength: Int64? = nil
    #endif

    /// URLSession decodes gzip bodies itself (on Apple platforms and over libcurl alike).
    package var capabilities: HTTPTransportCapabilities { [.decodesContentCoding] }

    /// The largest response body collected into memory, the native
    /// transport's limit by default: a longer one fails the request instead of
    /// growing the process.
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
        return max(1, idleTimeout.inSeconds.rounded(.up))
        #else
        return idleTimeout.inSeconds
        #endif
    }

    /// Sends `request` as one task of the shared session (see ``HTTPTransport``).
    package func execute(
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
        // failure reaches the caller, which may ask the server what it kept and resume.
        urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        let exchange = Exchange(request: request, progress: progress, maxResponseBodyBytes: maxResponseBodyBytes)
        try await attachBody(of: request, to: &urlRequest, exchange)
        let dataTask = session.dataTask(with: urlRequest)
        // Late callbacks of a task that ended early find no exchange.
        defer { router.unregister(dataTask) }
        // URLSession knows only idle time-outs (and one per session for everything): the
        // request's deadline ends the exchange and cancels the task. A dispatch timer, not a
        // sleeping task, so that a busy cooperative pool cannot delay it; off that pool too
        // because swift-corelibs-foundation's cancel() may wait for its queues. Neither the
        // deadline nor a cancellation waits for the task to report itself complete:
        // swift-corelibs-foundation sometimes never does after cancel().
        let expiry = request.deadline.map { deadline in
            let item = DispatchWorkItem {
                exchange.end(.deadlinePassed)
                dataTask.cancel()
            }
            let left = ContinuousClock.now.duration(to: deadline)
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, left.inSeconds), execute: item)
            return item
        }
        defer { expiry?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                router.register(exchange, for: dataTask)
                // False when cancelled, or past the deadline, before the task existed: never start it.
                if exchange.begin(continuation) {
                    dataTask.resume()
                }
            }
        } onCancel: {
            exchange.end(.cancelled)
            dataTask.cancel()
        }
    }
}

extension URLSessionTransport {
    /// Gives `urlRequest` the body of `request`: gathered into memory where URLSession would
    /// otherwise send it chunked (Linux), streamed through `exchange` with its length elsewhere.
    private func attachBody(
        of request: HTTPRequest, to urlRequest: inout URLRequest, _ exchange: Exchange
    ) async throws {
        let bodyLength = request.body.length
        guard bodyLength > 0 else {
            if request.method != "GET" && request.method != "HEAD" {
                urlRequest.setValue("0", forHTTPHeaderField: "Content-Length")
            }
            return
        }
        #if canImport(FoundationNetworking)
        urlRequest.httpBody = try await request.body.collected()
        #else
        // With a length, Apple's URLSession streams the body without chunked coding.
        urlRequest.setValue(String(bodyLength), forHTTPHeaderField: "Content-Length")
        urlRequest.httpBodyStream = exchange.makeBodyStream()
        #endif
    }

    /// `host:port`, as the native transport names a server in its errors;
    /// never the path or query, which may hold a credential.
    package static func serverName(_ url: URL) -> String {
        let host = url.host ?? "the server"
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return "\(host):\(port)"
    }
}

/// One request's state, shared between the awaiting task, the delegate queue,
/// the deadline's timer and the cancellation handler.
///
/// Whichever of them ends the request first resumes the caller; see
/// ``URLSessionExchangeStateMachine`` for who wins and with what.
private final class Exchange: Sendable {
    private struct State {
        var machine: URLSessionExchangeStateMachine
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        /// The outcome, when the request ended before the caller began waiting.
        var outcome: Result<HTTPResponse, any Error>?
        /// Whether the task's cancellation was asked for on the delegate's behalf.
        var aborting = false
    }

    let requestBody: HTTPRequestBody
    let progress: (@Sendable (Int64) -> Void)?
    let sink: HTTPResponseSink?
    private let state: Mutex<State>

    init(
        request: HTTPRequest, progress: (@Sendable (Int64) -> Void)?, maxResponseBodyBytes: Int
    ) {
        self.requestBody = request.body
        self.progress = progress
        self.sink = request.responseSink
        let machine = URLSessionExchangeStateMachine(
            maxBodyBytes: maxResponseBodyBytes, server: URLSessionTransport.serverName(request.url),
            method: request.method)
        self.state = Mutex(State(machine: machine))
    }

    /// A stream over the request body from its start; read failures are kept here.
    func makeBodyStream() -> InputStream {
        RequestBodyStream(body: requestBody) { [weak self] error in
            self?.state.withLock { $0.machine.recordBodyError(error) }
        }
    }

    var hasResponse: Bool { state.withLock { $0.machine.hasResponse } }

    /// Hands the caller's continuation over.
    ///
    /// - Returns: False when the request already ended (the continuation is then
    ///   resumed at once): do not start the task.
    func begin(_ continuation: CheckedContinuation<HTTPResponse, any Error>) -> Bool {
        let outcome = state.withLock { state in
            guard let outcome = state.outcome else {
                state.continuation = continuation
                return Result<HTTPResponse, any Error>?.none
            }
            state.outcome = nil
            return outcome
        }
        guard let outcome else { return true }
        continuation.resume(with: outcome)
        return false
    }

    /// Ends the request unless it already ended; what comes later is ignored.
    func end(_ ending: URLSessionExchangeStateMachine.Ending) {
        resume(state.withLock { $0.machine.end(ending) })
    }

    /// Hands an outcome to the caller, or keeps it until the caller begins waiting.
    private func resume(_ outcome: Result<HTTPResponse, any Error>?) {
        guard let outcome else { return }
        let continuation = state.withLock { state in
            guard let continuation = state.continuation else {
                state.outcome = outcome
                return CheckedContinuation<HTTPResponse, any Error>?.none
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: outcome)
    }

    /// True the first time only: whoever gets it cancels the task.
    func takeAbort() -> Bool {
        state.withLock { state in
            defer { state.aborting = true }
            return !state.aborting
        }
    }

    /// Records the response head and asks the sink whether to stream.
    ///
    /// - Returns: False when the sink refused the response or the request is over: abort the task.
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
            guard state.withLock({ $0.machine.startDelivery() }) else { return false }
            // Called on the session's delegate queue, never the cooperative pool.
            do {
                streaming = try sink.begin(response.statusCode, headers)
            } catch {
                refusal = error
            }
        }
        let (proceed, outcome) = state.withLock { state in
            let proceed = state.machine.receiveHead(
                status: response.statusCode, headers: headers, streaming: streaming, refusal: refusal)
            return (proceed, sink == nil ? nil : state.machine.finishDelivery())
        }
        resume(outcome)
        return proceed && outcome == nil
    }

    /// Takes body bytes: into the sink when streaming, else into the body
    /// within the limit.
    ///
    /// - Returns: False when the sink threw or has enough, the body outgrew the
    ///   limit or the request is over: abort the task.
    func receive(_ data: Data) -> Bool {
        let (deliver, abort) = state.withLock { $0.machine.receive(data) }
        guard deliver, let sink else { return !abort }
        let delivered = data.withUnsafeBytes { raw in
            Result { try sink.receive(raw) }
        }
        let outcome = state.withLock { $0.machine.finishDelivery(delivered) }
        resume(outcome)
        guard case .success(.more) = delivered else { return false }
        return outcome == nil
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
        exchange.end(.aborted)
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
        // A redirect is an answer for the caller, never followed here.
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
        // A 3xx whose redirect was declined may
        // complete without a `didReceive response` callback.
        if error == nil, let response = task.response as? HTTPURLResponse, !exchange.hasResponse {
            exchange.receive(response)
        }
        exchange.end(.taskCompleted(error))
    }
}

extension HTTPTransportError {
    /// Classifies a `URLSession` failure; a TLS failure retrying cannot fix is
    /// ``Kind/tlsFailure``, permanent, naming the cause (see ``URLSessionTLSFailure``).
    ///
    /// - Parameters:
    ///   - error: What the task completed with.
    ///   - server: `host:port`, for the message.
    init(_ error: any Error, server: String) {
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
        // Never the error's description: URLError's names the URL, which may hold a
        // credential.
        self.init(kind: kind, message: "URL loading failed (\(code.map { String($0.rawValue) } ?? "unknown code"))")
        // A URL that URLSession cannot load at all will not load on a retry either.
        let unloadable: [URLError.Code] = [.badURL, .unsupportedURL, .userAuthenticationRequired]
        permanent = code.map(unloadable.contains) ?? false
    }
}
