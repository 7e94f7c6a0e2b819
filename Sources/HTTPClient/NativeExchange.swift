import Foundation
import HTTP1
import SystemCalls

/// One request and its response on one connection, run start to finish on
/// one of the native transport's I/O threads (never on the cooperative pool).
///
/// Sending: the head and the `.data` segments that follow it go out gathered
/// in `sendmsg` calls straight from their storage; `.file` segments go with
/// `sendfile(2)` from the file's descriptor on Linux, elsewhere (or where the
/// kernel declines, or over TLS, which must read them to encrypt them) with
/// `pread` into one reused buffer and `sendmsg`.
/// Whenever the socket cannot take more, the exchange waits for it to become
/// writable *or readable*: a server may answer before the body is complete
/// (an error, or an unrequested `100 Continue`), and such an answer is read
/// rather than lost behind a send that would never finish.
///
/// Receiving: the head is parsed with ``HTTPHeadParser``, interim `1xx`
/// answers are skipped, and the body is read as ``HTTPBodyFraming`` says
/// (length, chunked or until close), at most ``maxResponseBody`` bytes.
///
/// Every wait is bounded by the request's idle time-out and, if it has one, by
/// its deadline, which no pace of bytes moves (``NativeWaitLimit``).
final class NativeExchange {
    private let socket: NativeSocket
    private let request: NativePreparedRequest
    private let isCancelled: () -> Bool
    private let maxResponseBody: Int
    private let usesSendfile: Bool
    private var meter: ProgressMeter

    /// Request bytes (head and body) the kernel accepted.
    private(set) var bytesWritten: Int64 = 0
    /// Body bytes the kernel accepted.
    private(set) var bodyBytesSent: Int64 = 0
    /// Whether any byte of a response arrived.
    private(set) var receivedResponseBytes = false

    /// Received bytes not yet consumed.
    private var input: [UInt8] = []
    private var parser = HTTPHeadParser()
    private var finalHead: HTTPResponseHead?
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(
        socket: NativeSocket,
        request: NativePreparedRequest,
        maxResponseBody: Int,
        usesSendfile: Bool,
        progress: (@Sendable (Int64) -> Void)?,
        alreadyReported: Int64 = 0,
        isCancelled: @escaping () -> Bool
    ) {
        self.socket = socket
        self.request = request
        self.maxResponseBody = maxResponseBody
        self.usesSendfile = usesSendfile
        self.meter = ProgressMeter(report: progress, alreadyReported: alreadyReported)
        self.isCancelled = isCancelled
    }

    deinit {
        scratch.deallocate()
    }

    /// Sends the request and reads the response.
    ///
    /// - Returns: The response, and whether the connection may carry another request.
    /// - Throws: ``HTTPTransportError``.
    func run() throws(HTTPTransportError) -> (response: HTTPResponse, reusable: Bool) {
        var bodyComplete = false
        var sendFailure: HTTPTransportError?
        do {
            bodyComplete = try sendRequest()
        } catch {
            // A broken connection may still hold the server's answer (say, a 413 sent
            // before it closed): look for it below. Anything else ends the exchange.
            guard error.kind == .connectionLost, !isCancelled() else { throw error }
            sendFailure = error
        }
        meter.finish(bodyBytesSent)
        do {
            let (response, keepAlive) = try receiveResponse()
            return (response, keepAlive && bodyComplete && sendFailure == nil)
        } catch {
            throw sendFailure ?? error
        }
    }

    // MARK: - Sending

    /// Sends the head and the body.
    ///
    /// - Returns: True when everything was sent; false when a final response arrived first.
    private func sendRequest() throws(HTTPTransportError) -> Bool {
        let segments = request.body.segments
        var head: [UInt8]? = request.head
        var index = 0
        while head != nil || index < segments.count {
            var run: [Data] = []
            while index < segments.count, run.count < 64, case .data(let data) = segments[index] {
                if !data.isEmpty { run.append(data) }
                index += 1
            }
            if head != nil || !run.isEmpty {
                guard try sendGathered(head: head ?? [], run) else { return false }
                head = nil
            }
            if index < segments.count, case .fileRegion(let file, let offset, let length) = segments[index] {
                index += 1
                guard try sendFile(file, offset: offset, length: length) else { return false }
            }
        }
        return true
    }

