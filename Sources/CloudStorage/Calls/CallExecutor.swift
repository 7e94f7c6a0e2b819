import Foundation
import HTTPClient
import Synchronization

/// The one place every request of the SDK goes through, token fetches included.
///
/// One executor serves one call (an upload, a metadata read, a token exchange) over all its
/// attempts. For each attempt it:
/// - names the SDK and the call: `User-Agent`, and to Cloud Storage `x-goog-api-client` with
///   `gccl-invocation-id/<uuid>` (the same on every attempt of the call) and
///   `gccl-attempt-count/<n>`, and `x-goog-gcs-idempotency-token: <uuid>`, as Google's Go and
///   Python clients send them;
/// - applies the per-call options (``StorageRequestOptions``) and credentials (refreshing them
///   once after a 401), and refuses to send credentials over plain HTTP to another machine;
/// - sorts the outcome into an answer, a failure worth retrying, or a final error;
/// - reports each request and each retry as events.
///
/// And it is the one retry gate: ``backOff(after:)`` decides from the failure, the idempotency
/// of the request that failed (``CallIdempotency``), its precondition and the
/// ``StorageConfiguration/Retry/Policy`` whether the call may try again, and waits within the
/// call's retry time. ``execute(_:idempotency:accepting:about:sentChecksum:shield:progress:beforeEachAttempt:afterEachFailure:)``
/// runs that loop for a request that is the same on every attempt; the upload and download
/// engines, whose next request depends on what the server kept, drive the same gate from their
/// state machines.
struct CallExecutor: Sendable {
    /// The outcome of one attempt.
    enum Outcome: Sendable {
        /// The server answered with a status the caller accepts.
        case answer(HTTPResponse)
        /// A failure that may pass; whether the call may try again is ``backOff(after:)``'s
        /// decision.
        case retryable(StorageError)
    }

    /// What each request carries beyond itself: the per-call options and the credentials; nil
    /// for token requests, which carry neither.
    private let authority: (any CallAuthority)?
    private let transport: any HTTPTransport
    private let requestTimeout: Duration
    private let identification: StorageConfiguration.Identification
    private let wireProtocol: StorageEndpoint.WireProtocol?
    private let policy: StorageConfiguration.Retry.Policy
    /// The server a token request goes to, for messages ("the token endpoint https://…"); nil
    /// for storage calls.
    private let tokenServer: String?
    /// Where this call's requests and retries are reported.
    let events: StorageEventEmitter
    private let backoff: RetryBackoff
    private var attempts: RetryBackoff.Attempts
    private var token: String?
    private var hasToken = false
    /// This call's id, the same on every attempt (`gccl-invocation-id`, the idempotency token).
    let invocationID: String
    /// Requests sent so far in this call.
    private(set) var attemptCount = 0
    /// The idempotency of the last request sent: what the retry gate judges.
    private var lastIdempotency: CallIdempotency = .idempotent

    /// The `Authorization` scheme of the endpoint's service, for uploads and every other request.
    private let credentialScheme: String

    /// An executor for one call on behalf of `authority`, with the settings of a storage call.
    ///
    /// - Parameters:
    ///   - authority: The options and credentials each request carries.
    ///   - settings: Transport, time-outs, identification, retry policy and back-off, events.
    ///   - credentialScheme: The `Authorization` scheme of the endpoint's service.
    ///   - wireProtocol: The endpoint's protocol, for its retry rules.
    ///   - operation: Which retry time (``StorageConfiguration/Retry/maxUploadTime``,
    ///     ``StorageConfiguration/Retry/maxDownloadTime`` or
    ///     ``StorageConfiguration/Retry/maxOperationTime``) bounds the retries, and when its clock starts.
    init(
        authority: any CallAuthority, settings: TokenRequestContext, credentialScheme: String,
        wireProtocol: StorageEndpoint.WireProtocol, operation: RetryBackoff.Operation
    ) {
        self.init(
            settings, authority: authority, tokenServer: nil, wireProtocol: wireProtocol,
            credentialScheme: credentialScheme, attempts: RetryBackoff.Attempts(for: operation))
    }

