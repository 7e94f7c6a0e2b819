package import Foundation
import HTTP1
import Synchronization

/// A loopback server (a ``ScriptedHTTPServer``) that numbers the requests to each path across
/// all connections, and lets a test's handler answer each one on its connection however it
/// likes: well, badly, slowly or not at all. The counts are what tests assert on.
package final class NumberedServer: Sendable {
    /// What the handler does with a request.
    package enum Next: Sendable {
        /// Reads the connection's next request.
        case keepReading
        /// Returns from the script: the connection ends (with close_notify over `https`).
        case close
    }

    /// The path of every request, in order of arrival.
    private final class Log: Sendable {
        let paths = Mutex<[String]>([])
    }

    private let server: ScriptedHTTPServer
    private let log = Log()

    /// - Parameter handler: Answers request number `index` (0, 1, … per path) to `path`, on
    ///   `connection`, and says whether to read on.
    package init(
        scheme: ScriptedHTTPServer.Scheme = .http,
        handler:
            @escaping @Sendable (_ connection: ScriptedConnection, _ path: String, _ index: Int, _ body: [UInt8]) ->
            Next
    ) throws {
        let log = self.log
        server = try ScriptedHTTPServer(scheme: scheme) { connection, _ in
            while let (head, body) = connection.readRequest() {
                let path = String(head.target.prefix { $0 != "?" })
                let index = log.paths.withLock { paths in
                    defer { paths.append(path) }
                    return paths.count(where: { $0 == path })
                }
                if handler(connection, path, index, body) == .close { return }
            }
        }
    }

    package var baseURL: URL { server.baseURL }
    package var acceptedConnections: Int { server.acceptedConnections }

    /// How many requests to `path` arrived (whole heads).
    package func requests(to path: String) -> Int {
        log.paths.withLock { $0.count(where: { $0 == path }) }
    }

    package func stop() {
        server.stop()
    }

    /// An empty answer with `status`.
    package static func empty(_ status: Int) -> String {
        "HTTP/1.1 \(status) Scripted\r\nContent-Length: 0\r\n\r\n"
    }

    /// A head announcing 10 GB of JSON, far past any limit on answers held in memory.
    package static let tenGigabyteHead =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n"
}
