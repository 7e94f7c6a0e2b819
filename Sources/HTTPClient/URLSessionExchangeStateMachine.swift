import Foundation
import HTTP1

/// What one `URLSession` request has collected, and how it ends: exactly
/// once, whoever ends it first.
///
/// A request ends when the session's delegate reports the task complete, but
/// also, without waiting for that report, when the calling task is cancelled,
/// when its deadline passes and when the delegate's side aborts it (a sink that
/// threw or has enough, a body over the limit): swift-corelibs-foundation does not always
/// report a task complete after `cancel()`, and an exchange waiting for that
/// report would wait forever. An end that is not the delegate's decides from
/// what has arrived: a deadline that finds the response whole (its head, and
/// its body to the announced length) ends with the response, anything less
/// ends with the time-out. Whatever arrives after the end is ignored.
///
/// While the response sink runs, an end waits for it to return (it is then
/// handed back by ``finishDelivery()``), so that no sink call is still running
/// when the caller learns the request is over and perhaps starts the next one
/// writing to the same place.
///
/// A plain value: the exchange mutates it under its lock and does what it
/// returns (resuming the caller, calling the sink) outside.
struct URLSessionExchangeStateMachine {
    /// Why the exchange ends.
    enum Ending {
        /// The delegate reported the task complete, with the error it gave.
        case taskCompleted((any Error)?)
        /// The calling task was cancelled.
        case cancelled
        /// The request's deadline passed.
        case deadlinePassed
        /// The delegate's side aborted the task: a sink threw or had enough, or the body
        /// outgrew the limit.
        case aborted
    }

    /// The most body bytes collected into memory.
    let maxBodyBytes: Int
    /// `host:port`, for errors.
    let server: String
    /// Whether the request was `HEAD`, whose answer has no body whatever its headers say.
    let isHeadRequest: Bool

    private(set) var status = 0
    private(set) var headers = HTTPHeaders()
    private var body = Data()
    /// Body bytes received, collected or streamed.
    private var received: Int64 = 0
    /// Whether the body goes to the sink rather than into `body`.
    private(set) var isStreaming = false
    /// What reading the request body threw.
    private var bodyError: (any Error)?
    /// What the sink threw.
    private var sinkError: (any Error)?
    /// Whether the sink said it has enough: the response is complete for the caller.
    private var isSatisfied = false
    /// Whether the body collected into memory outgrew the limit.
    private var tooLarge = false
    /// Whether a sink call is running.
    private var delivering = false
    /// An end that came while a sink call ran.
    private var pendingEnding: Ending?
    /// Whether the outcome was handed out.
    private(set) var isEnded = false

    init(maxBodyBytes: Int, server: String, method: String) {
        self.maxBodyBytes = maxBodyBytes
        self.server = server
        self.isHeadRequest = method == "HEAD"
    }

    var hasResponse: Bool { status != 0 }

    /// The error that ends a response found larger than the limit.
    var limitExceeded: HTTPTransportError {
        HTTPTransportError(
            kind: .responseTooLarge, message: "The response from \(server) is larger than \(maxBodyBytes) bytes.")
    }

    /// Whether the delegate's side should abort the task: a failure, or a sink that has enough.
    var abortsTask: Bool { sinkError != nil || tooLarge || isSatisfied }

    /// Keeps a failure to read the request body; the request ends with it.
    mutating func recordBodyError(_ error: any Error) {
        bodyError = bodyError ?? error
    }

    /// Marks a sink call as running.
    ///
    /// - Returns: False when the exchange is over (or ending): do not call the sink.
    mutating func startDelivery() -> Bool {
        guard !isEnded && pendingEnding == nil else { return false }
        delivering = true
        return true
    }

    /// Marks the running sink call as returned, keeping what it came to (nil for a call of
    /// `begin`, whose refusal ``receiveHead(status:headers:streaming:refusal:)`` takes).
    ///
    /// - Returns: The outcome, when an end came while the sink ran.
    mutating func finishDelivery(
        _ delivered: Result<HTTPResponseSink.Demand, any Error>? = nil
    ) -> Result<HTTPResponse, any Error>? {
        delivering = false
        switch delivered {
        case .failure(let error)?: sinkError = sinkError ?? error
        case .success(.enough)?: isSatisfied = true
        case .success(.more)?, nil: break
        }
        guard let ending = pendingEnding else { return nil }
        pendingEnding = nil
        return end(ending)
    }

