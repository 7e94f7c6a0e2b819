import Foundation
import HTTPClient
import Synchronization

/// Sends requests for one operation: adds credentials (refreshing them once
/// after a 401), enforces the rule that credentials never travel over plain
/// HTTP to another machine, and sorts every outcome into an answer, a failure
/// worth retrying, or a final error. Also owns the operation's retry budget.
struct RequestRunner: Sendable {
    /// The outcome of one attempt.
    enum Outcome: Sendable {
        /// The server answered with a status the caller accepts.
        case answer(HTTPResponse)
        /// A failure that may pass: wait and try again.
        case retryable(StorageError)
    }

    let storage: Storage
    /// Where this operation's requests and retries are reported.
    let events: StorageEventEmitter
    private let policy: RetryPolicy
    private var attempts = RetryPolicy.Attempts()
    private var token: String?
    private var hasToken = false

    /// The `Authorization` scheme of the endpoint's service, for uploads and every other request.
    private let credentialScheme: String

    /// - Parameters:
    ///   - storage: Where the requests go, and the settings.
    ///   - operation: Which retry time (``StorageConfiguration/Retry/maxUploadTime``,
    ///     ``StorageConfiguration/Retry/maxDownloadTime`` or
    ///     ``StorageConfiguration/Retry/maxOperationTime``) bounds the retries.
    init(storage: Storage, operation: RetryPolicy.Operation) {
        self.storage = storage
        self.policy = RetryPolicy(configuration: storage.configuration, operation: operation)
        self.credentialScheme = storage.endpoint.wireProtocol.credentialScheme
        self.events = storage.configuration.events.emitter()
    }

    /// Sends `request` once (twice after a 401 with a token provider).
    ///
    /// A request that moves no object bytes — all but a body reported as `progress` (an
    /// upload's) and an answer streamed to a response sink (a download's) — must be over
    /// within the request time-out, and, once the retry time runs, by its end
    /// (``RetryPolicy/Attempts/deadline(forAttemptAt:limit:policy:)``); so must waiting for a
    /// token then. Transfers are bounded by the idle time-out only: their moving bytes are
    /// progress, which the engines count between attempts.
    ///
    /// - Parameters:
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
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject,
        sentChecksum: Bool = false,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws(StorageError) -> Outcome {
        var request = request
        request.idleTimeout = storage.configuration.timeouts.request
        storage.configuration.identification.apply(to: &request.headers, speaking: storage.endpoint.wireProtocol)
        try await storage.options.prepare(&request, for: storage.endpoint)
        let isTransfer = progress != nil || request.responseSink != nil
        for refreshed in [false, true] {
            if Task.isCancelled { throw .cancelled() }
            let credential: Credential?
            do {
                credential = try await self.credential(refreshing: refreshed)
            } catch  where error.underlyingError is RetryTimeRanOut {
                return .retryable(error)
            }
            if let credential { try authorize(&request, with: credential) }
            if !isTransfer {
                request.deadline = attempts.deadline(
                    forAttemptAt: .now, limit: storage.configuration.timeouts.request, policy: policy)
            }
            let response: HTTPResponse
            let started = ContinuousClock.now
            do {
                response = try await storage.transport.execute(request, progress: progress)
            } catch let error as HTTPTransportError {
                reportRequest(request, startedAt: started, status: nil, failure: "\(error.kind)")
                if Task.isCancelled { throw .cancelled() }
                let server = URLSessionTransport.serverName(request.url)
                switch TransportFailureVerdict(error, server: server) {
                case .retryable(let failure):
                    return .retryable(
                        attempts.marking(failure, of: error, deadline: request.deadline, policy: policy, server: server)
                    )
                case .final(let failure):
                    throw failure
                }
            } catch {
                reportRequest(request, startedAt: started, status: nil, failure: "\(type(of: error))")
                if Task.isCancelled || error is CancellationError { throw .cancelled() }
                return .retryable(StorageError(.unknown, "The request failed.", underlyingError: error))
            }
            reportRequest(request, startedAt: started, status: response.status, failure: nil)
            if accepted.contains(response.status) {
                return .answer(response)
            }
            if response.status == 401, !refreshed, storage.authorization.refreshesAfterRefusal {
                continue
            }
            let error = response.storageError(about: subject, sentChecksum: sentChecksum)
            if response.isRetryable { return .retryable(error) }
            throw error
        }
        // Only reached after a refreshed token was refused too.
        throw StorageError(.unauthenticated, "The server refused a freshly fetched token.", httpStatus: 401)
    }

