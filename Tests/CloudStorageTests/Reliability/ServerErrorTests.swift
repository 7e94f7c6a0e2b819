import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Failures that retrying cannot fix, and the one that a new session can:
/// exhausted retry budgets, refused credentials, missing buckets, forgotten sessions;
/// each on both wire protocols and each route (``TestRoute``).
@Suite("Reliability: server errors", .timeLimit(.minutes(10)))
struct ServerErrorTests {
    static let payload = TestSupport.payload(size: 300 * 1024, seed: 77)

    // MARK: Exhausted retries

    /// A plan that fails every request (the start too, for the resumable path), with a short budget.
    @Test(arguments: Reliability.Route.all, Reliability.Path.allCases)
    func endlessServiceUnavailableExhaustsTheRetryBudget(
        route: Reliability.Route, path: Reliability.Path
    )
        async throws
    {
        try await expectExhausted(route: route, path: path, status: 503, code: .retryLimitExceeded)
    }

    @Test(arguments: Reliability.Route.all, Reliability.Path.allCases)
    func endlessThrottlingEndsInQuotaExceeded(route: Reliability.Route, path: Reliability.Path) async throws {
        try await expectExhausted(route: route, path: path, status: 429, code: .quotaExceeded)
    }

    /// The session starts, then every later request fails: the upload still ends in the documented error.
    @Test(arguments: Reliability.Route.all, [503, 429])
    func endlessFailuresAfterTheSessionStartedExhaustTheBudget(route: Reliability.Route, status: Int) async throws {
        let faults = ["pass"] + Array(repeating: "return-\(status)", count: 5000)
        try await Reliability.withEmulator(for: route.via, faults: faults) { emulator in
            let storage = Reliability.storage(route, emulator) {
                $0.uploads.multipartThreshold = -1
                try $0.retry.setMaxUploadTime(.milliseconds(400))
                try $0.retry.setMaxDelay(.milliseconds(20))
            }
            let ending = try await Reliability.upload(
                Self.payload, from: .data, to: storage.reference(withPath: "exhausted"))
            let error = try #require(ending.error)
            #expect(error.code == (status == 429 ? .quotaExceeded : .retryLimitExceeded))
            #expect(error.httpStatus == status)
            #expect((error.underlyingError as? StorageError)?.httpStatus == status)
            #expect(Reliability.record("exhausted", in: emulator) == nil, "nothing is stored")
        }
    }

    func expectExhausted(
        route: Reliability.Route, path: Reliability.Path, status: Int, code: StorageErrorCode
    ) async throws {
        let faults = Array(repeating: "return-\(status)", count: 5000)
        try await Reliability.withEmulator(for: route.via, faults: faults) { emulator in
            let storage = Reliability.storage(route, emulator) {
                if path == .resumable { $0.uploads.multipartThreshold = -1 }
                try $0.retry.setMaxUploadTime(.milliseconds(400))
                try $0.retry.setMaxDelay(.milliseconds(20))
            }
            let ending = try await Reliability.upload(
                Self.payload, from: .file, to: storage.reference(withPath: "exhausted"))
            let error = try #require(ending.error)
            #expect(error.code == code, "\(error)")
            #expect(error.httpStatus == status)
            let underlying = error.underlyingError as? StorageError
            #expect(underlying?.httpStatus == status, "the last failure is attached")
            #expect(underlying?.serverMessage?.contains("Injected fault") == true)
            #expect(Reliability.record("exhausted", in: emulator) == nil, "nothing is stored")
            #expect(Reliability.liveSessions(emulator) == 0, "no session was ever opened")
        }
    }

    // MARK: Credentials

    enum Credential: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case none, wrong, right, refreshed

        var testDescription: String { rawValue }

