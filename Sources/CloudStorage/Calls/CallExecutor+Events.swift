import HTTPClient

extension CallExecutor {
    /// Reports a request's outcome: its answer's status, or how it failed below HTTP.
    func reportRequest(_ request: HTTPRequest, startedAt start: ContinuousClock.Instant, status: Int?, failure: String?)
    {
        guard events.isEnabled else { return }
        let duration = ContinuousClock.now - start
        let url = request.url.redactedForEvents
        let outcome = status.map { "\($0)" } ?? "failed (\(failure ?? "unknown"))"
        var metadata: [String: StorageEvent.Value] = [
            "method": .string(request.method), "url": .string(url), "duration_ms": .integer(duration.milliseconds),
        ]
        if let status { metadata["status"] = .integer(Int64(status)) }
        if let failure { metadata["error"] = .string(failure) }
        events.emit(
            .request, .debug, "\(request.method) \(url): \(outcome) in \(duration.milliseconds) ms", metadata)
    }

    /// Reports that the call waits `delay` before trying again after `failure`, and the rule of
    /// the retry strategy that allowed it.
    func reportRetry(after failure: StorageError, delay: Duration, rule: String) {
        guard events.isEnabled else { return }
        var metadata: [String: StorageEvent.Value] = [
            "reason": .string(failure.message), "rule": .string(rule), "delay_ms": .integer(delay.milliseconds),
            "attempt": .integer(Int64(attemptCount)), "invocation_id": .string(invocationID),
        ]
        if let status = failure.httpStatus { metadata["status"] = .integer(Int64(status)) }
        events.emit(
            .retry, .info, "in \(delay.milliseconds) ms after: \(failure.message) (retried: \(rule))", metadata)
    }
}

extension Duration {
    /// The whole milliseconds in this duration.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