    /// An executor for one token exchange: no credentials, no per-call options; retried within
    /// the requesting operation's retry time (token requests are idempotent).
    ///
    /// - Parameter server: The server, for messages ("the token endpoint https://…").
    init(tokenRequestsOf context: TokenRequestContext, server: String) {
        self.init(
            context, authority: nil, tokenServer: server, wireProtocol: nil, credentialScheme: "Bearer",
            attempts: RetryBackoff.Attempts())
    }

    /// The settings of `settings`, and what differs between a storage call and a token exchange.
    private init(
        _ settings: TokenRequestContext, authority: (any CallAuthority)?, tokenServer: String?,
        wireProtocol: StorageEndpoint.WireProtocol?, credentialScheme: String, attempts: RetryBackoff.Attempts
    ) {
        self.authority = authority
        self.transport = settings.transport
        self.requestTimeout = settings.requestTimeout
        self.identification = settings.identification
        self.wireProtocol = wireProtocol
        self.policy = settings.retryPolicy
        self.tokenServer = tokenServer
        self.backoff = settings.retryBackoff
        self.attempts = attempts
        self.credentialScheme = credentialScheme
        self.events = settings.events
        self.invocationID = UUID().uuidString.lowercased()
    }

    /// Sends `request` once (twice after a 401 with a token provider).
    ///
    /// A request that moves no object bytes — all but a body reported as `progress` (an
    /// upload's) and an answer streamed to a response sink (a download's) — must be over
    /// within the request time-out, and, once the retry time runs, by its end
    /// (``RetryBackoff/Attempts/deadline(forAttemptAt:limit:policy:)``); so must waiting for a
    /// token then. Transfers are bounded by the idle time-out only: their moving bytes are
    /// progress, which the engines count between attempts.
    ///
    /// - Parameters:
    ///   - idempotency: Whether the request may be sent again after a failure, and under which
    ///     precondition; the retry gate (``backOff(after:)``) judges it.
    ///   - accepted: Statuses returned as ``Outcome/answer(_:)``.
    ///   - subject: What a 404 is about.
    ///   - sentChecksum: Whether the request carried a checksum, so that a
    ///     400 about it becomes ``StorageErrorCode/nonMatchingChecksum``.
    ///   - progress: Called with body bytes sent.
    /// - Returns: The answer, or a retryable failure: a retryable status, a failure below
    ///   HTTP that may pass (see ``TransportFailureVerdict``), or a request or a wait for a
    ///   token that the end of the retry time cut short (``RetryTimeRanOut``).
    /// - Throws: Final errors, and ``StorageErrorCode/cancelled`` when the
    ///   task is cancelled.
    mutating func send(
        _ request: HTTPRequest,
        idempotency: CallIdempotency,
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject,
        sentChecksum: Bool = false,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws(StorageError) -> Outcome {
        var request = request
        lastIdempotency = idempotency
        // The transport sends a request again by itself when a pooled connection turns out to be
        // closed before any answer: a retry, which only the retry gate may allow.
        request.isIdempotent = retryDecision(for: idempotency).allowsRetry
        request.idleTimeout = requestTimeout
        if let authority { try await authority.prepare(&request) }
        let isTransfer = progress != nil || request.responseSink != nil
        for refreshed in [false, true] {
            if Task.isCancelled { throw .cancelled() }
            if authority != nil {
                let credential: CallCredential?
                do {
                    credential = try await self.credential(refreshing: refreshed)
                } catch  where error.underlyingError is RetryTimeRanOut {
                    return .retryable(error)
                }
                if let credential { try authorize(&request, with: credential) }
            }
            if !isTransfer {
                request.deadline = attempts.deadline(forAttemptAt: .now, limit: requestTimeout, policy: backoff)
            }
            attemptCount += 1
            identify(&request)
            let response: HTTPResponse
            switch try await transmit(request, progress: progress) {
            case .success(let answer): response = answer
            case .failure(let failure): return .retryable(failure)
            }
            if accepted.contains(response.status) {
                return .answer(response)
            }
            if response.status == 401, !refreshed, authority?.refreshesAfterRefusal == true {
                continue
            }
            let error =
                tokenServer.map {
                    StorageError(
                        .unknown, "\($0.capitalizedFirst) answered HTTP \(response.status).",
                        httpStatus: response.status,
                        serverMessage: OAuthErrorAnswer.fields(in: response.body)?.description)
                } ?? response.storageError(about: subject, sentChecksum: sentChecksum)
            if response.isRetryable { return .retryable(error) }
            throw error
        }
        // Only reached after a refreshed token was refused too.
        throw StorageError(.unauthenticated, "The server refused a freshly fetched token.", httpStatus: 401)
    }

    /// Hands one attempt to the transport and reports it.
    ///
    /// - Returns: The answer, whatever its status, or a failure below HTTP that may pass (marked
    ///   as cut short when the end of the retry time was the request's deadline).
    /// - Throws: A failure below HTTP that cannot pass (``TransportFailureVerdict``);
    ///   ``StorageErrorCode/cancelled``.
    private func transmit(
        _ request: HTTPRequest, progress: (@Sendable (Int64) -> Void)?
    ) async throws(StorageError) -> Result<HTTPResponse, StorageError> {
        let started = ContinuousClock.now
        do {
            let response = try await transport.execute(request, progress: progress)
            reportRequest(request, startedAt: started, status: response.status, failure: nil)
            return .success(response)
        } catch let error as HTTPTransportError {
            reportRequest(request, startedAt: started, status: nil, failure: "\(error.kind)")
            if Task.isCancelled { throw .cancelled() }
            let server = URLSessionTransport.serverName(request.url)
            switch TransportFailureVerdict(error, server: server) {
            case .retryable(let failure):
                return .failure(
                    attempts.marking(failure, of: error, deadline: request.deadline, policy: backoff, server: server))
            case .final(let failure):
                throw failure
            }
        } catch {
            reportRequest(request, startedAt: started, status: nil, failure: "\(type(of: error))")
            if Task.isCancelled || error is CancellationError { throw .cancelled() }
            return .failure(StorageError(.unknown, "The request failed.", underlyingError: error))
        }
    }

    /// Sets the headers that name the SDK and this call on one attempt of it.
    private func identify(_ request: inout HTTPRequest) {
        let call = StorageConfiguration.Identification.Call(id: invocationID, attempt: attemptCount)
        identification.apply(to: &request.headers, speaking: wireProtocol, call: call)
    }

    /// Sends `request` until an accepted answer comes, retrying as the retry gate allows.
    ///
    /// - Parameters:
    ///   - request: The request, the same on every attempt.
    ///   - idempotency: Whether it may be sent again, and under which precondition.
    ///   - accepted: The statuses that count as success.
    ///   - subject: What a 404 is about.
    ///   - sentChecksum: Whether the request carries a checksum (a 400 about it is
    ///     ``StorageErrorCode/nonMatchingChecksum``).
    ///   - shield: How much of each attempt the calling task's cancellation may not interrupt
    ///     (nil: all of it may be interrupted); see ``Shield``.
    ///   - progress: Called with body bytes sent.
    ///   - beforeEachAttempt: Checks that must hold before every attempt (a file still
    ///     unchanged); what it throws ends the call.
    ///   - afterEachFailure: Called when an attempt failed and the call will try again (a part's
    ///     progress goes back to zero).
    /// - Returns: The accepted answer.
    /// - Throws: The final ``StorageError`` (a failure the gate does not retry names why);
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    mutating func execute(
        _ request: HTTPRequest,
        idempotency: CallIdempotency,
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject,
        sentChecksum: Bool = false,
        shield: Shield? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil,
        beforeEachAttempt: (() async throws(StorageError) -> Void)? = nil,
        afterEachFailure: (() -> Void)? = nil
    ) async throws(StorageError) -> HTTPResponse {
        while true {
            try await beforeEachAttempt?()
            let outcome: Outcome
            if let shield {
                outcome = try await sendShielded(
                    request, idempotency: idempotency, accepting: accepted, about: subject,
                    sentChecksum: sentChecksum, shield: shield, progress: progress)
            } else {
                outcome = try await send(
                    request, idempotency: idempotency, accepting: accepted, about: subject,
                    sentChecksum: sentChecksum, progress: progress)
            }
            switch outcome {
            case .answer(let response):
                return response
            case .retryable(let failure):
                afterEachFailure?()
                try await backOff(after: failure)
            }
        }
    }

    /// Sends `request` once, for work whose failure changes nothing (cleaning up after a failed
    /// operation, asking what became of an aborted one): no retry, every error swallowed.
    ///
    /// - Returns: The answer, if one with an accepted status came.
    mutating func sendOnce(
        _ request: HTTPRequest, accepting accepted: Set<Int>, about subject: HTTPResponse.Subject
    ) async -> HTTPResponse? {
        guard
            case .answer(let response)? = try? await send(
                request, idempotency: .idempotent, accepting: accepted, about: subject)
        else { return nil }
        return response
    }

    /// Adds `credential` to `request`, refusing to send a secret in the clear to another machine.
    private func authorize(_ request: inout HTTPRequest, with credential: CallCredential) throws(StorageError) {
        guard let authority else { return }
        guard !authority.sendsSecret || !request.url.isPlainHTTPToAnotherMachine else {
            throw .invalidArgument(
                "Refusing to send credentials over plain HTTP to \(request.url.host ?? "an unknown host"); use https or a loopback address."
            )
        }
        request.headers.set("Authorization", "\(credential.scheme) \(credential.token)")
        if let project = credential.quotaProject { request.headers.set("x-goog-user-project", project) }
    }

    /// How much of a request the calling task's cancellation may not interrupt.
    enum Shield: Sendable, Equatable {
        /// All of it: the request is sent and answered whatever happens to the calling task.
        case whole
        /// Everything after its body has been handed to the transport. Cancelled before that,
        /// it is aborted as usual; after it, the server may act on the request even if the
        /// connection closes (bytes already sent cannot be called back), so its answer is
        /// awaited instead, and it tells what really happened.
        case onceSent
    }

    /// Sends `request`, protected from the calling task's cancellation as `shield` says; the
    /// caller decides what a cancellation that arrived meanwhile means once the answer is in.
    ///
    /// For requests whose answer must not be lost: a session the server opened can only be
    /// deleted (or resumed) if its URL arrives (``Shield/whole``), and a one-request upload
    /// whose bytes all went out may be stored whether or not anyone waits for the answer
    /// (``Shield/onceSent``). Either way the wait is bounded by the request's idle time-out.
    ///
    /// - Throws: As ``send(_:idempotency:accepting:about:sentChecksum:progress:)``.
    mutating func sendShielded(
        _ request: HTTPRequest,
        idempotency: CallIdempotency,
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject,
        sentChecksum: Bool = false,
        shield: Shield = .whole,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)? = nil
    ) async throws(StorageError) -> Outcome {
        let copy = self
        let bodyLength = request.body.length
        let sent = BodySent()
        let shielded = Task { () async -> (Result<Outcome, StorageError>, CallExecutor) in
            var executor = copy
            do throws(StorageError) {
                let outcome = try await executor.send(
                    request, idempotency: idempotency, accepting: accepted, about: subject, sentChecksum: sentChecksum,
                    progress: { bytes in
                        if bytes >= bodyLength { sent.flag.store(true, ordering: .releasing) }
                        progress?(bytes)
                    })
                return (.success(outcome), executor)
            } catch {
                return (.failure(error), executor)
            }
        }
        let (result, executor) = await withTaskCancellationHandler {
            await shielded.value
        } onCancel: {
            if shield == .onceSent && !sent.flag.load(ordering: .acquiring) { shielded.cancel() }
        }
        self = executor
        return try result.get()
    }

