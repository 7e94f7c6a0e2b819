/// The request line and header fields of a request.
package struct HTTPRequestHead: Sendable {
    /// `GET`, `PUT`, … (case-sensitive, as sent).
    package var method: String
    /// The request target as sent, e.g. `/o?name=a%2Fb`.
    package var target: String
    package var version: HTTPVersion
    package var headers: HTTPHeaders

    package init(method: String, target: String, version: HTTPVersion = .http11, headers: HTTPHeaders = [:]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// Whether the connection may carry another request after this one's response,
    /// judging by this head alone (RFC 9112 §9.3): HTTP/1.1 persists unless
    /// `Connection: close`; HTTP/1.0 closes unless `Connection: keep-alive`.
    package var wantsKeepAlive: Bool {
        HTTPHeaders.connectionKeepsAlive(version: version, headers: headers)
    }
}

extension HTTPHeaders {
    /// The comma-separated tokens of every field with this name, lowercased, empty elements dropped.
    package func tokens(_ name: String) -> [String] {
        values(name).flatMap { value in
            value.split(separator: ",").map { $0.trimmingHTTPWhitespace().lowercased() }.filter { !$0.isEmpty }
        }
    }

    /// The keep-alive rule of RFC 9112 §9.3 for a message of `version` with these headers.
    package static func connectionKeepsAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let options = headers.tokens("Connection")
        if options.contains("close") { return false }
        if version.major == 1 && version.minor >= 1 { return true }
        return options.contains("keep-alive")
    }
}

extension Substring {
    /// Drops leading and trailing spaces and horizontal tabs (HTTP's OWS).
    package func trimmingHTTPWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
