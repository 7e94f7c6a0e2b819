package import Foundation
package import HTTPTestServers

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TestSupport {
    /// A loopback port nothing listens on: connections to it are refused at once.
    ///
    /// The port stays bound (never listening) for the life of the test process, so no
    /// server another test starts can be given it: a client still retrying against it
    /// could otherwise reach that server and become a stray connection there.
    package static func closedPort() throws -> Int {
        try reservedClosedPort.get()
    }

    private static let reservedClosedPort = Result { () throws -> Int in
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw ScriptFailure("bind: \(errno)")
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A server that answers every request with 200 and the JSON `json`: one listing page
    /// that says whatever a test wants.
    package static func listingServer(_ json: String) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { connection, _ in
            while connection.readRequest() != nil {
                connection.write(ScriptedHTTPServer.ok(json, extra: "Content-Type: application/json\r\n"))
            }
        }
    }

    /// Sends a request with no credentials; the status, body and headers.
    package static func send(
        _ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil
    ) async throws -> (status: Int, body: Data, headers: [AnyHashable: Any]) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) =
            if let body {
                try await URLSession.shared.upload(for: request, from: body)
            } else {
                try await URLSession.shared.data(for: request)
            }
        guard let http = response as? HTTPURLResponse else { throw ScriptFailure("not an HTTP answer: \(response)") }
        return (http.statusCode, data, http.allHeaderFields)
    }
}