    /// The credential for the next request: the operation's token (fetched once, then again
    /// after a 401), or for a Google credential whatever its shared cache holds now — a lock
    /// and a comparison, so a long operation switches to a new token before the old one
    /// expires instead of waiting for a 401.
    ///
    /// - Parameter refreshing: The server refused the last token: fetch another (a Google
    ///   credential's cache does so only if it still holds that token, so that operations
    ///   refused together share one exchange).
    /// - Throws: The exchange's error; once the retry time runs, an error carrying
    ///   ``RetryTimeRanOut`` if the token has not come by its end.
    private mutating func credential(refreshing: Bool) async throws(StorageError) -> CallCredential? {
        guard let authority else { return nil }
        let context = TokenRequestContext(
            transport: transport, requestTimeout: requestTimeout, retryBackoff: backoff, retryPolicy: policy,
            deadline: attempts.retryTimeEnd(policy: backoff), identification: identification, events: events)
        let credential = try await authority.credential(
            context: context, scheme: credentialScheme, previous: hasToken ? .some(token) : nil,
            refreshing: refreshing)
        token = credential?.token
        hasToken = true
        return credential
    }

    /// Notes that the operation reached a new high (more bytes committed or
    /// received than ever before in this run), which restarts the retry
    /// deadline from the next failure. Callers must not call it for progress
    /// that only makes up lost ground, or a server that loses and regains
    /// bytes could keep an operation alive for ever.
    mutating func madeProgress() {
        attempts.reset()
    }

