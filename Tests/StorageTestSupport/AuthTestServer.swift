import CloudStorage
package import Foundation
package import HTTP1
import HTTPTestServers
import Synchronization

/// A loopback HTTP server (a ``ScriptedHTTPServer`` serving kept-alive connections) that
/// answers every request with what a test's handler says, and records the requests: a token
/// endpoint, a metadata server and a storage server in one, for the credential tests.
package final class AuthTestServer: Sendable {
    /// One request as the server read it.
    package struct Request: Sendable {
        /// The request line's method.
        package let method: String
        /// The request line's target: path and query.
        package let target: String
        /// The request's header fields.
        package let headers: HTTPHeaders
        /// The request's body.
        package let body: [UInt8]

        /// The target without its query.
        package var path: String { String(target.prefix { $0 != "?" }) }

        /// The query's fields, percent-decoded.
        package var query: [String: String] {
            guard let mark = target.firstIndex(of: "?") else { return [:] }
            return Self.fields(String(target[target.index(after: mark)...]))
        }

        /// The `application/x-www-form-urlencoded` body's fields.
        package var form: [String: String] { Self.fields(String(decoding: body, as: UTF8.self)) }

        /// `name=value` pairs joined by `&`, percent-decoded (`+` is a space).
        package static func fields(_ text: String) -> [String: String] {
            var fields: [String: String] = [:]
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                fields[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            return fields
        }
    }

    /// What the server answers one request with.
    package struct Reply: Sendable {
        /// The status code.
        package var status: Int
        /// Header fields besides `Content-Length`, in order.
        package var headers: [(String, String)] = []
        /// The body.
        package var body: String = ""

        /// An answer with `status`, `headers` and `body`.
        package init(status: Int, headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A JSON answer.
        package static func json(_ status: Int, _ body: String, headers: [(String, String)] = []) -> Reply {
            Reply(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
        }

        /// A token endpoint's answer issuing `value`.
        package static func token(_ value: String, expiresIn: Int = 3599) -> Reply {
            .json(200, #"{"access_token":"\#(value)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#)
        }
    }

    private final class Log: Sendable {
        let requests = Mutex<[Request]>([])
    }

    private let server: ScriptedHTTPServer
    private let log = Log()

    /// The server's `http://127.0.0.1:<port>` URL.
    package var baseURL: URL { server.baseURL }
    /// The loopback port the server listens on.
    package var port: Int { server.port }

    /// Every request received so far, in order.
    package var requests: [Request] { log.requests.withLock { $0 } }

    /// - Parameter handler: The answer to each request.
    package init(handler: @escaping @Sendable (Request) -> Reply) throws {
        let log = self.log
        server = try ScriptedHTTPServer { connection, _ in
            while let (head, body) = connection.readRequest() {
                let request = Request(method: head.method, target: head.target, headers: head.headers, body: body)
                log.requests.withLock { $0.append(request) }
                let reply = handler(request)
                var text = "HTTP/1.1 \(reply.status) Scripted\r\nContent-Length: \(reply.body.utf8.count)\r\n"
                for (name, value) in reply.headers { text += "\(name): \(value)\r\n" }
                connection.write(text + "\r\n" + reply.body)
            }
        }
    }

    /// Stops listening and closes every connection.
    package func stop() {
        server.stop()
    }

    /// The requests whose path is `path`.
    package func requests(to path: String) -> [Request] {
        requests.filter { $0.path == path }
    }
}

/// The key files of Tests/TestCredentials, with their `token_uri` pointed where a test wants.
package enum TestKeyFiles {
    /// The service account of service-account.json.
    package static let email = "test-account@cloudstorage-test.iam.gserviceaccount.com"

    /// service-account.json, edited.
    package static func serviceAccountJSON(
        tokenURI: String? = nil, editing edit: (inout [String: Any]) -> Void = { _ in }
    )
        throws -> Data
    {
        try json("service-account.json") { object in
            if let tokenURI { object["token_uri"] = tokenURI }
            edit(&object)
        }
    }

    /// authorized-user.json, edited.
    package static func authorizedUserJSON(
        tokenURI: String? = nil, editing edit: (inout [String: Any]) -> Void = { _ in }
    )
        throws -> Data
    {
        try json("authorized-user.json") { object in
            if let tokenURI { object["token_uri"] = tokenURI }
            edit(&object)
        }
    }

    /// Part `index` of a JWT (0 header, 1 claims) as a JSON object.
    package static func jwtPart(_ jwt: String, _ index: Int) throws -> [String: Any] {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[index]),
            let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { throw ScriptFailure("not a JWT with a JSON part \(index)") }
        return object
    }

    /// The JSON file `name` of Tests/TestCredentials, edited.
    package static func json(_ name: String, editing edit: (inout [String: Any]) -> Void) throws -> Data {
        let data = try Data(contentsOf: TestCredentials.url(name))
        var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        edit(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }
}