    /// Sends `head` and `datas` in as few `sendmsg` calls as the socket allows, from their own storage.
    private func sendGathered(head: [UInt8], _ datas: [Data]) throws(HTTPTransportError) -> Bool {
        let result = head.withUnsafeBytes { headBytes in
            Self.withPinnedBuffers(datas[...], collected: [headBytes]) { buffers in
                Result { () throws(HTTPTransportError) -> Bool in try sendAll(buffers, headLength: headBytes.count) }
            }
        }
        return try result.get()
    }

    /// Calls `body` with the storage of every `Data` in `rest`, valid all at once.
    private static func withPinnedBuffers<R>(
        _ rest: ArraySlice<Data>,
        collected: [UnsafeRawBufferPointer],
        _ body: ([UnsafeRawBufferPointer]) -> R
    ) -> R {
        guard let first = rest.first else { return body(collected) }
        return first.withUnsafeBytes { bytes in
            withPinnedBuffers(rest.dropFirst(), collected: collected + [bytes], body)
        }
    }

    /// Sends every byte of `buffers`, the first `headLength` of which are the head (not counted as progress).
    ///
    /// Over TLS the bytes are taken once encrypted; the last records may still wait in the
    /// connection's TLS layer until the socket takes them, which this also waits for unless
    /// `flushing` is false (more of the request follows at once: its bytes then share `sendmsg`
    /// calls with these; `buffers` may be reused as soon as this returns either way).
    private func sendAll(
        _ buffers: [UnsafeRawBufferPointer], headLength: Int, flushing: Bool = true
    ) throws(HTTPTransportError) -> Bool {
        let bytes = POSIXSocket.GatheredBytes(buffers)
        var headLeft = headLength
        while !bytes.isEmpty {
            guard let sent = try socket.send(bytes) else {
                guard try waitWritable() else { return false }
                continue
            }
            let headPart = min(headLeft, sent)
            headLeft -= headPart
            account(written: sent, body: sent - headPart)
            bytes.advance(by: sent)
        }
        while flushing, try !socket.flush() {
            guard try waitWritable() else { return false }
        }
        return true
    }

    /// Sends `length` bytes of `file` from `offset`.
    private func sendFile(_ file: any HTTPBodyFile, offset: Int64, length: Int64) throws(HTTPTransportError) -> Bool {
        var sent: Int64 = 0
        #if os(Linux)
        // The kernel cannot encrypt here (no TLS offload is used): TLS copies through the connection's buffer.
        var kernelCopies = usesSendfile && socket.canSendFile
        while kernelCopies && sent < length {
            let count = Int(min(length - sent, 1 << 30))
            switch try socket.sendFile(file.descriptor, offset: offset + sent, count: count) {
            case .sent(0):
                throw .bodySourceFailed(file.endedEarlyError(at: offset + sent))
            case .sent(let count):
                sent += Int64(count)
                account(written: count, body: count)
            case .wouldBlock:
                guard try waitWritable() else { return false }
            case .unsupported:
                kernelCopies = false
            case .fileError(let code):
                throw .bodySourceFailed(file.readFailedError(errno: code))
            }
        }
        #endif
        if sent < length {
            return try copyFile(file, offset: offset + sent, length: length - sent)
        }
        return true
    }

