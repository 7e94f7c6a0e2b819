import Foundation
import HTTP1
import NativeTLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking test client over a raw loopback socket, so that tests control every byte.
///
/// Use it only on threads of its own (see ``onThread(_:)``), never on Swift's cooperative pool.
/// After ``startTLS(_:)`` every byte goes through a TLS stream instead.
final class RawClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        var errno: Int32 = 0
    }

    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    let fd: Int32
    /// Bytes received and not consumed.
    var pending: [UInt8] = []
    /// Set by ``startTLS(_:)``.
    private(set) var tls: TLSStream?

    init(port: Int, receiveTimeout: Duration = .seconds(20)) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect", errno: code)
        }
        var timeout = timeval()
        timeout.tv_sec = .init(receiveTimeout.components.seconds)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    deinit {
        tls?.close()
        close(fd)
    }

    /// Runs a TLS client handshake for `localhost` with `context`; from then on I/O is encrypted.
    func startTLS(_ context: TLSContext) throws {
        let stream = try TLSStream(client: context, socket: fd, host: "localhost", port: 0)
        try stream.handshake()
        tls = stream
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        if let tls {
            try bytes.withUnsafeBytes { try tls.write($0) }
            return
        }
        #if canImport(Glibc)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress! + offset, bytes.count - offset, flags) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(description: "send", errno: errno) }
            offset += count
        }
    }

    /// Receives more bytes into ``pending``; returns 0 at EOF.
    @discardableResult
    func receiveMore() throws -> Int {
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        if let tls {
            let count = try chunk.withUnsafeMutableBytes { try tls.read(into: $0) }
            pending += chunk[0..<count]
            return count
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw Failure(description: errno == EAGAIN ? "receive timed out" : "receive", errno: errno)
            }
            pending += chunk[0..<count]
            return count
        }
    }

    /// Whether the server has sent bytes not yet received (looked at without waiting or taking them).
    var hasBytesWaiting: Bool {
        if !pending.isEmpty { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 1
    }

    /// Reads one response (a `100 Continue` counts as one).
    func readResponse(requestMethod: String = "GET") throws -> Response {
        var parser = HTTPHeadParser()
        while true {
            let parsed = try pending.withUnsafeBytes { try parser.parseResponse($0) }
            if let (head, used) = parsed {
                pending.removeFirst(used)
                let body = try readBody(try HTTPBodyFraming.response(head, requestMethod: requestMethod))
                return Response(status: head.status, headers: head.headers, body: body)
            }
            guard try receiveMore() > 0 else { throw Failure(description: "EOF before a response head") }
        }
    }

    private func readBody(_ framing: HTTPBodyFraming) throws -> [UInt8] {
        switch framing {
        case .length(let length):
            while pending.count < Int(length) {
                guard try receiveMore() > 0 else { throw Failure(description: "EOF inside a body") }
            }
            defer { pending.removeFirst(Int(length)) }
            return Array(pending[0..<Int(length)])
        case .untilClose:
            return try readToEOF()
        case .chunked:
            var decoder = ChunkedBodyDecoder()
            var body: [UInt8] = []
            while !decoder.isComplete {
                let (used, data) = try pending.withUnsafeBytes { try decoder.decode($0) }
                body += pending[data]
                pending.removeFirst(used)
                if !decoder.isComplete && pending.isEmpty {
                    guard try receiveMore() > 0 else { throw Failure(description: "EOF inside a chunked body") }
                }
            }
            return body
        }
    }

    /// Everything until the server closes.
    func readToEOF() throws -> [UInt8] {
        while try receiveMore() > 0 {}
        defer { pending = [] }
        return pending
    }
}

/// Runs blocking client code on a thread of its own and awaits its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

#if canImport(Glibc)
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Glibc.send(fd, pointer, count, flags)
}
#else
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Darwin.send(fd, pointer, count, flags)
}
#endif
