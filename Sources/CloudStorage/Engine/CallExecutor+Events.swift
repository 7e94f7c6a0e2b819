import HTTPClient

extension CallExecutor {
    /// Reports a request's outcome: its answer's status, or how it failed below HTTP.
    func reportRequest(_ request: HTTPRequest, startedAt start: ContinuousClock.Instant, status: Int?, failure: String?)
    {
        guard events.isEnabled else { return }
        let duration = ContinuousClock.now - start
        let url = request.url.redactedForEvents
        let outcome = status.map { "\($0)" } ?? "failed (\(failure ?? "unknown"))"
        var metadata = ["method": request.method, "url": url, "duration_ms": String(duration.milliseconds)]
        if let status { metadata["status"] = String(status) }
        if let failure { metadata["error"] = failure }
        events.emit(
            .request, .debug, "\(request.method) \(url): \(outcome) in \(duration.milliseconds) ms", metadata)
    }

    /// Reports that the call waits `delay` before trying again after `failure`, and the rule of
    /// the retry strategy that allowed it.
    func reportRetry(after failure: StorageError, delay: Duration, rule: String) {
        guard events.isEnabled else { return }
        var metadata = [
            "reason": failure.message, "rule": rule, "delay_ms": String(delay.milliseconds),
            "attempt": String(attemptCount), "invocation_id": invocationID,
        ]
        if let status = failure.httpStatus { metadata["status"] = String(status) }
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