    /// Sends a file region through the connection's reused buffer: `pread`, then `sendmsg` (over
    /// TLS, encrypted into the layer's output first). A file that ends early fails the read,
    /// so no byte past a change goes out as the file's.
    private func copyFile(_ file: any HTTPBodyFile, offset: Int64, length: Int64) throws(HTTPTransportError) -> Bool {
        let buffer = socket.copyBuffer
        guard let base = buffer.baseAddress else { return true }
        let step = Int64(socket.canSendFile ? buffer.count : min(buffer.count, Self.encryptedSlice))
        var done: Int64 = 0
        while done < length {
            let count = Int(min(length - done, step))
            do {
                try file.readExactly(into: base, count: count, at: offset + done)
            } catch {
                throw .bodySourceFailed(error)
            }
            let last = done + Int64(count) == length
            guard try sendAll([UnsafeRawBufferPointer(start: base, count: count)], headLength: 0, flushing: last) else {
                return false
            }
            done += Int64(count)
        }
        return true
    }

    /// Bytes read per step over TLS: few enough that the reader's hash and the encryption find
    /// them still in the CPU's first-level caches after `pread` wrote them there, and a quarter
    /// of the TLS layer's output, so that one `sendmsg` sends several steps.
    static let encryptedSlice = 64 * 1024

    private func account(written: Int, body: Int) {
        bytesWritten += Int64(written)
        bodyBytesSent += Int64(body)
        meter.update(bodyBytesSent)
    }

    /// Waits until the socket can take more.
    ///
    /// - Returns: True to go on sending; false when a final response arrived instead.
    private func waitWritable() throws(HTTPTransportError) -> Bool {
        while true {
            let ready = try socket.wait(
                readable: true, writable: true, limit: request.waitLimit, isCancelled: isCancelled)
            if ready.readable {
                guard let count = try readAvailable() else { continue }
                if count == 0 {
                    if finalHead != nil { return false }
                    throw HTTPTransportError(
                        kind: .connectionLost,
                        message: "\(socket.key) closed the connection while the request was being sent.")
                }
                if try parseHeads() { return false }
            }
            // On an error or hang-up the next send reports which.
            if ready.writable || ready.broken { return true }
        }
    }

    // MARK: - Receiving

    private func receiveResponse() throws(HTTPTransportError) -> (HTTPResponse, Bool) {
        let (head, framing) = try receiveHead()
        var keepAlive = head.wantsKeepAlive && !request.closesConnection
        var body = ResponseBody(sink: try streamingSink(for: head))
        switch framing {
        case .length(let length):
            try receiveBody(length: length, into: &body)
        case .chunked:
            try receiveChunkedBody(into: &body)
        case .untilClose:
            keepAlive = false
            repeat {
                try emit(0..<input.count, to: &body)
                input.removeAll(keepingCapacity: true)
                if body.isSatisfied { break }
            } while try readBlocking() != 0
        }
        // Bytes nobody asked for: the connection's framing cannot be trusted any more.
        // Bytes the connection holds count too (over TLS, records received but not returned): the
        // pool's poll cannot see them. A body the sink cut short may have bytes left unread.
        if !input.isEmpty || socket.hasBufferedInput || body.isSatisfied { keepAlive = false }
        return (HTTPResponse(status: head.status, headers: head.headers, body: body.collected), keepAlive)
    }

    /// Reads until the final head, and how its body is framed.
    private func receiveHead() throws(HTTPTransportError) -> (HTTPResponseHead, HTTPBodyFraming) {
        while try !parseHeads() {
            if try readBlocking() == 0 {
                throw HTTPTransportError(
                    kind: .connectionLost,
                    message: receivedResponseBytes
                        ? "\(socket.key) closed the connection in the middle of the response head."
                        : "\(socket.key) closed the connection without answering.")
            }
        }
        guard let head = finalHead else {
            throw HTTPTransportError(kind: .other, message: "No response head.")
        }
        do {
            return (head, try HTTPBodyFraming.response(head, requestMethod: request.method))
        } catch {
            throw malformed(error)
        }
    }

