import HTTPClient

extension RequestRunner {
    /// Sends a request that may safely be repeated until the server accepts
    /// it, backing off between retryable failures within the retry budget.
    ///
    /// - Parameters:
    ///   - request: An idempotent request (a read, a PATCH, a delete).
    ///   - accepted: The statuses that count as success.
    ///   - subject: What a 404 is about.
    /// - Returns: The accepted answer.
    /// - Throws: The final ``StorageError``; ``StorageErrorCode/cancelled``
    ///   when the calling task is cancelled.
    mutating func sendRetrying(
        _ request: HTTPRequest,
        accepting accepted: Set<Int>,
        about subject: HTTPResponse.Subject
    ) async throws(StorageError) -> HTTPResponse {
        while true {
            switch try await send(request, accepting: accepted, about: subject) {
            case .answer(let response):
                return response
            case .retryable(let failure):
                try await backOff(after: failure)
            }
        }
    }
}