        var authorization: StorageAuthorization {
            switch self {
            case .none: .none
            case .wrong: .bearerToken("not-the-token")
            case .right: .bearerToken("open-sesame")
            case .refreshed:
                // A stale token first; the refreshed one after the 401.
                .tokenProvider { forceRefresh in forceRefresh ? "open-sesame" : "stale-token" }
            }
        }
    }

    @Test(arguments: Reliability.Route.all, Credential.allCases)
    func aRequiredTokenIsEnforced(route: Reliability.Route, credential: Credential) async throws {
        try await Reliability.withEmulator(for: route.via, configure: { $0.requiredToken = "open-sesame" }) {
            emulator in
            for path in Reliability.Path.allCases {
                let storage = Reliability.storage(route, emulator, authorization: credential.authorization) {
                    if path == .resumable { $0.uploads.multipartThreshold = -1 }
                }
                let name = "auth/\(path)"
                let ending = try await Reliability.upload(
                    Self.payload, from: .data, to: storage.reference(withPath: name))
                switch credential {
                case .none, .wrong:
                    #expect(ending.error?.code == .unauthenticated, "\(path)")
                    #expect(ending.error?.httpStatus == 401, "\(path)")
                    #expect(ending.error?.description.contains("open-sesame") == false)
                    #expect(Reliability.record(name, in: emulator) == nil)
                case .right, .refreshed:
                    #expect(ending.error == nil, "\(path): \(ending.error.map(String.init(describing:)) ?? "")")
                    try Reliability.expectStored(
                        Self.payload, as: name, in: emulator, returned: try? ending.result.get())
                }
            }
        }
    }

    @Test(arguments: Reliability.Route.all, Reliability.Path.allCases)
    func forbiddenIsUnauthorizedAndDiscardsTheSession(route: Reliability.Route, path: Reliability.Path) async throws {
        try await Reliability.withEmulator(for: route.via, faults: path.plan(faultingBytesWith: "return-403")) {
            emulator in
            let storage = Reliability.storage(route, emulator) {
                if path == .resumable { $0.uploads.multipartThreshold = -1 }
            }
            let ending = try await Reliability.upload(
                Self.payload, from: .data, to: storage.reference(withPath: "forbidden"))
            #expect(ending.error?.code == .unauthorized)
            #expect(ending.error?.httpStatus == 403)
            #expect(Reliability.record("forbidden", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == 0, "a failed upload deletes its session")
        }
    }

    // MARK: Buckets and sessions

    @Test(arguments: Reliability.Route.all, Reliability.Path.allCases)
    func aMissingBucketIsBucketNotFound(route: Reliability.Route, path: Reliability.Path) async throws {
        try await Reliability.withEmulator(for: route.via, configure: { $0.autoCreateBuckets = false }) { emulator in
            let storage = Reliability.storage(route, emulator) {
                if path == .resumable { $0.uploads.multipartThreshold = -1 }
            }
            let ending = try await Reliability.upload(
                Self.payload, from: .data, to: storage.reference(withPath: "nowhere"))
            #expect(ending.error?.code == .bucketNotFound)
            #expect(ending.error?.httpStatus == 404)
            #expect(emulator.application.store.bucket(Reliability.bucket) == nil, "no bucket was created")
        }
    }

    /// The server forgets the session after the first chunk: the SDK opens a new one and
    /// sends everything again from byte 0.
    @Test(arguments: Reliability.Route.all, Reliability.Source.allCases)
    func aSessionForgottenMidUploadIsReplaced(route: Reliability.Route, source: Reliability.Source) async throws {
        let payload = TestSupport.payload(size: 4 * Reliability.granule + 5, seed: 78)
        try await Reliability.withEmulator(for: route.via, faults: ["pass", "pass", "return-404"]) { emulator in
            let storage = Reliability.storage(route, emulator) {
                $0.uploads.multipartThreshold = -1
                try $0.uploads.setChunkSize(256 * 1024)
            }
            let ending = try await Reliability.upload(payload, from: source, to: storage.reference(withPath: "lost"))
            #expect(ending.error == nil, "\(ending.error.map(String.init(describing:)) ?? "")")
            try Reliability.expectStored(payload, as: "lost", in: emulator, returned: try? ending.result.get())
            #expect(Reliability.liveSessions(emulator) == 2, "a second session was opened")
        }
    }

    // MARK: Credentials never travel in the clear

    /// About plain HTTP itself, so on the plain routes only.
    @Test(arguments: TestRoute.plain, [8 * 1024 * 1024, -1] as [Int64])
    func aFirebaseEndpointOnAnotherMachineOverPlainHTTPGetsNoToken(
        route: TestRoute, multipartUploadThreshold: Int64
    ) async throws {
        // `.invalid` never resolves, and the check runs before any connection is made.
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.uploads.multipartThreshold = multipartUploadThreshold
        try configuration.retry.setInitialDelay(.milliseconds(5))
        try configuration.retry.setMaxUploadTime(.seconds(5))
        let storage = Storage(
            bucket: "b",
            endpoint: .firebase(URL(string: "http://firebase.example.invalid:9199")!),
            authorization: .bearerToken("secret-token"),
            configuration: configuration
        )
        let ending = try await Reliability.upload(Data("x".utf8), from: .data, to: storage.reference(withPath: "a"))
        #expect(ending.error?.code == .invalidArgument)
        #expect(ending.error?.message.contains("plain HTTP") == true)
        #expect(ending.error?.description.contains("secret-token") == false)
    }

    /// A loopback server hands back a session URL on another machine over plain http:
    /// the token must not follow it there.
    @Test(arguments: Reliability.Wire.allCases)
    func aSessionURLOnAnotherMachineOverPlainHTTPGetsNoToken(wire: Reliability.Wire) async throws {
        let transport = Reliability.foreignSessionTransport()
        var configuration = StorageConfiguration()
        configuration.uploads.multipartThreshold = -1
        try configuration.retry.setInitialDelay(.milliseconds(5))
        try configuration.retry.setMaxUploadTime(.seconds(5))
        let storage = Storage(
            bucket: "b", endpoint: wire.endpoint(Reliability.loopback),
            authorization: .bearerToken("secret-token"), configuration: configuration, transport: transport)
        let ending = try await Reliability.upload(
            TestSupport.payload(size: 1000, seed: 9), from: .data, to: storage.reference(withPath: "a"))
        let scheme = wire == .gcs ? "Bearer" : "Firebase"
        let sent = transport.sent
        #expect(
            sent.first?.header("Authorization") == "\(scheme) secret-token",
            "the loopback session start carries the token")
        let leaked = sent.filter { $0.url.host != "127.0.0.1" && $0.header("Authorization") != nil }
        #expect(leaked.isEmpty, "the token was sent to \(leaked.map(\.url))")
        #expect(ending.error?.code == .invalidArgument)
        #expect(ending.error?.description.contains("secret-token") == false)
    }
}
