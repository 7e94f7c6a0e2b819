/// An error from installing, starting or talking to a ``FakeGCSServer``.
///
/// The ``code`` says what kind of failure it was; ``httpStatus`` carries the
/// server's HTTP status when the server answered with an unexpected one, so a
/// missing object (404) can be told apart from other failures. The
/// ``description`` explains what failed and includes the tail of the relevant
/// tool output (pip, the server's stderr) or response body.
///
/// ```swift
/// do {
///     _ = try await server.objectResource(bucket: "b", object: "missing")
/// } catch let error as FakeGCSServerError where error.httpStatus == 404 {
///     // the object does not exist
/// }
/// ```
public struct FakeGCSServerError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure an error reports; more codes may be added later.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case installationFailed
            case launchFailed
            case notReady
            case unexpectedStatus
            case invalidResponse
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// Creating the virtualenv, installing the pip package or finding the binary failed.
        public static let installationFailed = Code(.installationFailed)
        /// The server process could not be launched, or exited before it was ready.
        public static let launchFailed = Code(.launchFailed)
        /// The server was running but did not answer in time.
        public static let notReady = Code(.notReady)
        /// The server answered with an HTTP status the call does not accept; see ``FakeGCSServerError/httpStatus``.
        public static let unexpectedStatus = Code(.unexpectedStatus)
        /// The server's answer was not an HTTP response, or a request could not be formed.
        public static let invalidResponse = Code(.invalidResponse)

        /// The code's name, for messages.
        public var description: String {
            switch value {
            case .installationFailed: "installationFailed"
            case .launchFailed: "launchFailed"
            case .notReady: "notReady"
            case .unexpectedStatus: "unexpectedStatus"
            case .invalidResponse: "invalidResponse"
            }
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The HTTP status the server answered with, for ``Code/unexpectedStatus``; otherwise `nil`.
    public let httpStatus: Int?
    /// A message that says what failed, with the relevant output tail.
    public let description: String

    init(_ code: Code, httpStatus: Int? = nil, _ description: String) {
        self.code = code
        self.httpStatus = httpStatus
        self.description = description
    }
}
