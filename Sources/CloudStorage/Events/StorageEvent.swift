/// Something the SDK did, as a ``StorageEventHandler`` receives it.
///
/// Each event has a ``kind`` (what happened), a suggested ``level``, the ``operationID`` of the
/// operation it belongs to, a one-line human-readable ``message`` and ``metadata``: stable keys
/// with typed values (``Value``), ready to hand to a structured logger.
///
/// ```swift
/// struct RetryCounter: StorageEventHandler {
///     let retries: Counter  // your metrics type
///     func handle(_ event: StorageEvent) {
///         if event.kind == .retry { retries.increment() }
///     }
/// }
/// ```
public struct StorageEvent: Sendable, CustomStringConvertible {
    /// What an event is about. New kinds may be added; match the ones you need.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's stable name, such as `request`.
        public let name: String

        init(_ name: String) { self.name = name }

        /// The kind's ``name``.
        public var description: String { name }

        /// A request got an answer or failed. Metadata: `method`, `url` (redacted: see
        /// ``StorageEvent/metadata``), `status` (the HTTP status) or `error` (the failure below
        /// HTTP), and `duration_ms`.
        public static let request = Kind("request")
        /// An operation waits before trying again. Metadata: `reason` (the failure's message),
        /// `status` when the failure was an HTTP answer, `rule` (the rule of the retry strategy
        /// that allowed the retry: "the request is idempotent", "the request is made idempotent
        /// by ifGenerationMatch=0", "the retry policy is always"; see
        /// ``StorageConfiguration/Retry/Policy``), `attempt` (the attempts so far), `invocation_id`
        /// (the call's id, as `x-goog-api-client` sends it), `delay_ms`.
        public static let retry = Kind("retry")
        /// A resumable upload opened a session on the server. Metadata: `object`. The session's
        /// URL is never part of it.
        public static let uploadSessionStarted = Kind("upload-session-started")
        /// An upload continues a session it opened earlier (after a pause, or a session
        /// restored with ``Storage/resumeUpload(_:from:)``), reported once the server said what
        /// the session holds. Metadata: `object`, `committed` (the bytes the session holds).
        public static let uploadSessionResumed = Kind("upload-session-resumed")
        /// The server lost an upload's session (or finalized an incomplete object) and the
        /// upload starts again with a new one. Metadata: `object`, `reason`, `restart` (1, 2, …).
        public static let uploadSessionRestarted = Kind("upload-session-restarted")
        /// An access token was fetched: the first one of a credential, or a refresh. Metadata:
        /// `source` (the credential's kind, such as `service account`), `refresh` (`true` or
        /// `false`), `outcome` (`fetched` or `failed`), `duration_ms`. Never the token.
        public static let tokenFetched = Kind("token-fetched")
        /// A ``Storage`` chose its HTTP transport. Metadata: `transport` (`native`,
        /// `urlSession`, or `native for http, urlSession for https`), and `reason` when it fell
        /// back to `URLSession` (OpenSSL 3 could not be loaded, or a proxy is configured).
        public static let transportChosen = Kind("transport-chosen")
        /// What the SDK concluded about a transfer's checksum. Metadata: `object`, `verdict`
        /// (`matched`, `mismatched` or `not checkable`), `reason` for the last two.
        public static let checksumVerdict = Kind("checksum-verdict")
        /// The handler fell behind and events were lost. Metadata: `count`.
        public static let eventsDropped = Kind("events-dropped")
    }

    /// One fact of an event: text, a whole number or a truth value, so that a handler reads a
    /// status as the number 503 and a flag as `true`; ``description`` is the text a logger prints.
    ///
    /// ```swift
    /// if event.kind == .retry, event.metadata["status"]?.integerValue == 503 {
    ///     unavailable.increment()
    /// }
    /// ```
    public enum Value: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation,
        ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral
    {
        /// Text, such as an object's name or a reason.
        case string(String)
        /// A whole number, such as an HTTP status, a byte count or milliseconds.
        case integer(Int64)
        /// A truth value.
        case bool(Bool)

        /// Creates a text value from a literal.
        ///
        /// - Parameter value: The text.
        public init(stringLiteral value: String) {
            self = .string(value)
        }

        /// Creates a text value from an interpolated literal.
        ///
        /// - Parameter stringInterpolation: The interpolation.
        public init(stringInterpolation: DefaultStringInterpolation) {
            self = .string(String(stringInterpolation: stringInterpolation))
        }

        /// Creates a number value from a literal.
        ///
        /// - Parameter value: The number.
        public init(integerLiteral value: Int64) {
            self = .integer(value)
        }

        /// Creates a truth value from a literal.
        ///
        /// - Parameter value: The truth value.
        public init(booleanLiteral value: Bool) {
            self = .bool(value)
        }

        /// The text, for ``string(_:)``; nil otherwise.
        public var stringValue: String? {
            if case .string(let text) = self { text } else { nil }
        }

        /// The number, for ``integer(_:)``; nil otherwise.
        public var integerValue: Int64? {
            if case .integer(let number) = self { number } else { nil }
        }

        /// The truth value, for ``bool(_:)``; nil otherwise.
        public var boolValue: Bool? {
            if case .bool(let flag) = self { flag } else { nil }
        }

        /// The value as text: the string itself, the number in decimal, `true` or `false`.
        public var description: String {
            switch self {
            case .string(let text): text
            case .integer(let number): String(number)
            case .bool(let flag): String(flag)
            }
        }
    }

    /// How much an event matters, in swift-log's terms (the levels map one to one).
    public enum Level: Sendable, Hashable, Comparable {
        /// Routine detail: each request, each token fetch, the transport chosen.
        case debug
        /// Something worth noticing that the SDK handled: a retry, a session restarted.
        case info
        /// Something that went wrong: a checksum that did not match, events lost.
        case warning
    }

    /// What the event is about.
    public let kind: Kind
    /// How much it matters.
    public let level: Level
    /// The operation the event belongs to (a download, an upload run, a metadata read, …):
    /// unique within the process, so a handler can group an operation's events. Nil for events
    /// that belong to no operation (``Kind/transportChosen``, ``Kind/eventsDropped``).
    public let operationID: UInt64?
    /// One line for people: no line breaks, no secrets.
    public let message: String
    /// The event's facts under stable keys (listed with each ``Kind``).
    ///
    /// Counts, statuses and times are numbers (``Value/integer(_:)``: `status`, `attempt`,
    /// `restart`, `committed`, `parts`, `count` and every `…_ms`), `refresh` is a truth value
    /// (``Value/bool(_:)``), everything else text (``Value/string(_:)``).
    ///
    /// URLs are redacted: scheme, host, port and path are kept; of the query, only parameters
    /// known to be harmless (`name`, `uploadType`, `alt`, `prefix`, `generation`, …) keep their
    /// values, every other parameter's value (`upload_id`, `X-Goog-Signature`, a download
    /// `token`, …) is replaced by `REDACTED`.
    public let metadata: [String: Value]

    /// Creates an event; the SDK makes them, tests and bridges may too.
    ///
    /// - Parameters:
    ///   - kind: What it is about.
    ///   - level: How much it matters.
    ///   - operationID: The operation it belongs to, if any.
    ///   - message: One line for people; line breaks are replaced by spaces.
    ///   - metadata: The facts under stable keys.
    public init(
        kind: Kind, level: Level, operationID: UInt64?, message: String, metadata: [String: Value] = [:]
    ) {
        self.kind = kind
        self.level = level
        self.operationID = operationID
        self.message = message.contains(where: \.isNewline) ? String(message.map { $0.isNewline ? " " : $0 }) : message
        self.metadata = metadata
    }

    /// `#<operation> <kind> <message>`, one line: what `cloud-storage --verbose` prints.
    public var description: String {
        let operation = operationID.map { "#\($0) " } ?? ""
        return "\(operation)\(kind) \(message)"
    }
}