    /// Adds `credential` to `request`, refusing to send a secret in the clear to another machine.
    private func authorize(_ request: inout HTTPRequest, with credential: Credential) throws(StorageError) {
        guard !storage.authorization.isSecret || !request.url.isPlainHTTPToAnotherMachine else {
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
    /// - Throws: As ``send(_:accepting:about:sentChecksum:progress:)``.
    mutating func sendShielded(
        _ request: HTTPRequest,
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject,
        sentChecksum: Bool = false,
        shield: Shield = .whole,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)? = nil
    ) async throws(StorageError) -> Outcome {
        let copy = self
        let bodyLength = request.body.length
        let sent = BodySent()
        let shielded = Task { () async -> (Result<Outcome, StorageError>, RequestRunner) in
            var runner = copy
            do throws(StorageError) {
                let outcome = try await runner.send(
                    request, accepting: accepted, about: subject, sentChecksum: sentChecksum,
                    progress: { bytes in
                        if bytes >= bodyLength { sent.flag.store(true, ordering: .releasing) }
                        progress?(bytes)
                    })
                return (.success(outcome), runner)
            } catch {
                return (.failure(error), runner)
            }
        }
        let (result, runner) = await withTaskCancellationHandler {
            await shielded.value
        } onCancel: {
            if shield == .onceSent && !sent.flag.load(ordering: .acquiring) { shielded.cancel() }
        }
        self = runner
        return try result.get()
    }

    /// What a request carries to prove who sends it.
    private struct Credential {
        var scheme: String
        var token: String
        var quotaProject: String?
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
    private mutating func credential(refreshing: Bool) async throws(StorageError) -> Credential? {
        if case .credential(let credential) = storage.authorization.kind {
            let context = TokenRequestContext(
                transport: storage.transport, requestTimeout: storage.configuration.timeouts.request,
                retryPolicy: policy, deadline: attempts.retryTimeEnd(policy: policy),
                identification: storage.configuration.identification, events: events)
            let fresh = try await credential.token(context: context, replacing: refreshing ? token : nil)
            token = fresh.value
            hasToken = true
            // OAuth 2 access tokens, whichever service the endpoint is.
            return Credential(scheme: "Bearer", token: fresh.value, quotaProject: fresh.quotaProject)
        }
        if !hasToken || refreshing {
            token = try await storage.authorization.token(forceRefresh: refreshing)
            hasToken = true
        }
        return token.map { Credential(scheme: credentialScheme, token: $0) }
    }

    /// Notes that the operation reached a new high (more bytes committed or
    /// received than ever before in this run), which restarts the retry
    /// deadline from the next failure. Callers must not call it for progress
    /// that only makes up lost ground, or a server that loses and regains
    /// bytes could keep an operation alive for ever.
    mutating func madeProgress() {
        attempts.reset()
    }

    /// Waits before the next retry of a failure, or throws when the retry
    /// budget is spent.
    ///
    /// - Throws: ``StorageErrorCode/retryLimitExceeded`` (or
    ///   ``StorageErrorCode/quotaExceeded`` when the server was throttling)
    ///   with `failure` as the underlying error; ``StorageErrorCode/cancelled``.
    mutating func backOff(after failure: StorageError) async throws(StorageError) {
        let delay = attempts.recordFailure(failure, at: .now, policy: policy, jitter: Double.random(in: 0..<1))
        guard let delay else {
            let (reported, cutShort) = attempts.reported(failure)
            let throttled = reported.httpStatus == 429
            let malformed = reported.code == .protocolViolation
            let code: StorageErrorCode =
                throttled ? .quotaExceeded : malformed ? .protocolViolation : .retryLimitExceeded
            let budget = "the retry time (\(policy.budgetName), \(policy.budget))"
            let attached =
                cutShort
                ? "its end cut the last attempt short, and the failure before it is attached."
                : "the last failure is attached."
            throw StorageError(
                code,
                throttled
                    ? "The server kept throttling requests until \(budget) ran out; \(attached)"
                    : malformed
                        ? "The server kept sending malformed answers until \(budget) ran out; \(attached)"
                        : "Retries went on for longer than \(budget); \(attached)",
                httpStatus: reported.httpStatus,
                serverMessage: reported.serverMessage,
                underlyingError: reported
            )
        }
        reportRetry(after: failure, delay: delay)
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw .cancelled()
        }
    }
}

extension RequestRunner {
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
