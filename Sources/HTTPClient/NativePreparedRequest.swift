import Foundation
import HTTP1

/// An ``HTTPRequest`` checked and serialized for the native transport: where
/// to connect, the head bytes, and the facts that decide connection reuse.
struct NativePreparedRequest: Sendable {
    let method: String
    /// The host to resolve (an IPv6 literal without brackets).
    let host: String
    let port: Int
    /// Whether the URL is `https://`: the connection is a TLS stream over the socket.
    let usesTLS: Bool
    /// The connection pool's key: `host:port` for plain connections,
    /// `https://host:port` for TLS ones, so the two never mix.
    var key: String { usesTLS ? "https://\(host):\(port)" : "\(host):\(port)" }
    /// The serialized request head, ending with the empty line.
    let head: [UInt8]
    let body: HTTPRequestBody
    let idleTimeout: Duration
    /// When the whole exchange must be over (``HTTPRequest/deadline``).
    let deadline: ContinuousClock.Instant?
    /// What bounds each wait of the exchange.
    var waitLimit: NativeWaitLimit { NativeWaitLimit(idle: idleTimeout, deadline: deadline) }
    /// Where a streamed response body goes, if the request asked for one.
    let responseSink: HTTPResponseSink?
    /// Whether the request asked the server to close the connection after it.
    let closesConnection: Bool
    /// Whether sending the request twice does no harm, so that a pooled
    /// connection found dead may be replaced and the request sent again even
    /// after its bytes were handed to the kernel: what the request's builder
    /// said (``HTTPRequest/isIdempotent``), never a guess from its method. (A
    /// request whose first byte could not be written at all is always safe to
    /// send again.)
    let isReplayable: Bool

    /// Prepares `request`.
    ///
    /// - Throws: ``HTTPTransportError/Kind/other`` (permanent) for a URL that
    ///   is not `http://` or `https://host[:port]/…`, or a head that cannot be written.
    init(_ request: HTTPRequest) throws(HTTPTransportError) {
        responseSink = request.responseSink
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else {
            // Never the URL itself: a URL may hold a credential.
            throw HTTPTransportError(
                kind: .other,
                message:
                    "The native transport speaks http:// and https:// only; this request's URL has scheme '\(request.url.scheme ?? "")'.",
                permanent: true, remedy: .anotherTransport
            )
        }
        var host = components.host ?? ""
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = components.port ?? (scheme == "https" ? 443 : 80) as Int?,
            (1...65535).contains(port)
        else {
            throw HTTPTransportError(
                kind: .other, message: "The request's URL has no usable host and port.", permanent: true)
        }
        self.method = request.method
        self.host = host
        self.port = port
        self.usesTLS = scheme == "https"
        self.body = request.body
        self.idleTimeout = request.idleTimeout
        self.deadline = request.deadline

        let headers = Self.headers(of: request, host: host, port: components.port)
        self.closesConnection = headers.tokens("Connection").contains("close")
        self.isReplayable = request.isIdempotent

        var target = components.percentEncodedPath
        if target.isEmpty { target = "/" }
        if let query = components.percentEncodedQuery { target += "?" + query }
        var head: [UInt8] = []
        head.reserveCapacity(512)
        do {
            try HTTPHeadSerializer.append(
                HTTPRequestHead(method: request.method, target: target, headers: headers), to: &head)
        } catch {
            // The serializer's message names the rule broken, never the offending value.
            throw HTTPTransportError(kind: .other, message: "The request cannot be sent: \(error).", permanent: true)
        }
        self.head = head
    }

    /// The head's fields: the request's own, with `Host` (the URL's `host[:port]`) unless it has one,
    /// and the body's framing, always `Content-Length`, never chunked.
    private static func headers(of request: HTTPRequest, host: String, port: Int?) -> HTTPHeaders {
        var headers = request.headers
        if headers["Host"] == nil {
            let hostField = host.contains(":") ? "[\(host)]" : host
            headers.set("Host", port.map { "\(hostField):\($0)" } ?? hostField)
        }
        headers.remove("Transfer-Encoding")
        let length = request.body.length
        // Framing, not retry safety: RFC 9110 §8.6 has a client send no
        // Content-Length for a bodiless request whose method gives a body no meaning.
        if length > 0 || (request.method != "GET" && request.method != "HEAD") {
            headers.set("Content-Length", String(length))
        } else {
            headers.remove("Content-Length")
        }
        return headers
    }
}