    /// Offers the answer to the request's sink.
    ///
    /// - Returns: The sink, when it takes the body; nil when the body is collected.
    private func streamingSink(for head: HTTPResponseHead) throws(HTTPTransportError) -> HTTPResponseSink? {
        guard let sink = request.responseSink else { return nil }
        do {
            return try sink.begin(head.status, head.headers) ? sink : nil
        } catch {
            throw .sinkFailed(error)
        }
    }

    /// Hands `input[range]` to the body's sink, or keeps it in the body within the limit.
    private func emit(_ range: Range<Int>, to body: inout ResponseBody) throws(HTTPTransportError) {
        guard !range.isEmpty else { return }
        guard let sink = body.sink else {
            body.collected.append(contentsOf: input[range])
            guard body.collected.count <= maxResponseBody else { throw tooLarge() }
            return
        }
        let delivered = input.withUnsafeBytes { raw in
            Result { try sink.receive(UnsafeRawBufferPointer(rebasing: raw[range])) }
        }
        try body.record(delivered)
    }

    /// Receives a body of `length` bytes.
    private func receiveBody(length: Int64, into body: inout ResponseBody) throws(HTTPTransportError) {
        guard body.sink != nil || length <= Int64(maxResponseBody) else { throw tooLarge() }
        var remaining = length
        while remaining > 0 && !body.isSatisfied {
            if input.isEmpty, body.sink != nil {
                remaining -= Int64(try receiveDirectly(upTo: remaining, into: &body))
                continue
            }
            if input.isEmpty, try readBlocking() == 0 { throw truncated() }
            let take = Int(min(Int64(input.count), remaining))
            try emit(0..<take, to: &body)
            input.removeFirst(take)
            remaining -= Int64(take)
        }
    }

    /// Reads (over TLS: decrypted) straight into the connection's buffer (the request body is sent
    /// by now, so file copies no longer use it) and hands the bytes on from there, without a stop
    /// in `input`; a read never goes past `remaining`, so the connection stays usable.
    ///
    /// - Returns: The bytes handed on, at least one.
    private func receiveDirectly(
        upTo remaining: Int64, into body: inout ResponseBody
    ) throws(HTTPTransportError) -> Int {
        guard let sink = body.sink else { return 0 }
        let buffer = socket.copyBuffer
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(buffer.count), remaining))])
        let count = try receiveWaiting(into: wanted)
        if count == 0 { throw truncated() }
        receivedResponseBytes = true
        let delivered = Result { try sink.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) }
        try body.record(delivered)
        return count
    }

    /// Receives a chunked body, to its last chunk and trailers.
    private func receiveChunkedBody(into body: inout ResponseBody) throws(HTTPTransportError) {
        var decoder = ChunkedBodyDecoder()
        while true {
            var consumed = 0
            while consumed < input.count && !decoder.isComplete && !body.isSatisfied {
                let step = input.withUnsafeBytes { raw in
                    Result { () throws(HTTP1Error) in
                        try decoder.decode(UnsafeRawBufferPointer(rebasing: raw[consumed...]))
                    }
                }
                let (used, data): (Int, Range<Int>)
                do {
                    (used, data) = try step.get()
                } catch {
                    throw malformed(error)
                }
                try emit((consumed + data.lowerBound)..<(consumed + data.upperBound), to: &body)
                consumed += used
                if used == 0 { break }
            }
            input.removeFirst(consumed)
            if decoder.isComplete || body.isSatisfied { return }
            if try readBlocking() == 0 { throw truncated() }
        }
    }

    /// Parses the heads in `input`, dropping interim (1xx) ones.
    ///
    /// - Returns: Whether the final head has been parsed.
    private func parseHeads() throws(HTTPTransportError) -> Bool {
        while finalHead == nil {
            let step = input.withUnsafeBytes { raw in
                Result { () throws(HTTP1Error) in try parser.parseResponse(raw) }
            }
            let parsed: (head: HTTPResponseHead, consumed: Int)?
            do {
                parsed = try step.get()
            } catch {
                throw malformed(error)
            }
            guard let (head, consumed) = parsed else { return false }
            input.removeFirst(consumed)
            parser.reset()
            if head.status == 101 {
                throw HTTPTransportError(
                    kind: .other, message: "\(socket.key) switched protocols, which is not supported.")
            }
            if head.status >= 200 { finalHead = head }
        }
        return true
    }

    /// Reads what is there without waiting.
    ///
    /// - Returns: The byte count (0 at end of stream), or nil when nothing is there.
    private func readAvailable() throws(HTTPTransportError) -> Int? {
        guard let count = try socket.receive(into: scratch) else { return nil }
        if count > 0 {
            receivedResponseBytes = true
            input.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        }
        return count
    }

    /// Reads, waiting for bytes to arrive within the request's wait limit.
    ///
    /// - Returns: The byte count; 0 at end of stream.
    private func readBlocking() throws(HTTPTransportError) -> Int {
        let count = try receiveWaiting(into: scratch)
        if count > 0 {
            receivedResponseBytes = true
            input.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        }
        return count
    }

    /// Receives into `buffer`, waiting for bytes within the request's wait limit.
    ///
    /// - Returns: The byte count; 0 at end of stream.
    private func receiveWaiting(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPTransportError) -> Int {
        // Checked here too: bytes that are always there would never let the wait notice it.
        if isCancelled() { throw NativeSocket.cancelledError }
        while true {
            if let count = try socket.receive(into: buffer) { return count }
            _ = try socket.wait(readable: true, writable: false, limit: request.waitLimit, isCancelled: isCancelled)
        }
    }

    // MARK: - Errors

    private func malformed(_ error: HTTP1Error) -> HTTPTransportError {
        HTTPTransportError(
            kind: .malformedResponse, message: "The response from \(socket.key) is malformed: \(error).")
    }

    private func truncated() -> HTTPTransportError {
        HTTPTransportError(
            kind: .connectionLost, message: "\(socket.key) closed the connection in the middle of the response body.")
    }

    private func tooLarge() -> HTTPTransportError {
        HTTPTransportError(
            kind: .responseTooLarge,
            message: "The response from \(socket.key) is larger than \(maxResponseBody) bytes.")
    }
}