    /// Whether the call's retry time ran out since its clock started (the call's start or its
    /// last progress for operations whose clock starts with the call; the first failure for
    /// transfers): for loops of successful calls that must still end (a rewrite that does not
    /// get further).
    var retryTimeHasRunOut: Bool {
        attempts.hasRunOut(at: .now, policy: backoff)
    }

    /// The retry gate: waits before the next attempt after `failure` of the last request sent,
    /// or throws when the call may not try again.
    ///
    /// A retry needs two things: the ``StorageConfiguration/Retry/Policy`` allows it for the
    /// idempotency the request declared (or, unless the policy is `never`, the request never
    /// left this machine: no connection could be made) (``RetryDecision``; Firebase endpoints keep the
    /// Firebase SDKs' semantics and retry whatever the request, unless the policy is
    /// ``StorageConfiguration/Retry/Policy/never``), and the retry time has room for the wait.
    /// Each retry is reported as a `retry` event naming the failure and the rule that allowed it.
    ///
    /// - Throws: `failure` itself, saying why it was not retried, when the policy does not allow
    ///   a retry; ``StorageErrorCode/retryLimitExceeded`` (or
    ///   ``StorageErrorCode/quotaExceeded`` when the server was throttling,
    ///   ``StorageErrorCode/protocolViolation`` when it kept answering malformed) with `failure`
    ///   as the underlying error when the retry time ran out; ``StorageErrorCode/cancelled``.
    ///
    /// - Parameters:
    ///   - failure: What went wrong.
    ///   - idempotency: The request the failure is of, when it is not the last one sent (an
    ///     upload whose unreadable answer was followed by a read of the object).
    mutating func backOff(
        after failure: StorageError, of idempotency: CallIdempotency? = nil
    ) async throws(StorageError) {
        let decision =
            Self.neverReachedTheServer(failure) && policy != .never
            ? RetryDecision(allowsRetry: true, rule: "the request never reached the server (no connection was made)")
            : retryDecision(for: idempotency ?? lastIdempotency)
        guard decision.allowsRetry else { throw Self.notRetried(failure, because: decision.rule) }
        let delay = attempts.recordFailure(failure, at: .now, policy: backoff, jitter: Double.random(in: 0..<1))
        guard let delay else { throw exhausted(after: failure) }
        reportRetry(after: failure, delay: delay, rule: decision.rule)
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw .cancelled()
        }
    }

    /// Whether `failure` is one where no byte of the request left this machine (no connection
    /// could be made): whatever the request, it cannot have taken effect, so sending it is as
    /// safe as the first time.
    private static func neverReachedTheServer(_ failure: StorageError) -> Bool {
        (failure.underlyingError as? HTTPTransportError)?.kind == .connectFailed
    }

    /// The decision on retrying a request of `idempotency`.
    private func retryDecision(for idempotency: CallIdempotency) -> RetryDecision {
        if wireProtocol == .firebaseV0, policy != .never {
            return RetryDecision(policy: .always, idempotency: idempotency).firebase
        }
        return RetryDecision(policy: policy, idempotency: idempotency)
    }

    /// `failure`, saying that the retry gate did not retry it and why.
    private static func notRetried(_ failure: StorageError, because rule: String) -> StorageError {
        StorageError(
            failure.code, "\(failure.message) Not retried: \(rule).", httpStatus: failure.httpStatus,
            serverMessage: failure.serverMessage, underlyingError: failure.underlyingError)
    }

    /// The error of a call whose retry time ran out with `failure`.
    private func exhausted(after failure: StorageError) -> StorageError {
        let (reported, cutShort) = attempts.reported(failure)
        let throttled = reported.httpStatus == 429
        let malformed = reported.code == .protocolViolation
        let code: StorageErrorCode =
            tokenServer != nil
            ? .retryLimitExceeded
            : throttled ? .quotaExceeded : malformed ? .protocolViolation : .retryLimitExceeded
        let budget = "the retry time (\(backoff.budgetName), \(backoff.budget))"
        let attached =
            cutShort
            ? "its end cut the last attempt short, and the failure before it is attached."
            : "the last failure is attached."
        let message: String
        if let tokenServer {
            message = "Fetching an access token from \(tokenServer) kept failing for longer than \(budget); \(attached)"
        } else if throttled {
            message = "The server kept throttling requests until \(budget) ran out; \(attached)"
        } else if malformed {
            message = "The server kept sending malformed answers until \(budget) ran out; \(attached)"
        } else {
            message = "Retries went on for longer than \(budget); \(attached)"
        }
        return StorageError(
            code, message, httpStatus: reported.httpStatus, serverMessage: reported.serverMessage,
            underlyingError: reported)
    }
}

