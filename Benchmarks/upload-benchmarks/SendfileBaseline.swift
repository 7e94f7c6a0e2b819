import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wire baseline: a GCS resumable upload without the SDK, written as
/// plainly as possible.
///
/// On a dedicated thread (never the cooperative pool), with plain blocking
/// sockets and the system's default buffer sizes: one `POST
/// …?uploadType=resumable` opens the session; a second connection sends the
/// `PUT <session>` head with `send`, then the whole file with `sendfile(2)`
/// (Linux; a `read` + `send` loop elsewhere), and reads the answer. Both
/// requests are timed, as the SDK makes both too. What it measures is the
/// kernel and the server, not an HTTP library.
struct SendfileBaseline: Sendable {
    let host: String
    let port: Int
    let bucket: String

    /// The request the report names.
    static let description =
        "POST …?uploadType=resumable, then PUT head + sendfile(2) of the whole file on a blocking socket (default buffers), own thread"

    /// Uploads `file` (of `size` bytes) as `object`.
    ///
    /// - Returns: The facts in the object resource the server answered the PUT with.
    /// - Throws: ``BenchmarkError`` on any socket error or unexpected answer.
    func upload(file: URL, size: Int64, object: String) async throws -> ObjectFacts {
        let host = host
        let port = port
        let bucket = bucket
        let path = file.path
        return try await DedicatedThread.run(name: "sendfile-baseline") {
            try Self.blockingUpload(host: host, port: port, bucket: bucket, path: path, size: size, object: object)
        }
    }

    private static func blockingUpload(
        host: String, port: Int, bucket: String, path: String, size: Int64, object: String
    ) throws -> ObjectFacts {
        let metadata = Array("{\"name\":\"\(object)\"}".utf8)
        let opened = try exchange(host: host, port: port) { socket in
            try socket.sendAll(
                Array(
                    ("POST /upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=\(object) HTTP/1.1\r\n"
                        + "Host: \(host):\(port)\r\n"
                        + "Content-Type: application/json; charset=UTF-8\r\n"
                        + "X-Upload-Content-Length: \(size)\r\n"
                        + "Content-Length: \(metadata.count)\r\n\r\n").utf8) + metadata)
        }
        guard opened.status == 200, let location = opened.headers["location"],
            let target = sessionTarget(location)
        else {
            throw BenchmarkError("the baseline's POST got HTTP \(opened.status) and no usable Location")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchmarkError("cannot open \(path): errno \(errno)") }
        defer { close(descriptor) }
        let sent = try exchange(host: host, port: port) { socket in
            try socket.sendAll(
                Array(
                    ("PUT \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Length: \(size)\r\n"
                        + "Content-Range: bytes 0-\(size - 1)/\(size)\r\n\r\n").utf8))
            try socket.sendFile(descriptor, size: size)
        }
        guard sent.status == 200 || sent.status == 201 else {
            throw BenchmarkError(
                "the baseline's PUT got HTTP \(sent.status): \(String(decoding: sent.body.prefix(512), as: UTF8.self))")
        }
        return try ObjectFacts(objectResource: Data(sent.body))
    }

    /// The path and query of an absolute session URL.
    private static func sessionTarget(_ location: String) -> String? {
        guard let components = URLComponents(string: location) else { return nil }
        let query = components.percentEncodedQuery.map { "?" + $0 } ?? ""
        return components.percentEncodedPath + query
    }

    private struct Response {
        var status: Int
        /// Lower-cased names.
        var headers: [String: String]
        var body: [UInt8]
    }

    /// Connects, lets `send` write the request, and reads the response (`Content-Length` framed).
    private static func exchange(
        host: String, port: Int, _ send: (BlockingSocket) throws -> Void
    ) throws -> Response {
        let socket = try BlockingSocket(host: host, port: port)
        defer { socket.close() }
        try send(socket)
        var input: [UInt8] = []
        let limit = 1 << 20
        var headEnd: Int?
        while headEnd == nil {
            guard input.count < limit else { throw BenchmarkError("the server's response head is too large") }
            guard try socket.receive(into: &input) > 0 else {
                throw BenchmarkError("the server closed the connection before answering")
            }
            headEnd = find([13, 10, 13, 10], in: input)
        }
        guard let headEnd else { throw BenchmarkError("no response head") }
        let lines = String(decoding: input[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusFields = lines.first?.split(separator: " ") ?? []
        guard statusFields.count >= 2, let status = Int(statusFields[1]) else {
            throw BenchmarkError("malformed status line")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard length <= limit else { throw BenchmarkError("the server's response body is too large") }
        let bodyStart = headEnd + 4
        while input.count - bodyStart < length {
            guard try socket.receive(into: &input) > 0 else {
                throw BenchmarkError("the server closed the connection in the middle of its answer")
            }
        }
        return Response(status: status, headers: headers, body: Array(input[bodyStart..<(bodyStart + length)]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

/// A connected blocking TCP socket with 60 s send and receive time-outs, so
/// nothing in the baseline can hang forever.
final class BlockingSocket {
    private let fd: Int32

    init(host: String, port: Int) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc) || canImport(Musl)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw BenchmarkError("cannot resolve \(host)")
        }
        defer { freeaddrinfo(first) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw BenchmarkError("socket() failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard let address = first.pointee.ai_addr, connect(fd, address, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            closeDescriptor(fd)
            throw BenchmarkError("cannot connect to \(host):\(port): errno \(code)")
        }
        self.fd = fd
    }

    func close() {
        closeDescriptor(fd)
    }

    func sendAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = send(fd, buffer.baseAddress! + done, buffer.count - done, Int32(MSG_NOSIGNAL))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw BenchmarkError("send failed: errno \(errno)") }
                done += count
            }
        }
    }

    /// Sends `size` bytes of `file` from its start with `sendfile(2)`; each call either moves bytes or fails.
    func sendFile(_ file: Int32, size: Int64) throws {
        #if os(Linux)
        var offset = off_t(0)
        while Int64(offset) < size {
            let count = sendfile(fd, file, &offset, Int(min(size - Int64(offset), 1 << 30)))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw BenchmarkError("sendfile failed: errno \(errno) at offset \(offset)") }
        }
        #else
        throw BenchmarkError("the sendfile baseline needs Linux")
        #endif
    }

    /// Appends what arrives (blocking until something does) to `input`; returns the count, 0 at end of stream.
    func receive(into input: inout [UInt8]) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw BenchmarkError("recv failed: errno \(errno)") }
            input += buffer[..<count]
            return count
        }
    }
}

/// Runs blocking work on a thread started for it (SIGPIPE blocked there), and awaits its result.
enum DedicatedThread {
    static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &signals, nil)
                continuation.resume(returning: Result { try body() })
            }
            thread.name = name
            thread.start()
        }
        return try result.get()
    }
}

private func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #elseif canImport(Musl)
    _ = Musl.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}