    /// Records the response head.
    ///
    /// - Parameters:
    ///   - streaming: Whether the sink took the body.
    ///   - refusal: What the sink's `begin` threw.
    /// - Returns: False when the task should be aborted: the sink refused, or the
    ///   announced length is over the limit of a body bound for memory.
    mutating func receiveHead(
        status: Int, headers: HTTPHeaders, streaming: Bool, refusal: (any Error)?
    ) -> Bool {
        guard !isEnded else { return false }
        self.status = status
        self.headers = headers
        body = Data()
        received = 0
        isStreaming = streaming
        sinkError = sinkError ?? refusal
        // A body bound for memory that announces more than the limit is refused unread.
        if refusal == nil && !streaming && Self.announces(moreThan: maxBodyBytes, headers) {
            tooLarge = true
        }
        return !abortsTask
    }

    /// Takes body bytes: counts them, and collects them unless they stream to the sink.
    ///
    /// - Returns: Whether to hand them to the sink (a delivery is then started),
    ///   and whether the task should be aborted.
    mutating func receive(_ data: Data) -> (deliver: Bool, abort: Bool) {
        guard !isEnded && pendingEnding == nil else { return (false, true) }
        received += Int64(data.count)
        if !isStreaming && !tooLarge {
            // Checked before appending, so memory never holds more than the limit.
            if data.count > maxBodyBytes - body.count {
                tooLarge = true
                body = Data()
            } else {
                body.append(data)
            }
        }
        if abortsTask { return (false, true) }
        guard isStreaming else { return (false, false) }
        delivering = true
        return (true, false)
    }

    /// Ends the exchange, unless it already ended.
    ///
    /// - Returns: The outcome to hand the caller, the first time only; nil when the
    ///   exchange already ended, or when a sink call is running (the outcome then comes
    ///   from ``finishDelivery(throwing:)``).
    mutating func end(_ ending: Ending) -> Result<HTTPResponse, any Error>? {
        guard !isEnded else { return nil }
        if delivering {
            pendingEnding = pendingEnding ?? ending
            return nil
        }
        isEnded = true
        return outcome(ending)
    }

    /// Whether the response has fully arrived: its head and, per its framing, all of its body.
    ///
    /// A chunked or compressed body, or one delimited by the connection's close, cannot be
    /// judged from what URLSession hands over, so it is whole only when the task says so.
    var isWhole: Bool {
        guard status >= 200 else { return false }
        if isHeadRequest || status == 204 || status == 304 { return true }
        if headers["Transfer-Encoding"] != nil { return false }
        if let coding = headers["Content-Encoding"], coding.lowercased() != "identity" { return false }
        guard let text = headers["Content-Length"]?.trimmingCharacters(in: .whitespaces),
            let length = Int64(text)
        else { return false }
        return received == length
    }

    private func outcome(_ ending: Ending) -> Result<HTTPResponse, any Error> {
        if let bodyError {
            // The body could not be read: whatever the server said, the request was not what we meant to send.
            return .failure(HTTPTransportError.bodySourceFailed(bodyError))
        }
        if let sinkError { return .failure(HTTPTransportError.sinkFailed(sinkError)) }
        if tooLarge { return .failure(limitExceeded) }
        // The sink has what it wants, whatever ended the task after: the response is complete.
        if isSatisfied { return .success(response) }
        switch ending {
        case .cancelled:
            return .failure(CancellationError())
        case .deadlinePassed:
            guard isWhole else {
                return .failure(
                    HTTPTransportError(
                        kind: .timedOut,
                        message:
                            "The exchange with \(server) was not over by its deadline (however steadily bytes moved)."
                    ))
            }
            return .success(response)
        case .aborted:
            // Aborted for a failure recorded above; nothing else aborts.
            return .failure(
                HTTPTransportError(kind: .connectionLost, message: "The exchange with \(server) was aborted."))
        case .taskCompleted(let error?):
            return .failure(HTTPTransportError(error, server: server))
        case .taskCompleted(nil):
            guard status != 0 else {
                return .failure(
                    HTTPTransportError(
                        kind: .connectionLost, message: "The server closed the connection without an answer."))
            }
            return .success(response)
        }
    }

    private var response: HTTPResponse { HTTPResponse(status: status, headers: headers, body: body) }

    /// Whether a `Content-Length` header announces more than `limit`: refused before reading.
    private static func announces(moreThan limit: Int, _ headers: HTTPHeaders) -> Bool {
        guard let text = headers["Content-Length"]?.trimmingCharacters(in: .whitespaces) else { return false }
        guard let length = Int64(text) else {
            // Digits too many for Int64 are too many bytes; anything else is libcurl's to refuse.
            return !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber }
        }
        return length > Int64(limit)
    }
}