/// Where a response body goes: the request's sink, when it took the body, or memory.
private struct ResponseBody {
    /// The sink that took the body; nil: the body is collected.
    let sink: HTTPResponseSink?
    /// The body, when it is collected.
    var collected = Data()
    /// Whether the sink said it has enough: nothing more is read.
    private(set) var isSatisfied = false

    /// Keeps what a sink call came to: whether the sink wants more, or what it threw, as the
    /// transport's failure.
    mutating func record(_ delivered: Result<HTTPResponseSink.Demand, any Error>) throws(HTTPTransportError) {
        switch delivered {
        case .success(let demand): isSatisfied = demand == .enough
        case .failure(let error): throw .sinkFailed(error)
        }
    }
}

/// Reports body bytes sent at a bounded rate: at most once per 10 ms, plus the final total.
struct ProgressMeter {
    private let report: (@Sendable (Int64) -> Void)?
    private var reported: Int64 = 0
    private var lastReport = ContinuousClock.now
    static let interval: Duration = .milliseconds(10)

    /// - Parameter alreadyReported: The total an earlier attempt of the same
    ///   request reported; nothing at or below it is reported again.
    init(report: (@Sendable (Int64) -> Void)?, alreadyReported: Int64 = 0) {
        self.report = report
        self.reported = alreadyReported
    }

    mutating func update(_ total: Int64) {
        guard let report, total > reported else { return }
        let now = ContinuousClock.now
        guard lastReport.duration(to: now) >= Self.interval else { return }
        lastReport = now
        reported = total
        report(total)
    }

    mutating func finish(_ total: Int64) {
        guard let report, total > reported else { return }
        reported = total
        report(total)
    }
}
