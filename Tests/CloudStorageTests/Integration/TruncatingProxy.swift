import Foundation
import HTTP1
import HTTPTestServers
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP proxy in front of an emulator that passes every exchange
/// through unchanged, except that it cuts the body of the first success answer
/// to a request that stores an object (a multipart upload, or the request
/// finalizing a session) to its first ``keptBytes`` bytes — with a matching
/// `Content-Length`, so the connection stays sound and only the JSON is broken.
///
/// Session URLs in answers are rewritten to point at the proxy, so that a
/// session's later requests pass through it too. The proxy speaks plain HTTP to
/// the emulator behind it, and plain HTTP or TLS to the client.
final class TruncatingProxy: Sendable {
    /// A request the proxy forwarded.
    struct Forwarded: Sendable {
        var method: String
        var target: String
        var headers: HTTPHeaders
        var status: Int
    }

    static let keptBytes = 10

    private struct State {
        var forwarded: [Forwarded] = []
        var truncations = 0
    }

    private let state = Mutex(State())
    private let emulatorPort: Int
    private let emulatorBase: String
    private let server: Mutex<ScriptedHTTPServer?> = Mutex(nil)

    /// The proxy's base URL, to use as a storage endpoint.
    let baseURL: URL

    /// - Parameters:
    ///   - emulator: The base URL of a plain-HTTP emulator on loopback.
    ///   - scheme: What the proxy speaks to its clients.
    init(emulator: URL, scheme: TestRoute.Scheme = .http) throws {
        emulatorBase =
            emulator.absoluteString.hasSuffix("/")
            ? String(emulator.absoluteString.dropLast()) : emulator.absoluteString
        emulatorPort = emulator.port ?? 80
        let box = PortBox()
        let server = try ScriptedHTTPServer(scheme: scheme) { [box] connection, _ in
            box.proxy?.serve(connection)
        }
        baseURL = server.baseURL
        self.server.withLock { $0 = server }
        box.set(self)
    }

    func stop() {
        server.withLock { $0 }?.stop()
    }

    /// Every request forwarded so far, in order.
    var forwarded: [Forwarded] { state.withLock { $0.forwarded } }
    /// How many answers were cut short (at most one).
    var truncations: Int { state.withLock { $0.truncations } }

    /// Whether a request asked the server to delete or cancel an upload session or object.
    var sawDeletion: Bool {
        forwarded.contains {
            $0.method == "DELETE" || $0.headers["X-Goog-Upload-Command"]?.lowercased().contains("cancel") == true
        }
    }

    private func serve(_ connection: ScriptedConnection) {
        while let (head, body) = connection.readRequest() {
            guard let (status, headers, forwardedAnswer) = forward(head, body) else { return }
            var answer = forwardedAnswer
            let truncate =
                (200...201).contains(status) && Self.storesObject(head) && answer.count > Self.keptBytes
                && state.withLock { state in
                    guard state.truncations == 0 else { return false }
                    state.truncations += 1
                    return true
                }
            if truncate { answer = Array(answer.prefix(Self.keptBytes)) }
            state.withLock {
                $0.forwarded.append(
                    Forwarded(method: head.method, target: head.target, headers: head.headers, status: status))
            }
            var text = "HTTP/1.1 \(status) Proxied\r\n"
            for (name, value) in headers {
                switch name.lowercased() {
                case "content-length", "connection", "transfer-encoding": continue
                case "location", "x-goog-upload-url":
                    text += "\(name): \(value.replacingOccurrences(of: emulatorBase, with: baseURL.absoluteString))\r\n"
                default:
                    text += "\(name): \(value)\r\n"
                }
            }
            text += "Content-Length: \(answer.count)\r\n\r\n"
            connection.write(Array(text.utf8) + answer)
        }
    }

    /// Whether the request stores an object when it succeeds.
    private static func storesObject(_ head: HTTPRequestHead) -> Bool {
        if head.target.contains("uploadType=multipart") { return true }  // GCS, one request
        if head.method == "PUT", let range = head.headers["Content-Range"], !range.hasSuffix("/*") {
            return true  // GCS, a request naming the total: it finalizes
        }
        let command = head.headers["X-Goog-Upload-Command"]?.lowercased() ?? ""
        if command.contains("finalize") { return true }  // Firebase, finalizing
        return head.headers["X-Goog-Upload-Protocol"]?.lowercased() == "multipart"  // Firebase, one request
    }

    /// Sends the request to the emulator on a connection of its own and reads the whole answer.
    private func forward(_ head: HTTPRequestHead, _ body: [UInt8]) -> (Int, [(String, String)], [UInt8])? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        address.sin_port = UInt16(emulatorPort).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        var text = "\(head.method) \(head.target) HTTP/1.1\r\n"
        for (name, value) in head.headers {
            switch name.lowercased() {
            case "connection", "content-length", "host", "expect": continue
            default: text += "\(name): \(value)\r\n"
            }
        }
        text += "Host: 127.0.0.1:\(emulatorPort)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let request = Array(text.utf8) + body
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard sent > 0 else { return nil }
            offset += sent
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = (0...(max(0, response.count - 4))).first(where: { Array(response[$0..<$0 + 4]) == separator })
        else { return nil }
        let lines = String(decoding: response[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var answer = Array(response[(end + 4)...])
        if let length = headers.first(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }) {
            answer = Array(answer.prefix(length))
        }
        return (status, headers, answer)
    }
}

/// Hands the proxy to connection scripts that start before its initializer ends.
private final class PortBox: Sendable {
    private let value = Mutex<TruncatingProxy?>(nil)
    var proxy: TruncatingProxy? { value.withLock { $0 } }
    func set(_ proxy: TruncatingProxy) { value.withLock { $0 = proxy } }
}
