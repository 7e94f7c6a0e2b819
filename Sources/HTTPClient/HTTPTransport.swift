package import Foundation
package import HTTP1
import SystemCalls

/// Moves one HTTP request and its answer: the seam between the layer that
/// builds requests and the network.
///
/// That layer never knows which implementation it is using. An implementation
/// must guarantee:
/// - `execute` sends the whole ``HTTPRequest/body`` (re-reading file regions
///   from their offsets, never buffering a whole region in memory) and returns
///   the complete response, whatever its status: a 4xx or 5xx is a response,
///   not an error.
/// - It throws ``HTTPTransportError`` for failures below HTTP (connect,
///   reset, time-out) and `CancellationError` when the calling task is
///   cancelled; cancellation aborts the request promptly.
/// - It ends the request with ``HTTPTransportError/Kind/timedOut`` once
///   ``HTTPRequest/idleTimeout`` passes without progress, and once
///   ``HTTPRequest/deadline`` passes whatever the progress: a peer that
///   trickles bytes can hold a request up to its deadline, never longer.
/// - `progress` is called with the running total of body bytes handed to the
///   network, never decreasing, from any thread, at a bounded rate.
/// - It performs no blocking system call on Swift's cooperative thread pool.
/// - When the request has a ``HTTPRequest/responseSink``, it calls the sink's
///   ``HTTPResponseSink/begin`` once with the final status and headers; if
///   that returns true, the body goes to ``HTTPResponseSink/receive`` in
///   order, chunk by chunk as it arrives, in bounded memory and off the
///   cooperative pool, and the returned response's body is empty. When the
///   sink answers ``HTTPResponseSink/Demand/enough``, the transport reads no
///   more of the body and returns the response as it would at the body's end
///   (closing the connection rather than reusing it, as body bytes may be left
///   unread on it). An
///   error the sink throws is a failure: it aborts the request and is thrown as
///   ``HTTPTransportError/Kind/sinkFailed`` carrying it, untouched, in
///   ``HTTPTransportError/underlying``; an error a body file throws, as
///   ``HTTPTransportError/Kind/bodySourceFailed`` the same way.
///
/// The transport knows nothing of the layer above: it throws only its own errors
/// (and `CancellationError`), carries errors from above opaquely, and decides
/// nothing from a request's method; the layer that builds a request says
/// whether it may be sent twice (``HTTPRequest/isIdempotent``).
package protocol HTTPTransport: Sendable {
    /// The longest body one request can carry, or nil when bodies of any
    /// length stream through. The caller never sends a longer one.
    var maximumBodyLength: Int64? { get }

    /// What this transport does beyond the guarantees above, the same for its whole life.
    /// Read it from the transport that carries a request (``carrier(for:)``).
    var capabilities: HTTPTransportCapabilities { get }

    /// The transport that carries requests to `url`: this one, or for a transport that
    /// hands each request on to another, that one's carrier. Its ``capabilities`` are the
    /// ones such a request gets.
    func carrier(for url: URL) -> any HTTPTransport

    /// Sends `request` and returns the complete response (see above).
    func execute(
        _ request: HTTPRequest,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse

    /// Closes the connections this transport keeps and refuses every request it has not yet
    /// begun with ``HTTPTransportError/Kind/shutDown``; requests already on a connection run
    /// to their end, and their connections close afterwards. Idempotent.
    func shutdown()
}

extension HTTPTransport {
    /// None: a transport that does not say reads file regions in ways the caller cannot see,
    /// and may deliver every request's body on one shared queue.
    package var capabilities: HTTPTransportCapabilities { [] }

    /// This transport: it carries every request itself.
    package func carrier(for url: URL) -> any HTTPTransport { self }

    /// Nothing: a transport that keeps no connections of its own (or shares them process-wide,
    /// as `URLSession.shared` does) has nothing to close.
    package func shutdown() {}
}

/// What an ``HTTPTransport`` does beyond what every transport guarantees: constant for the
/// transport's life, so that a caller decides once how to feed it.
package struct HTTPTransportCapabilities: OptionSet, Sendable {
    package let rawValue: Int

    /// The capabilities whose bits `rawValue` sets.
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// File regions of `http://` requests are sent by reading them through
    /// ``HTTPBodyFile/readExactly(into:count:at:)``, in order (not by `sendfile(2)` or in a way
    /// of the transport's own), so whoever supplies the file sees every byte sent and can hash
    /// them as they pass instead of reading the file a second time.
    package static let readsPlainFileRegions = HTTPTransportCapabilities(rawValue: 1 << 0)
    /// The same for `https://` requests.
    package static let readsEncryptedFileRegions = HTTPTransportCapabilities(rawValue: 1 << 1)
    /// A ``HTTPResponseSink`` may block for as long as its caller likes (waiting for a slow
    /// consumer) without holding up any other request: each request has a thread of its own.
    package static let letsResponseSinksWait = HTTPTransportCapabilities(rawValue: 1 << 2)
    /// The transport decodes a response's `Content-Encoding` (gzip) itself, leaving the header
    /// in place: the sink receives decoded bytes (`URLSession` does, and cannot be told not to).
    package static let decodesContentCoding = HTTPTransportCapabilities(rawValue: 1 << 3)

    /// Whether file regions of requests to `url` are read through their ``HTTPBodyFile``:
    /// ``readsEncryptedFileRegions`` for `https`, ``readsPlainFileRegions`` for any other scheme.
    package func readsFileRegions(to url: URL) -> Bool {
        contains(url.scheme?.lowercased() == "https" ? .readsEncryptedFileRegions : .readsPlainFileRegions)
    }
}

/// A request for an ``HTTPTransport``.
package struct HTTPRequest: Sendable {
    /// The method, such as `GET`.
    package var method: String
    /// Where the request goes: `http://` or `https://` for the native transport.
    package var url: URL
    /// The header fields; the transport adds `Host` and the body's framing.
    package var headers: HTTPHeaders
    /// What the request sends.
    package var body: HTTPRequestBody
    /// How long the request may go without progress before it fails with
    /// ``HTTPTransportError/Kind/timedOut``.
    package var idleTimeout: Duration
    /// The instant by which the whole exchange — connecting, a TLS handshake,
    /// the request and its complete answer — must be over, or it fails with
    /// ``HTTPTransportError/Kind/timedOut``; nil (the default) leaves only the
    /// idle time-out. Unlike that time-out, no pace of bytes moves it. The
    /// layer that builds the request sets it (from its retry
    /// rules); a transfer whose bytes keep moving has none.
    package var deadline: ContinuousClock.Instant?
    /// Where the response body goes instead of ``HTTPResponse/body``, for
    /// bodies too large to hold in memory (downloads).
    package var responseSink: HTTPResponseSink?
    /// Whether the server may receive this request twice with no effect
    /// beyond receiving it once, so that a transport may send it again on
    /// its own when the kept-alive connection it used turns out dead, even
    /// after some of it reached the kernel.
    ///
    /// The layer that builds the request decides, from its protocol's rules;
    /// the transport never guesses from the method. False, the default, means
    /// a transport sends it again only when none of it was written.
    package var isIdempotent: Bool

    /// A request without a deadline or a response sink.
    package init(
        method: String,
        url: URL,
        headers: HTTPHeaders = HTTPHeaders(),
        body: HTTPRequestBody = .empty,
        idleTimeout: Duration = .seconds(60),
        isIdempotent: Bool = false
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.idleTimeout = idleTimeout
        self.deadline = nil
        self.isIdempotent = isIdempotent
    }
}

/// A request body: a sequence of in-memory and file-backed segments, sent in
/// order, each re-readable so a transport may replay it.
package struct HTTPRequestBody: Sendable {
    /// A part of a body.
    package enum Segment: Sendable {
        /// Bytes in memory, sent from the `Data`'s own storage (a slice, never a copy).
        case data(Data)
        /// `length` bytes of a file starting at `offset`, read when sent.
        case fileRegion(any HTTPBodyFile, offset: Int64, length: Int64)

        /// The part's byte count.
        package var length: Int64 {
            switch self {
            case .data(let data): Int64(data.count)
            case .fileRegion(_, _, let length): length
            }
        }
    }

    /// The segments, sent in order.
    package var segments: [Segment]

    /// A body of `segments`, in order.
    package init(segments: [Segment]) {
        self.segments = segments
    }

    /// No body.
    package static let empty = HTTPRequestBody(segments: [])

    /// A body of `data` alone.
    package static func data(_ data: Data) -> HTTPRequestBody {
        HTTPRequestBody(segments: [.data(data)])
    }

    /// The total number of bytes, sent as `Content-Length`.
    package var length: Int64 { segments.reduce(0) { $0 + $1.length } }

    /// The whole body in one `Data`: a single data segment as it is, anything
    /// else gathered off the cooperative pool (file segments with `pread`).
    ///
    /// - Throws: ``HTTPTransportError/Kind/bodySourceFailed`` carrying the
    ///   file's own error when a file segment cannot be read whole;
    ///   `CancellationError` when the task is cancelled before the reading starts.
    package func collected() async throws -> Data {
        if segments.count == 1, case .data(let data) = segments[0] {
            return data
        }
        let segments = segments
        let total = Int(length)
        return try await BlockingThreadPool.shared.run { () throws(HTTPTransportError) -> Data in
            var data = Data(count: total)
            var position = 0
            for segment in segments {
                let count = Int(segment.length)
                switch segment {
                case .data(let bytes):
                    data.replaceSubrange(position..<(position + count), with: bytes)
                case .fileRegion(let file, let offset, _):
                    // `withUnsafeMutableBytes` only rethrows untyped errors: carry the file's out as a value.
                    let read = data.withUnsafeMutableBytes { raw -> Result<Void, any Error> in
                        guard let base = raw.baseAddress else { return .success(()) }
                        return Result { try file.readExactly(into: base + position, count: count, at: offset) }
                    }
                    if case .failure(let error) = read { throw .bodySourceFailed(error) }
                }
                position += count
            }
            return data
        }.get()
    }
}

/// Receives a response body as it arrives, on the transport's own thread.
///
/// Both closures run on a thread that may block (never the cooperative
/// pool), one call at a time, in order; they must not suspend. A sink that
/// has what it wants says so by returning ``Demand/enough``; what it throws
/// is a failure of the caller's own: the transport aborts the request and
/// hands it back untouched inside ``HTTPTransportError/Kind/sinkFailed``.
package struct HTTPResponseSink: Sendable {
    /// Whether a sink wants more of the body.
    package enum Demand: Sendable, Equatable {
        /// Go on: hand over the next bytes.
        case more
        /// The sink has what it wants: read no more, and return the response as complete.
        case enough
    }

    /// Called once with the final status and headers, before any body byte:
    /// true streams the body to ``receive``; false collects it into
    /// ``HTTPResponse/body`` as usual (for error answers). Throwing aborts
    /// the request.
    package var begin: @Sendable (_ status: Int, _ headers: HTTPHeaders) throws -> Bool
    /// Called with the next body bytes; they are valid only during the call.
    /// Returns whether the sink wants more; throwing aborts the request.
    package var receive: @Sendable (_ bytes: UnsafeRawBufferPointer) throws -> Demand

    /// A sink of the two calls.
    package init(
        begin: @escaping @Sendable (_ status: Int, _ headers: HTTPHeaders) throws -> Bool,
        receive: @escaping @Sendable (_ bytes: UnsafeRawBufferPointer) throws -> Demand
    ) {
        self.begin = begin
        self.receive = receive
    }
}

/// A complete HTTP response.
package struct HTTPResponse: Sendable {
    /// The final status code.
    package var status: Int
    /// The final head's header fields.
    package var headers: HTTPHeaders
    /// The body, unless a response sink took it.
    package var body: Data

    /// A response of `status`, `headers` and `body` (empty when a sink took it).
    package init(status: Int, headers: HTTPHeaders, body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A failure below HTTP.
package struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    package enum Kind: Sendable, Equatable {
        /// Could not connect.
        case connectFailed
        /// The connection broke (reset, closed early) before the response was complete.
        case connectionLost
        /// Nothing moved for longer than the request's idle time-out.
        case timedOut
        /// The server's answer is not valid HTTP (a head or body framing that
        /// cannot be parsed): the connection is dropped, and the request's
        /// effect on the server is as unknown as after a lost connection.
        case malformedResponse
        /// A file region of the request body could not be read (the file
        /// ended early or a read failed); the file's own error is
        /// ``HTTPTransportError/underlying``.
        case bodySourceFailed
        /// The request's ``HTTPRequest/responseSink`` threw; its error is
        /// ``HTTPTransportError/underlying``.
        case sinkFailed
        /// The TLS handshake failed for a reason retrying cannot fix (a
        /// certificate that does not verify, no common protocol version, a
        /// plain HTTP server behind `https://`), or TLS is unavailable here;
        /// the `TLSError` is ``HTTPTransportError/underlying``. Always
        /// ``HTTPTransportError/permanent``; no request byte was sent.
        case tlsFailure
        /// After the TLS handshake the server's stream broke TLS: bytes that
        /// are no TLS record, a record that fails decryption or authentication,
        /// one longer than TLS allows, or a fatal alert; the `TLSError` is
        /// ``HTTPTransportError/underlying``. A stream that merely ends early
        /// (even inside a record, or with close_notify) is
        /// ``connectionLost`` instead.
        case corruptStream
        /// The answer's body, collected into memory (no response sink took
        /// it), is longer than the transport's limit for such answers; it was
        /// refused as soon as that showed (an announced `Content-Length`
        /// before any body byte), and the connection dropped.
        case responseTooLarge
        /// The transport was shut down (``HTTPTransport/shutdown()``) before the request got a
        /// connection: no request byte was sent. Always ``HTTPTransportError/permanent``.
        case shutDown
        /// Anything else the transport reports.
        case other
    }

    /// What failed.
    package var kind: Kind
    /// What happened, naming the server as `host:port`, never a URL's path or query.
    package var message: String
    /// The body file's own error, for ``Kind/bodySourceFailed``; the sink's,
    /// for ``Kind/sinkFailed``. Carried as it was thrown, so the layer that
    /// owns it can recover it.
    package var underlying: (any Error)?
    /// Whether sending the same request again can only fail the same way (a
    /// URL the transport cannot serve, a head it cannot write): the caller
    /// gives up at once instead of retrying.
    package var permanent = false
    /// What the caller could change so that the request can work, where the transport knows;
    /// the layer that owns the caller's settings words that advice in its own terms.
    package var remedy: Remedy?

    /// A change of the caller's that lets a request the transport failed work.
    package enum Remedy: Sendable, Equatable {
        /// The transport does not serve the URL's scheme: send the request with one that does.
        case anotherTransport
        /// The server's certificate comes from a private CA, and the transport trusts only the
        /// system's store: send the request with a transport that takes trust roots of its own.
        case transportWithOwnTrustRoots
    }

    /// A failure of `kind`; see the properties for the rest.
    package init(
        kind: Kind, message: String, underlying: (any Error)? = nil, permanent: Bool = false, remedy: Remedy? = nil
    ) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
        self.permanent = permanent
        self.remedy = remedy
    }

    package var description: String { "\(kind): \(message)" }

    /// The failure of a request whose body file threw `error`.
    package static func bodySourceFailed(_ error: any Error) -> HTTPTransportError {
        HTTPTransportError(
            kind: .bodySourceFailed, message: "The request body could not be read: \(error)", underlying: error)
    }

    /// The failure of a request whose response sink threw `error`.
    package static func sinkFailed(_ error: any Error) -> HTTPTransportError {
        HTTPTransportError(
            kind: .sinkFailed, message: "The response body was refused: \(error)", underlying: error)
    }
}
