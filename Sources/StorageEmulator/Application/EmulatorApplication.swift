package import Foundation
import HTTP1
import Synchronization

/// The emulator's request handling: routing, authentication, fault injection
/// and both wire protocols over an ``ObjectStore``.
///
/// Every request takes the same steps: the route table (``routes``, the whole API surface by
/// protocol) matches it to a route or to a 404/405; its fault plan acts; ``perform(_:_:)``
/// checks what the route declares it needs (credentials, an upload session's own rule, a V4
/// signature) and calls the route's handler in `EmulatorApplication+<Protocol>.swift`.
///
/// Safe to call from many connection threads at once; all shared state is
/// behind locks and each upload session serialises its own requests.
package final class EmulatorApplication: ServerApplication {
    /// Settings the application needs.
    package struct Settings: Sendable {
        /// When set, requests must carry this token (see ``StorageEmulator/Configuration/requiredToken``).
        package var requiredToken: String?
        /// With a required token, also accept `owner` (see ``StorageEmulator/Configuration/acceptsOwner``).
        package var acceptsOwner = false
        /// When set, Firebase requests must carry this App Check token (see ``StorageEmulator/Configuration/appCheckToken``).
        package var appCheckToken: String?
        /// Create a bucket the first time a request names it.
        package var autoCreateBuckets = true
        /// The scheme the emulator is served with: `https` when it speaks TLS. URLs it hands
        /// back (upload sessions, download links) use it, so a client stays on TLS.
        package var scheme = "http"
        /// Used for URLs when a request has no `Host` field.
        package var fallbackHost = "127.0.0.1"
        /// How long an upload session or multipart upload lives after it starts (see
        /// ``StorageEmulator/Configuration/uploadSessionLifetime``).
        package var sessionLifetime: Duration = .seconds(7 * 24 * 3600)
        /// The most upload sessions and multipart uploads at once (see
        /// ``StorageEmulator/Configuration/maxUploadSessions``).
        package var maxSessions = 1000
        /// The least every part of an XML API multipart upload but the last must hold (see
        /// ``StorageEmulator/Configuration/minimumMultipartPartSize``).
        package var minimumPartSize: Int64 = 5 * 1024 * 1024
        /// The clock session and token expiry are measured with; tests inject their own.
        package var now: @Sendable () -> Date = { Date() }
        /// The token endpoint, metadata server and issued tokens (see ``StorageEmulator/Configuration/authentication``).
        package var authentication: AuthenticationService?
        /// Told about upload session files ignored when the emulator starts (standard error by default).
        /// Called just before the application hands a write (commit, delete, metadata update)
        /// to the store: tests hold writers here to make them race for the same object.
        package var beforeStoreWrite: (@Sendable () -> Void)?
        package var log: @Sendable (String) -> Void = { message in
            FileHandle.standardError.write(Data("storage emulator: \(message)\n".utf8))
        }

        package init() {}
    }

    let store: any ObjectStore
    let settings: Settings
    let sessions: SessionTable
    /// The XML API multipart uploads in progress.
    let multipartUploads = MultipartUploadTable()
    /// Where resumable upload sessions are kept on disk (directory backing); nil keeps them in memory only.
    let journal: SessionJournal?
    let counter = ByteCounter()
    /// Requests received, for tests that prove how many a client sends.
    private let requests = Atomic<Int>(0)
    /// Objects that listings visited, for tests that prove what a page costs.
    private let listingVisits = Atomic<Int>(0)
    let plans = FaultPlanTable()
    /// The retry tests of storage-testbench's API (``RetryTest``).
    let retryTests = RetryTestTable()
    private let globalPlan: FaultPlan?

    /// Creates the application, keeping upload sessions in memory only.
    ///
    /// - Throws: ``FaultPlanError`` if `globalFaults` is not a valid plan.
    package convenience init(
        store: any ObjectStore, settings: Settings = Settings(), globalFaults: [String] = []
    )
        throws(FaultPlanError)
    {
        try self.init(store: store, settings: settings, globalFaults: globalFaults, journal: nil)
    }

    /// Creates the application.
    ///
    /// - Parameter journal: Where upload sessions are persisted; the sessions found there are
    ///   resumed (those that cannot be are removed and logged). Nil keeps them in memory only.
    /// - Throws: ``FaultPlanError`` if `globalFaults` is not a valid plan.
    init(
        store: any ObjectStore, settings: Settings, globalFaults: [String], journal: SessionJournal?
    )
        throws(FaultPlanError)
    {
        self.store = store
        self.settings = settings
        self.journal = journal
        let sessions = SessionTable(
            policy: .init(lifetime: settings.sessionLifetime, maxSessions: settings.maxSessions, now: settings.now))
        self.sessions = sessions
        globalPlan = globalFaults.isEmpty ? nil : try FaultPlan(globalFaults)
        if let journal {
            let restored = journal.load(isExpired: { sessions.hasExpired(created: $0) }, log: settings.log)
            for session in restored {
                sessions.restore(UploadSession(restoring: session, journal: journal), created: session.record.created)
            }
        }
    }

    /// Body bytes received so far, over all requests.
    package var bytesReceived: Int64 { counter.total }

    /// XML API multipart uploads initiated and neither completed nor aborted, in every bucket.
    package var multipartUploadsInProgress: Int { multipartUploads.count }

    /// Part bytes multipart Completes copied because the parts did not lie assembled.
    package var multipartBytesCopied: Int64 { multipartUploads.bytesCopied }

    /// Requests received so far, control requests (`/_emulator/…`) included.
    package var requestsReceived: Int { requests.load(ordering: .relaxed) }

    /// Objects the store visited for listings so far: a page visits its own entries (and at
    /// most one more), however large the bucket.
    var objectsVisitedByListings: Int { listingVisits.load(ordering: .relaxed) }

    /// Installs a fault plan that requests select with `x-emulator-faults: <id>`.
    ///
    /// At most ``FaultPlanTable/capacity`` plans are kept: a new one replaces the
    /// oldest finished plan, or else the oldest plan.
    package func installFaultPlan(_ instructions: [String]) throws(FaultPlanError) -> String {
        let plan = try FaultPlan(instructions)
        let id = "plan-" + SessionTable.newID().prefix(16)
        plans.insert(plan, id: id)
        return id
    }

    /// The largest request body the fault control endpoint reads: room for a plan of
    /// ``FaultPlan/maxInstructions`` ordinary instructions.
    static let maxFaultPlanBody = 512 * 1024

    /// Cancels every unfinished upload session (their staged bytes are deleted), except
    /// persisted ones, which stay on disk for the next emulator on the directory.
    package func shutdown() {
        sessions.removeAll()
    }

    /// Creates a bucket; an existing bucket is fine.
    package func createBucket(_ name: String) throws(StoreError) {
        _ = try store.createBucket(name)
    }

    // MARK: - Entry point

    /// Which error format a request's failures are answered in.
    enum Flavor { case gcs, firebase, xml }

    /// Answers a request: matches it to a route (see ``routes``), lets its fault plan act,
    /// checks what the route needs (``perform(_:_:)``), and runs the route's handler.
    package func handle(_ request: any ServerRequest, _ responder: any ServerResponder) {
        requests.add(1, ordering: .relaxed)
        let match = Self.routes.match(request, servesAuthentication: settings.authentication != nil)
        let flavor = match.group.flavor
        guard match.group.injectsFaults else {
            let body = BodyReader(request: request, instruction: .pass, counter: counter)
            let reply: Reply
            do {
                reply = try perform(match, body)
            } catch {
                guard let answer = errorAnswer(error, flavor, responder) else { return }
                reply = answer
            }
            send(reply, to: responder)
            return
        }
        let fault: DrawnFault
        do {
            fault = try faultInstruction(for: request, match)
        } catch {
            if let answer = errorAnswer(error, flavor, responder) { send(answer, to: responder) }
            return
        }
        switch fault.instruction {
        case .respond(let status):
            send(errorReply(injectedError(status), flavor), to: responder)
        case .resetConnection:
            responder.resetConnection()
        default:
            handle(match, request, fault, responder)
        }
    }

    /// Answers a request its fault plan lets through (perhaps to act later, on its body or answer).
    private func handle(
        _ match: RouteTable.Match, _ request: any ServerRequest, _ fault: DrawnFault,
        _ responder: any ServerResponder
    ) {
        let instruction = fault.instruction
        let body = BodyReader(request: request, instruction: instruction, counter: counter, unfired: fault.unfired)
        // A media download's reset or stall acts on the response body instead (see FaultInstruction).
        var responseFault =
            actsOnResponseBody(instruction) && match.route?.sendsMedia(request) == true ? instruction : nil
        var reply: Reply
        do {
            reply = try faultedReply(match, body, request, responseFault: &responseFault)
        } catch {
            guard let answer = errorAnswer(error, match.group.flavor, responder) else { return }
            reply = answer
        }
        // A broken stream acts on every answer's body, an error's too.
        if instruction.brokenStreamBytes != nil { responseFault = instruction }
        switch instruction {
        case .dropResponse:
            reply.stream?.reader.close()
            responder.closeConnection()
            return
        case .holdResponse:
            reply.stream?.reader.close()
            responder.holdConnection(limit: FaultInstruction.holdLimit)
            return
        default:
            break
        }
        send(reply, to: responder, responseFault: responseFault)
    }

    /// Runs the route, with the fault firing where its plan says: before the handler for a request
    /// without a body, as the handler reads the body, or (`responseFault`) on the answer's body.
    private func faultedReply(
        _ match: RouteTable.Match, _ body: BodyReader, _ request: any ServerRequest,
        responseFault: inout FaultInstruction?
    ) throws -> Reply {
        guard responseFault != nil else {
            if ["GET", "HEAD", "DELETE"].contains(request.method) || request.contentLength == 0 {
                try body.fireNow()
            }
            let reply = try perform(match, body)
            // A fault waiting for bytes the handler never read still happens.
            try body.fireNow()
            return reply
        }
        let reply: Reply
        do {
            reply = try perform(match, body)
        } catch {
            // No body to fault (an error answer): the fault comes before it, as for other requests.
            responseFault = nil
            try body.fireNow()
            throw error
        }
        if reply.stream == nil {
            // An empty object has no body bytes: the fault comes before the answer.
            responseFault = nil
            try body.fireNow()
        }
        return reply
    }

    /// The answer to a failure, in the request's error format; nil when there is none to send
    /// (a fault ended the connection, or the connection broke), the responder told so already.
    private func errorAnswer(_ error: any Error, _ flavor: Flavor, _ responder: any ServerResponder) -> Reply? {
        switch error {
        case let fault as InjectedFault:
            switch fault.instruction {
            case .resetAfter:
                responder.resetConnection()
            case .respondAfter(let status, _):
                send(errorReply(injectedError(status), flavor), to: responder)
            case .hold:
                responder.holdConnection(limit: FaultInstruction.holdLimit)
            default:
                responder.closeConnection()
            }
            return nil
        case let error as HTTPError:
            return errorReply(error, flavor)
        case let error as StoreError:
            return errorReply(httpError(error), flavor)
        case let error as FaultPlanError:
            return errorReply(HTTPError.badRequest(error.message), flavor)
        case ServerIOError.malformedBody(let error):
            // The server closes after this answer (the body is broken), but the client learns why.
            return errorReply(Self.malformedBody(error), flavor)
        default:
            // The connection broke while reading: nobody to answer.
            responder.closeConnection()
            return nil
        }
    }

    /// The answer to a request body whose chunked framing is broken.
    private static func malformedBody(_ error: HTTP1Error) -> HTTPError {
        HTTPError.badRequest("The request body's chunked transfer coding is malformed (\(error)).")
    }

    /// Whether the instruction is one that a media download acts out on its response body.
    private func actsOnResponseBody(_ instruction: FaultInstruction) -> Bool {
        switch instruction {
        case .resetAfter, .stall, .hold: true
        case .pass, .respond, .respondAfter, .resetConnection, .brokenStream, .dropResponse, .holdResponse: false
        }
    }

    /// A request's fault instruction, and what to do if it never fires (see ``BodyReader``).
    private struct DrawnFault {
        var instruction: FaultInstruction
        /// A retry test's: puts the instruction back when the request's body ends before it fires.
        var unfired: (() -> Void)?
    }

    /// The instruction of the plan the request names (`x-emulator-faults`), else of its retry
    /// test's list for the request's JSON API method (`x-retry-test-id`), else of the global plan.
    private func faultInstruction(for request: any ServerRequest, _ match: RouteTable.Match) throws -> DrawnFault {
        if let id = request.headers["x-emulator-faults"] {
            guard let plan = plans.plan(id) else {
                throw HTTPError.badRequest("Unknown fault plan '\(id)'.")
            }
            return DrawnFault(instruction: plan.next())
        }
        if let id = request.headers["x-retry-test-id"] {
            guard let test = retryTests.plan(id) else { throw Self.unknownRetryTest(id) }
            guard let method = match.apiMethod else { return DrawnFault(instruction: .pass) }
            return DrawnFault(instruction: test.next(for: method), unfired: { test.giveBack(for: method) })
        }
        return DrawnFault(instruction: globalPlan?.next() ?? .pass)
    }

    private func injectedError(_ status: Int) -> HTTPError {
        HTTPError(status, "Injected fault: the emulator answered \(status) as its fault plan asked.")
    }

    func httpError(_ error: StoreError) -> HTTPError {
        switch error.kind {
        case .invalidName: HTTPError.badRequest(error.description)
        case .notFound: HTTPError(404, error.description)
        case .io: HTTPError(500, error.description, reason: "backendError")
        case .conditionNotMet: HTTPError(412, error.description)
        case .bucketNotEmpty: HTTPError(409, error.description)
        }
    }

    /// Ends a streamed response's body early: the connection is reset.
    private struct ResponseReset: Error {}

    /// Stops a streamed response's body: the connection is held until the client closes it.
    private struct ResponseHold: Error {}

    /// Ends a response's body early (a broken stream): the connection is closed.
    private struct ResponseBreak: Error {}

    /// Sends a reply; `responseFault` (a reset, stall or broken stream) fires after that many
    /// body bytes, or at the end of a shorter body.
    private func send(_ reply: Reply, to responder: any ServerResponder, responseFault: FaultInstruction? = nil) {
        do {
            if let cut = responseFault?.brokenStreamBytes, reply.stream == nil {
                try sendBroken(reply, after: cut, to: responder)
            } else if let stream = reply.stream {
                defer { stream.reader.close() }
                try responder.respondStreaming(
                    status: reply.status, headers: reply.headers, contentLength: stream.inflates ? nil : stream.length
                ) { rawWrite in
                    try writeBody(of: stream, through: rawWrite, responseFault: responseFault)
                }
            } else {
                try responder.respond(status: reply.status, headers: reply.headers, body: reply.body)
            }
        } catch is ResponseReset {
            responder.resetConnection()
        } catch is ResponseHold {
            responder.holdConnection(limit: FaultInstruction.holdLimit)
        } catch {
            responder.closeConnection()
        }
    }

    /// Sends a complete reply's head and its first `cut` body bytes (all of a shorter body),
    /// then ends the connection by throwing `ResponseBreak`.
    private func sendBroken(_ reply: Reply, after cut: Int64, to responder: any ServerResponder) throws {
        guard Int64(reply.body.count) > cut else {
            try responder.respond(status: reply.status, headers: reply.headers, body: reply.body)
            throw ResponseBreak()
        }
        try responder.respondStreaming(
            status: reply.status, headers: reply.headers, contentLength: Int64(reply.body.count)
        ) { write in
            try reply.body.prefix(Int(cut)).withUnsafeBytes { try write($0) }
            throw ResponseBreak()
        }
    }

    /// Writes a streamed reply's body through `rawWrite`, a buffer at a time, decompressed when
    /// it is transcoded; `responseFault` (a reset or stall) fires after that many stored bytes, or
    /// at the end of a shorter body.
    ///
    /// - Throws: `ResponseReset` or `ResponseHold` when the fault says so; a read, decoding or
    ///   write failure otherwise.
    private func writeBody(
        of stream: StreamedBody,
        through rawWrite: (UnsafeRawBufferPointer) throws -> Void,
        responseFault: FaultInstruction?
    ) throws {
        var pendingTrigger = responseFault?.brokenStreamBytes ?? responseFault?.triggerOffset
        // Transcoding: the stored bytes are read (and faults counted) as for any
        // answer, and what goes on the wire is their decompressed form.
        var decoder = stream.inflates ? try GzipDecoder() : nil
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            guard decoder != nil else { return try rawWrite(bytes) }
            try decoder!.decode(bytes, failure: { $0 as any Error }) { (piece) throws(any Error) in
                try rawWrite(piece)
            }
        }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = stream.offset
        let end = stream.offset + stream.length
        func fireIfDue() throws {
            guard let trigger = pendingTrigger, offset - stream.offset >= trigger || offset >= end
            else { return }
            pendingTrigger = nil
            switch responseFault {
            case .stall(let milliseconds, _)?:
                Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            case .hold?:
                throw ResponseHold()
            case .brokenStream?:
                throw ResponseBreak()
            default:
                throw ResponseReset()
            }
        }
        try fireIfDue()
        while offset < end {
            var want = Int(min(Int64(buffer.count), end - offset))
            if let trigger = pendingTrigger {
                want = Int(min(Int64(want), max(1, trigger - (offset - stream.offset))))
            }
            let count = try buffer.withUnsafeMutableBytes { raw in
                try stream.reader.read(
                    at: offset, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]))
            }
            guard count > 0 else { throw StoreError.io("The object ended early.") }
            try buffer.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += Int64(count)
            try fireIfDue()
        }
        // Stored bytes that are not whole gzip end the answer with a broken connection.
        try decoder?.finish()
    }

    /// The protocol's error document: JSON, or the XML API's XML for signed URLs.
    func errorReply(_ error: HTTPError, _ flavor: Flavor) -> Reply {
        // A failed "not match" precondition on a read: 304 has no body by definition.
        if error.status == 304 { return Reply(status: 304) }
        var object: [String: Any]
        switch flavor {
        case .xml:
            return Self.xmlError(error)
        case .gcs:
            object = [
                "error": [
                    "code": error.status,
                    "message": error.message,
                    "errors": [["message": error.message, "domain": "global", "reason": error.reason]],
                ] as [String: Any]
            ]
        case .firebase:
            object = ["error": ["code": error.status, "message": error.message] as [String: Any]]
        }
        var reply = Reply.json(error.status, object)
        for (name, value) in error.headers { reply.headers.add(name, value) }
        return reply
    }

    // MARK: - Routing

    /// Runs a matched route: checks what its action needs, here and nowhere else, then calls its
    /// handler with what that check yields (an upload session, a signature's body hash).
    private func perform(_ match: RouteTable.Match, _ body: BodyReader) throws -> Reply {
        let (route, parameters) = try match.outcome.get()
        let call = RoutedRequest(request: body.request, body: body, parameters: parameters)
        switch route.action {
        case .request(let access, let handler):
            try authorize(call.request, access)
            if access == .gcs {
                try checkBilling(call.request, bucket: call.bucket)
                // A copy into a requester-pays bucket needs the project as well.
                if let destination = call.parameters.operation?.destinationBucket {
                    try checkBilling(call.request, bucket: destination)
                }
            }
            return try handler(self, call)
        case .session(let unknown, let handler):
            let id = call.request.query("upload_id") ?? ""
            return try handler(self, call, try authorizedSession(call.request, id: id, unknown: unknown))
        case .signed(let handler):
            let request = call.request
            let signed = try signedURLVerifier.verify(
                V4SignatureVerifier.Request(
                    method: request.method, path: request.path, queryItems: request.queryItems,
                    headers: request.headers),
                now: settings.now())
            return try handler(self, call, signed.payloadHash)
        }
    }

    /// The answer to a method that a path's routes do not serve.
    static let methodNotAllowed = HTTPError(405, "Method not allowed.", reason: "methodNotAllowed")

    // MARK: - Shared helpers

    /// `<scheme>://<Host>` for URLs handed back to the client, in the scheme it reached us by.
    func base(_ request: any ServerRequest) -> String {
        if let host = request.headers["Host"], !host.isEmpty { return "\(settings.scheme)://" + host }
        return "\(settings.scheme)://\(settings.fallbackHost)"
    }

    /// The bucket must exist, or be created now when auto-creation is on.
    func requireBucket(_ name: String) throws {
        if store.bucket(name) != nil { return }
        if settings.autoCreateBuckets {
            do {
                _ = try store.createBucket(name)
                return
            } catch {
                throw httpError(error)
            }
        }
        throw HTTPError(404, "The specified bucket does not exist.")
    }

    func requireObject(_ bucket: String, _ name: String) throws -> ObjectRecord {
        guard store.bucket(bucket) != nil || settings.autoCreateBuckets else {
            throw HTTPError(404, "The specified bucket does not exist.")
        }
        guard let record = store.record(bucket: bucket, name: name) else {
            throw HTTPError(404, "No such object: \(bucket)/\(name)")
        }
        return record
    }

    /// Streams a whole single-request upload into a new object.
    func storeObject(
        bucket: String, name: String, attributes: ObjectAttributes, expected: ExpectedHashes,
        preconditions: ObjectPreconditions = ObjectPreconditions(), computingMD5: Bool = true,
        write: (_ sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> ObjectRecord {
        try commitObject(bucket: bucket, name: name, attributes: attributes, preconditions: preconditions) { writer in
            var checksums = Checksums(computingMD5: computingMD5 && store.computesMD5)
            try write { bytes in
                try writer.write(bytes)
                checksums.update(bytes)
            }
            try expected.verify(checksums)
            return StagedObject(size: checksums.count, crc32c: checksums.crc32c, md5: checksums.md5Digest)
        }
    }

    /// What `stage` put in a staging writer: the new object's size and checksums.
    struct StagedObject {
        var size: Int64
        var crc32c: UInt32
        var md5: Data?
    }

    /// Makes a new object of the bytes `stage` writes into `writer` (by default a fresh staging
    /// writer), if `preconditions` hold; a failure anywhere discards the staged bytes.
    func commitObject(
        bucket: String, name: String, attributes: ObjectAttributes, preconditions: ObjectPreconditions,
        into writer: (any StagingWriter)? = nil, stage: (any StagingWriter) throws -> StagedObject
    ) throws -> ObjectRecord {
        do {
            try NameRules.validateObjectName(name)
        } catch {
            throw httpError(error)
        }
        try requireBucket(bucket)
        let writer = try writer ?? store.makeStagingWriter(bucket: bucket)
        do {
            let staged = try stage(writer)
            var record = ObjectRecord(bucket: bucket, name: name)
            record.size = staged.size
            record.crc32c = staged.crc32c
            record.md5 = staged.md5
            record.attributes = attributes
            settings.beforeStoreWrite?()
            // The store checks the conditions and replaces the object in one step.
            return try store.commit(writer, record: record, if: preconditions.holds)
        } catch {
            writer.discard()
            throw error
        }
    }

    /// Parses `Range: bytes=…` against `size`: nil for no (or an ignorable) range.
    func byteRange(_ header: String?, size: Int64) throws -> ClosedRange<Int64>? {
        guard let header else { return nil }
        let unsatisfiable = { () -> HTTPError in
            var error = HTTPError(416, "The requested range cannot be satisfied.")
            error.headers = [("Content-Range", "bytes */\(size)")]
            return error
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // Digits only, saturated: an enormous suffix means the whole object.
            guard let suffix = RequestNumber.digits(last) else { return nil }
            guard suffix > 0, size > 0 else { throw unsatisfiable() }
            return max(0, size - suffix)...(size - 1)
        }
        guard let start = RequestNumber.digits(first) else { return nil }
        let end: Int64
        if last.isEmpty {
            end = size - 1
        } else {
            guard let value = RequestNumber.digits(last) else { return nil }
            guard value >= start else { throw unsatisfiable() }
            end = min(value, size - 1)
        }
        guard start < size else { throw unsatisfiable() }
        return start...end
    }

    /// Answers an object's bytes, whole or a range.
    ///
    /// An object stored with `Content-Encoding: gzip` is served as Cloud Storage serves it: to a
    /// request without `Accept-Encoding: gzip`, decompressed (*decompressive transcoding*): no
    /// `Content-Encoding` or `Content-Length`, the `Range` ignored, and `x-goog-hash` and
    /// `x-goog-stored-content-*` still describing the stored bytes. `Cache-Control: no-transform`
    /// on the object, or `Accept-Encoding: gzip` on the request, gets the stored bytes with
    /// `Content-Encoding: gzip`.
    func mediaReply(_ request: any ServerRequest, _ record: ObjectRecord) throws -> Reply {
        // Every route to an object's bytes comes here: none serves a CSEK object without its key.
        try CustomerKey.check(given: try CustomerKey.sha256(request), stored: record.attributes.customerKeySHA256)
        let storedEncoding = record.attributes.contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased()
        let noTransform =
            record.attributes.cacheControl?.lowercased().split(separator: ",")
            .contains { $0.trimmingCharacters(in: .whitespaces) == "no-transform" } ?? false
        let transcodes = storedEncoding == "gzip" && !noTransform && !Self.acceptsGzip(request.headers)
        let range = transcodes ? nil : try byteRange(request.headers["Range"], size: record.size)
        var reply = Reply(status: range == nil ? 200 : 206)
        reply.headers.set("Content-Type", record.attributes.contentType ?? "application/octet-stream")
        reply.headers.set("Accept-Ranges", "bytes")
        reply.headers.set("ETag", "\"\(ObjectJSON.etag(record))\"")
        reply.headers.set("x-goog-generation", String(record.generation))
        reply.headers.set("x-goog-metageneration", String(record.metageneration))
        reply.headers.set("x-goog-stored-content-length", String(record.size))
        reply.headers.set("x-goog-stored-content-encoding", record.attributes.contentEncoding ?? "identity")
        if !transcodes, let encoding = record.attributes.contentEncoding, encoding.lowercased() != "identity" {
            reply.headers.set("Content-Encoding", encoding)
        }
        reply.headers.set(
            "x-goog-hash",
            "crc32c=\(ChecksumEncoding.base64(crc32c: record.crc32c))"
                + (record.md5.map { ",md5=\($0.base64EncodedString())" } ?? ""))
        if let value = record.attributes.cacheControl { reply.headers.set("Cache-Control", value) }
        if let value = record.attributes.contentDisposition { reply.headers.set("Content-Disposition", value) }
        if let value = record.attributes.contentLanguage { reply.headers.set("Content-Language", value) }
        // Custom metadata, as Cloud Storage sends it with the bytes; what cannot be a header
        // field (non-ASCII, control characters) is left to the JSON resource.
        let printable = { (text: String) in text.utf8.allSatisfy { (0x20...0x7E).contains($0) } }
        for (key, value) in record.attributes.metadata.sorted(by: { $0.key < $1.key })
        where printable(key) && printable(value) && !key.contains(":") && !key.contains(" ") {
            reply.headers.add("x-goog-meta-\(key)", value)
        }
        let offset = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? record.size
        if let range {
            reply.headers.set("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(record.size)")
        }
        if request.method == "HEAD" || length == 0 { return reply }
        let reader: any ObjectReader
        do {
            reader = try store.openReader(record)
        } catch {
            throw httpError(error)
        }
        reply.stream = StreamedBody(reader: reader, offset: offset, length: length, inflates: transcodes)
        return reply
    }

    /// Whether a request's `Accept-Encoding` takes gzip (`gzip` or `x-gzip`, unless `q=0`).
    static func acceptsGzip(_ headers: HTTPHeaders) -> Bool {
        headers.tokens("Accept-Encoding").contains { token in
            let parts = token.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" else { return false }
            return !parts.dropFirst().contains { parameter in
                parameter.hasPrefix("q=") && Double(parameter.dropFirst(2)) == 0
            }
        }
    }

    /// A page of a listing: objects and (with a delimiter) common prefixes.
    struct ListPage {
        var items: [ObjectRecord] = []
        var prefixes: [String] = []
        var nextPageToken: String?
    }

    /// The GCS listing options beyond a prefix, a delimiter and pages.
    struct ListFilter {
        /// Only names at or after these bytes (`startOffset`).
        var startOffset: String?
        /// Only names before these bytes (`endOffset`).
        var endOffset: String?
        /// Only names that match (`matchGlob`).
        var glob: ObjectNameGlob?
        /// Every version, noncurrent ones too, by name then generation (`versions`).
        var versions = false
        /// Names that end at the first delimiter after the prefix are items as well as prefixes
        /// (`includeTrailingDelimiter`).
        var includeTrailingDelimiter = false
    }

    /// Lists a bucket in name order. Items and prefixes both count toward
    /// `maxResults`; the page token names the last entry returned (and its generation,
    /// when versions are listed). A name listed both as an item and as its own prefix
    /// (`includeTrailingDelimiter`) is never split across pages, so only a page of
    /// `maxResults=1` can hold two entries.
    ///
    /// The store seeks to where the page starts (the furthest of the prefix, `startOffset` and
    /// just past the token's entry) and past each common prefix it collapses, and the scan
    /// stops at `endOffset` or the end of the prefix, so a page costs in proportion to what it
    /// visits, not to the bucket (only names that `matchGlob` passes over add to it).
    ///
    /// With a `matchGlob`, names are matched outside the store's lock: the scan copies up to
    /// ``globBatch`` records at a time and the page is built from the copy, so a costly pattern
    /// holds up no other request.
    ///
    /// Everything here works on UTF-8 bytes, as GCS does: `String` comparisons are
    /// canonical, so an NFC prefix would match NFD names and a token whose name
    /// starts with a combining mark would merge with its `i:` tag.
    func list(
        bucket: String, prefix: String, delimiter: String?, maxResults: Int, pageToken: String?,
        filter: ListFilter = ListFilter()
    ) throws
        -> ListPage
    {
        let prefixKey = ObjectKey(prefix)
        guard let (start, resumeGeneration) = try Self.pageStart(prefixKey, pageToken, filter) else {
            return ListPage()
        }
        var builder = ListPageBuilder(
            prefixKey: prefixKey, endKey: filter.endOffset.map(ObjectKey.init),
            delimiterBytes: Array((delimiter ?? "").utf8), maxResults: maxResults, filter: filter)
        if filter.glob == nil {
            let versions: ScanVersions = filter.versions ? .all(after: resumeGeneration) : .live
            store.scan(bucket: bucket, from: start, versions: versions) { builder.consider($0) }
        } else {
            listMatching(bucket: bucket, from: start, after: resumeGeneration, &builder)
        }
        listingVisits.add(builder.visited, ordering: .relaxed)
        return builder.page
    }

    /// How many records a `matchGlob` listing copies out of the store at a time.
    static let globBatch = 256

    /// Builds a `matchGlob` page from copies of the store's records, ``globBatch`` at a time,
    /// matching outside the store's lock.
    private func listMatching(
        bucket: String, from start: ObjectKey, after generation: Int64?, _ builder: inout ListPageBuilder
    ) {
        var cursor = (key: start, generation: generation)
        while true {
            var batch: [ObjectRecord] = []
            let versions: ScanVersions = builder.filter.versions ? .all(after: cursor.generation) : .live
            store.scan(bucket: bucket, from: cursor.key, versions: versions) { record in
                batch.append(record)
                return batch.count < Self.globBatch ? .next : .stop
            }
            var step = ScanStep.next
            for record in batch {
                step = builder.consider(record)
                if step != .next { break }
            }
            switch step {
            case .stop: return
            case .seek(let key): cursor = (key, nil)
            case .next:
                guard batch.count == Self.globBatch, let last = batch.last else { return }
                // Past the last record copied: its later versions, or the next name.
                cursor =
                    builder.filter.versions
                    ? (ObjectKey(last.name), last.generation) : (ObjectKey(last.name).successor, nil)
            }
        }
    }

    /// Where a listing page starts: the furthest of the prefix, `startOffset` and just past the
    /// token's entry; and, listing versions, the generation of the name at the start after which
    /// the page resumes. Nil when nothing can follow the token's entry.
    private static func pageStart(
        _ prefixKey: ObjectKey, _ pageToken: String?, _ filter: ListFilter
    ) throws -> (start: ObjectKey, resumeGeneration: Int64?)? {
        let start = max(prefixKey, ObjectKey(filter.startOffset ?? ""))
        guard let pageToken, !pageToken.isEmpty else { return (start, nil) }
        let after = try decodePageToken(pageToken)
        if after.isPrefix {
            // After a common prefix the page resumes past every name under it.
            guard let end = after.key.prefixEnd else { return nil }
            return (max(start, end), nil)
        } else if filter.versions, let generation = after.generation, start <= after.key {
            // After a version, past it: the name's later generations come first.
            return (after.key, generation)
        }
        // After an item, past that name (every version of it, for an `i:` token).
        return (max(start, after.key.successor), nil)
    }

    /// A page token: `p:<prefix>`, `i:<name>` or `v:<generation>:<name>`, base64; the
    /// generation is nil but for a `v:` token.
    private static func decodePageToken(
        _ token: String
    ) throws -> (isPrefix: Bool, key: ObjectKey, generation: Int64?) {
        let invalid = HTTPError.badRequest("Invalid page token.")
        guard let data = Data(base64Encoded: token), let colon = data.firstIndex(of: UInt8(ascii: ":")) else {
            throw invalid
        }
        let tag = String(decoding: data[..<colon], as: UTF8.self)
        var key = Array(data[(colon + 1)...])
        var generation: Int64?
        switch tag {
        case "p", "i": break
        case "v":
            guard let second = key.firstIndex(of: UInt8(ascii: ":")),
                let value = RequestNumber.digits(String(decoding: key[..<second], as: UTF8.self))
            else { throw invalid }
            generation = value
            key = Array(key[(second + 1)...])
        default: throw invalid
        }
        guard String(validating: key, as: UTF8.self) != nil else { throw invalid }
        return (tag == "p", ObjectKey(bytes: key), generation)
    }

    func maxResults(_ request: any ServerRequest) throws -> Int {
        guard let text = request.query("maxResults") else { return 1000 }
        guard let value = RequestNumber.digits(text), value > 0, value < Int64.max else {
            throw HTTPError.badRequest("Invalid maxResults: '\(text)'.")
        }
        return Int(min(value, 1000))
    }

    // MARK: - Authentication

    // With a token configured, exactly one credential opens the emulator (plus `owner`
    // when explicitly allowed): `owner` is the Firebase emulator's well-known word, no secret.
    // With issued tokens required, a live token from the emulator's token endpoint or metadata
    // server opens it as well.

    /// The authentication that needs issued tokens, when configured so.
    private var issuedTokens: AuthenticationService? {
        guard let authentication = settings.authentication, authentication.requiresToken else { return nil }
        return authentication
    }

    /// Checks a request's credentials against what its route needs (see ``Route/Access``).
    private func authorize(_ request: any ServerRequest, _ access: Route.Access) throws {
        switch access {
        case .open: return
        case .control: try authorizeFirebase(request, storageRequest: false)
        case .gcs: try authorizeGCS(request)
        case .firebase: try authorizeFirebase(request)
        case .firebaseOrDownloadToken:
            // The handler checks the token against the object's own: a wrong one is refused.
            if request.query("token") == nil { try authorizeFirebase(request) }
        }
    }

    /// The upload session a request names, once the request is authorized for it.
    ///
    /// What a session request needs is decided here, by the session (how its start was
    /// authorized, see ``UploadSession/Access``), never by the URL that reached it: every route
    /// to a session (``Route/Action/session``) comes through here, and its handler gets the
    /// session only from here, so no query parameter can route around the check.
    ///
    /// - Parameter unknown: The protocol's answer for a session that does not exist.
    private func authorizedSession(_ request: any ServerRequest, id: String, unknown: HTTPError) throws -> UploadSession
    {
        guard let session = sessions.session(id) else { throw unknown }
        switch session.access {
        case .signedURL: break
        case .gcs: try authorizeGCS(request, sessionRequest: true)
        case .firebase: try authorizeFirebase(request)
        }
        return session
    }

    /// Checks a GCS request's credentials.
    ///
    /// - Parameter sessionRequest: A request to a resumable upload session the JSON API started:
    ///   its URL is a capability, so only issued tokens (when required) are checked on it.
    private func authorizeGCS(_ request: any ServerRequest, sessionRequest: Bool = false) throws {
        let issuedTokens = issuedTokens
        if sessionRequest && issuedTokens == nil { return }
        guard settings.requiredToken != nil || issuedTokens != nil else { return }
        let header = request.headers["Authorization"]
        if let token = settings.requiredToken, header == "Bearer \(token)" { return }
        if settings.requiredToken != nil, settings.acceptsOwner, header == "Bearer owner" { return }
        if let issuedTokens, let header, header.hasPrefix("Bearer ") {
            try checkIssuedToken(String(header.dropFirst("Bearer ".count)), issuedTokens, request)
            return
        }
        var error = HTTPError(401, "Anonymous caller does not have storage access to the requested resource.")
        error.headers = [("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"")]
        throw error
    }

    /// Checks a Firebase request's credentials (or a control route's).
    ///
    /// - Parameter storageRequest: False for control routes: they take the storage API's
    ///   credentials (the configured token, or a live issued token when those are required), so
    ///   an emulator that requires credentials for storage requires them for its controls too;
    ///   App Check, a Firebase client's attestation, is asked of storage requests only.
    private func authorizeFirebase(_ request: any ServerRequest, storageRequest: Bool = true) throws {
        if storageRequest, let appCheck = settings.appCheckToken, request.headers["X-Firebase-AppCheck"] != appCheck {
            throw HTTPError(401, "Unauthorized: the request needs a valid Firebase App Check token.")
        }
        let issuedTokens = issuedTokens
        guard settings.requiredToken != nil || issuedTokens != nil else { return }
        let header = request.headers["Authorization"]
        if let token = settings.requiredToken {
            // The Firebase SDKs send `Firebase <ID token>`; the Admin SDK and gcloud tokens come as Bearer.
            var accepted = ["Firebase \(token)", "Bearer \(token)"]
            // The Firebase emulator's convention: `owner` stands for an admin, in either scheme.
            if settings.acceptsOwner { accepted += ["Firebase owner", "Bearer owner"] }
            if let header, accepted.contains(header) { return }
        }
        if let issuedTokens, let header {
            for scheme in ["Bearer ", "Firebase "] where header.hasPrefix(scheme) {
                try checkIssuedToken(String(header.dropFirst(scheme.count)), issuedTokens, request)
                return
            }
        }
        throw HTTPError(401, "Unauthorized: the request needs a valid Authorization header.")
    }

    /// A request about a requester-pays bucket must name the project billed (`userProject`), as
    /// Cloud Storage requires of everyone but the bucket's owners (the emulator knows no owners).
    /// Requests to an upload session need not: the session's start named it.
    private func checkBilling(_ request: any ServerRequest, bucket: String) throws {
        guard !bucket.isEmpty, request.query("userProject") == nil, store.bucket(bucket)?.requesterPays == true
        else { return }
        throw HTTPError(
            400, "Bucket is a requester pays bucket but no user project provided.", reason: "userProjectMissing")
    }

    /// Storage scopes, and whether each allows writing.
    private static let storageScopes: [String: Bool] = [
        "https://www.googleapis.com/auth/cloud-platform": true,
        "https://www.googleapis.com/auth/cloud-platform.read-only": false,
        "https://www.googleapis.com/auth/devstorage.full_control": true,
        "https://www.googleapis.com/auth/devstorage.read_write": true,
        "https://www.googleapis.com/auth/devstorage.read_only": false,
        "https://www.googleapis.com/auth/firebase": true,
    ]

    /// A token the emulator issued must be live and, for a service account, carry a storage
    /// scope (a writing one for anything but a read). Users' tokens carry their consent, all scopes.
    private func checkIssuedToken(
        _ token: String, _ authentication: AuthenticationService, _ request: any ServerRequest
    ) throws {
        let grant: AccessTokenTable.Grant
        do {
            grant = try authentication.tokens.grant(for: token, now: settings.now())
        } catch {
            var failure = HTTPError(401, "Invalid Credentials", reason: "authError")
            let detail = error == .expired ? "The access token expired" : "The access token is not valid"
            failure.headers = [
                (
                    "WWW-Authenticate",
                    "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\", error_description=\"\(detail)\""
                )
            ]
            throw failure
        }
        guard case .serviceAccount = grant.principal else { return }
        let reading = ["GET", "HEAD"].contains(request.method)
        let allowed = grant.scopes.contains { scope in Self.storageScopes[scope].map { $0 || reading } ?? false }
        guard allowed else {
            throw HTTPError(
                403, "Insufficient Permission: the access token's scopes do not allow this request.",
                reason: "insufficientPermissions")
        }
    }

    // MARK: - Control

    /// Installs the fault plan a control request's JSON body holds (`{"instructions": […]}`).
    func postFaultPlan(_ request: any ServerRequest, _ body: BodyReader) throws -> Reply {
        if let length = request.contentLength, length > Int64(Self.maxFaultPlanBody) {
            throw HTTPError(
                413, "A fault plan body may have at most \(Self.maxFaultPlanBody) bytes.", reason: "uploadTooLarge")
        }
        let json = try JSON.decodeObject(try body.readAll(limit: Self.maxFaultPlanBody))
        guard let instructions = json["instructions"] as? [String] else {
            throw HTTPError.badRequest("Expected {\"instructions\": [\"…\"]}.")
        }
        do {
            return Reply.json(200, ["id": try installFaultPlan(instructions)])
        } catch {
            switch error.kind {
            case .tooLarge: throw HTTPError(413, error.message, reason: "uploadTooLarge")
            case .invalid: throw HTTPError.badRequest(error.message)
            }
        }
    }
}
