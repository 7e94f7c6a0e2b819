/// The status line and header fields of a response.
package struct HTTPResponseHead: Sendable {
    package var version: HTTPVersion
    /// The three-digit status code.
    package var status: Int
    /// The reason phrase as sent (may be empty); ignored by recipients.
    package var reason: String
    package var headers: HTTPHeaders

    /// A head whose reason phrase is the standard one for `status`.
    package init(status: Int, headers: HTTPHeaders = [:], version: HTTPVersion = .http11, reason: String? = nil) {
        self.version = version
        self.status = status
        self.reason = reason ?? HTTPStatus.reasonPhrase(status)
        self.headers = headers
    }

    /// Whether the connection may carry another request after this response, judging by this head alone.
    package var wantsKeepAlive: Bool {
        HTTPHeaders.connectionKeepsAlive(version: version, headers: headers)
    }
}
