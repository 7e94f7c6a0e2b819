import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// With issued tokens required, every storage request — each request of a resumable upload
/// included — needs a live token from the emulator's own token endpoint or metadata server.
@Suite("Emulator issued-token enforcement")
struct IssuedTokenTests {
    static let fb = "/v0/b/demo.appspot.com/o"

    static func bearer(_ token: String) -> HTTPHeaders { ["Authorization": "Bearer \(token)"] }

    @Test("no token, an unknown one or a static-looking one: 401 on GCS and Firebase, nothing written")
    func refused() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        for headers in [[:], Self.bearer("ya29.made-up"), Self.bearer("owner"), ["Authorization": "Firebase x"]]
            as [HTTPHeaders]
        {
            let gcs = harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=a", headers: headers, body: [1])
            #expect(gcs.status == 401)
            #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: headers).status == 401)
            #expect(harness.send("POST", "\(Self.fb)?name=a", headers: headers, body: [1]).status == 401)
            #expect(harness.send("GET", Self.fb, headers: headers).status == 401)
        }
        let unknown = harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer("ya29.made-up"))
        #expect(unknown.errorMessage == "Invalid Credentials")
        #expect(unknown.headers["WWW-Authenticate"]?.contains("invalid_token") == true)
        #expect(harness.object("bkt", "a") == nil)
    }

    @Test("a live token opens GCS and Firebase (either scheme); download tokens still open their object")
    func accepted() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let token = try harness.token(clock)
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=a", headers: Self.bearer(token), body: [1]
            ).status == 200)
        let media = harness.send("GET", "/download/storage/v1/b/bkt/o/a?alt=media", headers: Self.bearer(token))
        #expect(media.status == 200)
        #expect(media.body == Data([1]))
        let firebase = harness.send("POST", "\(Self.fb)?name=f", headers: Self.bearer(token), body: [2])
        #expect(firebase.status == 200)
        let downloadToken = try #require(firebase.json["downloadTokens"] as? String)
        #expect(harness.send("GET", "\(Self.fb)/f", headers: ["Authorization": "Firebase \(token)"]).status == 200)
        #expect(harness.send("GET", "\(Self.fb)/f?alt=media&token=\(downloadToken)").status == 200)
    }

    @Test("expireAll: the next chunk of a resumable upload gets 401; a new token finishes it")
    func expiredMidUpload() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let token = try harness.token(clock)
        let bytes = testBytes(2 * kib256)
        let session = harness.startGCSSession(name: "big", headers: Self.bearer(token))
        func chunk(_ range: Range<Int>, total: String, _ headers: HTTPHeaders) -> TestResponder {
            var headers = headers
            headers.add("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)")
            return harness.send("PUT", session, headers: headers, body: Array(bytes[range]))
        }
        #expect(chunk(0..<kib256, total: "*", Self.bearer(token)).status == 308)
        // A session URL is no longer enough on its own.
        #expect(chunk(kib256..<2 * kib256, total: "\(bytes.count)", [:]).status == 401)

        harness.app.settings.authentication?.tokens.expireAll()
        let refused = chunk(kib256..<2 * kib256, total: "\(bytes.count)", Self.bearer(token))
        #expect(refused.status == 401)
        #expect(refused.errorMessage == "Invalid Credentials")
        #expect(refused.headers["WWW-Authenticate"]?.contains("expired") == true)
        #expect(harness.object("bkt", "big") == nil)

        let fresh = try harness.token(clock)
        let query = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes */*", "Authorization": "Bearer \(fresh)"])
        #expect(query.status == 308)
        #expect(query.headers["Range"] == "bytes=0-\(kib256 - 1)")
        #expect(chunk(kib256..<2 * kib256, total: "\(bytes.count)", Self.bearer(fresh)).status == 200)
        #expect(harness.object("bkt", "big") == Data(bytes))
        #expect(harness.app.settings.authentication?.tokens.grantCount == 2)
    }

    @Test("a Firebase resumable upload's commands need a live token too")
    func firebaseSession() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let token = try harness.token(clock)
        var start = Self.bearer(token)
        start.add("X-Goog-Upload-Protocol", "resumable")
        start.add("X-Goog-Upload-Command", "start")
        let started = harness.send("POST", "\(Self.fb)?name=r", headers: start, json: [:])
        #expect(started.status == 200)
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let path = String(url.dropFirst("http://emulator.test".count))
        harness.app.settings.authentication?.tokens.expireAll()
        var finish = Self.bearer(token)
        finish.add("X-Goog-Upload-Command", "upload, finalize")
        finish.add("X-Goog-Upload-Offset", "0")
        #expect(harness.send("POST", path, headers: finish, body: [5]).status == 401)
        let fresh = try harness.token(clock)
        var again = Self.bearer(fresh)
        again.add("X-Goog-Upload-Command", "upload, finalize")
        again.add("X-Goog-Upload-Offset", "0")
        #expect(harness.send("POST", path, headers: again, body: [5]).status == 200)
        #expect(harness.object("demo.appspot.com", "r") == Data([5]))
    }

    @Test("X-Goog-Signature in the query opens no session a token started: 401, the object's bytes unchanged")
    func signatureParameterOpensNoSession() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let token = try harness.token(clock)
        let stored = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=kept", headers: Self.bearer(token), body: [1])
        #expect(stored.status == 200)
        let gcs = harness.startGCSSession(name: "kept", headers: Self.bearer(token))
        var start = Self.bearer(token)
        start.add("X-Goog-Upload-Protocol", "resumable")
        start.add("X-Goog-Upload-Command", "start")
        let firebase = harness.send("POST", "\(Self.fb)?name=kept", headers: start, json: [:])
        #expect(firebase.status == 200)
        for url in [gcs, firebase.headers["X-Goog-Upload-URL"] ?? ""] {
            let id = try #require(url.components(separatedBy: "upload_id=").last?.prefix { $0 != "&" })
            // Any path, any signature: the query only routes; the session decides what it needs.
            for path in ["/anything", "/bkt/kept"] {
                let forged = harness.send("PUT", "\(path)?X-Goog-Signature=00&upload_id=\(id)", body: [6, 6, 6])
                #expect(forged.status == 401, "\(path) reached session \(id) without a token")
            }
        }
        #expect(harness.object("bkt", "kept") == Data([1]))
        #expect(harness.object("demo.appspot.com", "kept") == nil)
        // With its token the same URL still reaches the session.
        let id = try #require(gcs.components(separatedBy: "upload_id=").last)
        let finished = harness.send(
            "PUT", "/bkt/kept?X-Goog-Signature=00&upload_id=\(id)", headers: Self.bearer(token), body: [2])
        #expect(finished.status == 200)
        #expect(harness.object("bkt", "kept") == Data([2]))
    }

    @Test("a token dies when its lifetime passes on the emulator's clock")
    func lifetime() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock, lifetime: .seconds(600))
        let response = harness.grant(
            try AuthFixture.jwt(claims: AuthFixture.claims(clock.seconds), key: AuthFixture.key))
        #expect((response.json["expires_in"] as? NSNumber)?.int64Value == 600)
        let token = try #require(response.json["access_token"] as? String)
        clock.advance(599)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer(token)).status == 200)
        clock.advance(1)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer(token)).status == 401)
    }

    @Test("a read-only scope reads but cannot write; a scope outside storage opens nothing")
    func scopes() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let readOnly = try harness.token(clock, scope: "https://www.googleapis.com/auth/devstorage.read_only")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer(readOnly)).status == 200)
        let write = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=a", headers: Self.bearer(readOnly), body: [1])
        #expect(write.status == 403)
        let other = try harness.token(clock, scope: "https://www.googleapis.com/auth/pubsub")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer(other)).status == 403)
        #expect(harness.object("bkt", "a") == nil)
    }

    @Test("the static required token keeps working beside issued tokens")
    func staticToken() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock, staticToken: "secret")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer("secret")).status == 200)
        let token = try harness.token(clock)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: Self.bearer(token)).status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 401)
    }

    @Test("control routes need the storage API's credentials: an issued token or the static one, never none")
    func controlEndpoint() throws {
        let clock = TestClock()
        let issuedOnly = try AuthFixture.harness(clock)
        let plan: [String: Any] = ["instructions": ["pass"]]
        #expect(issuedOnly.send("POST", "/_emulator/v1/faults", json: plan).status == 401)
        #expect(
            issuedOnly.send("POST", "/_emulator/v1/faults", headers: Self.bearer("ya29.made-up"), json: plan).status
                == 401)
        let token = try issuedOnly.token(clock)
        #expect(issuedOnly.send("POST", "/_emulator/v1/faults", headers: Self.bearer(token), json: plan).status == 200)
        let guarded = try AuthFixture.harness(TestClock(), staticToken: "secret")
        #expect(guarded.send("POST", "/_emulator/v1/faults", json: plan).status == 401)
        #expect(guarded.send("POST", "/_emulator/v1/faults", headers: Self.bearer("secret"), json: plan).status == 200)
    }

    @Test("over TLS the aud must name the https endpoint")
    func httpsAudience() throws {
        let clock = TestClock()
        let service = try AuthenticationService(AuthFixture.configuration())
        let harness = try Harness { settings in
            settings.authentication = service
            settings.now = { clock.now }
            settings.scheme = "https"
        }
        let https = AuthFixture.claims(clock.seconds, aud: "https://emulator.test/token")
        #expect(harness.grant(try AuthFixture.jwt(claims: https, key: AuthFixture.key)).status == 200)
        let http = AuthFixture.claims(clock.seconds, aud: "http://emulator.test/token")
        #expect(harness.grant(try AuthFixture.jwt(claims: http, key: AuthFixture.key)).status == 400)
        let explicitPort = AuthFixture.claims(clock.seconds, aud: "https://EMULATOR.test:443/token")
        #expect(harness.grant(try AuthFixture.jwt(claims: explicitPort, key: AuthFixture.key)).status == 200)
    }

    @Test("without requiresToken the token servers run and storage stays open")
    func notRequired() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock, requiresToken: false)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 200)
        _ = try harness.token(clock)
    }

    @Test("the token table stays bounded: past capacity the oldest tokens go, newer ones still work")
    func bounded() {
        let table = AccessTokenTable(capacity: 8)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let tokens = (0..<20).map { _ in
            table.issue(for: .serviceAccount("a"), scopes: [], lifetime: .seconds(60), now: now).token
        }
        #expect(throws: AccessTokenTable.Refusal.unknown) { try table.grant(for: tokens[0], now: now) }
        #expect(throws: Never.self) { try table.grant(for: tokens[19], now: now) }
        #expect(table.grantCount == 20)
    }
}