extension RetryDecision {
    /// This decision, worded as the Firebase semantics that made it.
    fileprivate var firebase: RetryDecision {
        RetryDecision(allowsRetry: allowsRetry, rule: "Firebase Storage retries every operation within its retry time")
    }
}

extension CallExecutor {
    /// The engine's own error that a transport failure carries back: what a
    /// body file or a response sink threw, which the transport passes through
    /// without knowing what it is. Nil for failures of the transport itself.
    static func engineError(in error: HTTPTransportError) -> StorageError? {
        guard error.kind == .bodySourceFailed || error.kind == .sinkFailed else { return nil }
        if let own = error.underlying as? StorageError { return own }
        // Only the engine's file types and sinks feed the transport, and they throw
        // StorageError; anything else is a bug below, not worth a retry.
        return StorageError(.unknown, error.message, underlyingError: error)
    }
}

extension URL {
    /// Whether a request to this URL would travel unencrypted to a host other
    /// than this machine.
    var isPlainHTTPToAnotherMachine: Bool {
        guard scheme?.lowercased() == "http" else { return false }
        guard let host else { return true }
        return !HostAddress.isLoopback(host)
    }
}

/// Whether every byte of a request's body has been handed to the transport.
private final class BodySent: Sendable {
    let flag = Atomic(false)
}
