import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// With a token configured, only that token opens the emulator — `owner` only when
/// asked for — on every route, the control endpoints included.
@Suite("Emulator token")
struct TokenTests {
    static let firebaseBucket = "demo.appspot.com"

    /// Every kind of request a client could make, each answered 401 without valid credentials.
    static func attempts(_ harness: Harness, _ authorization: String?) -> [(String, Int?)] {
        let headers: HTTPHeaders = authorization.map { ["Authorization": $0] } ?? [:]
        let fb = "/v0/b/\(firebaseBucket)/o"
        return [
            ("GCS read", harness.send("GET", "/storage/v1/b/bkt/o/x", headers: headers).status),
            ("GCS media", harness.send("GET", "/download/storage/v1/b/bkt/o/x?alt=media", headers: headers).status),
            ("GCS list", harness.send("GET", "/storage/v1/b/bkt/o", headers: headers).status),
            (
                "GCS write",
                harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=y", headers: headers, body: [1])
                    .status
            ),
            ("GCS delete", harness.send("DELETE", "/storage/v1/b/bkt/o/x", headers: headers).status),
            ("Firebase read", harness.send("GET", "\(fb)/x", headers: headers).status),
            ("Firebase list", harness.send("GET", fb, headers: headers).status),
            ("Firebase write", harness.send("POST", "\(fb)?name=y", headers: headers, body: [1]).status),
            ("Firebase delete", harness.send("DELETE", "\(fb)/x", headers: headers).status),
            (
                "fault plan",
                harness.send("POST", "/_emulator/v1/faults", headers: headers, json: ["instructions": ["pass"]]).status
            ),
        ]
    }

    func seeded(acceptOwner: Bool = false) throws -> Harness {
        let harness = try Harness(token: "secret", acceptOwner: acceptOwner)
        let gcs = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", headers: ["Authorization": "Bearer secret"],
            body: [1])
        #expect(gcs.status == 200)
        let firebase = harness.send(
            "POST", "/v0/b/\(Self.firebaseBucket)/o?name=x", headers: ["Authorization": "Firebase secret"], body: [1])
        #expect(firebase.status == 200)
        return harness
    }

    @Test(
        "owner, other tokens and no token get 401 everywhere",
        arguments: [
            nil, "Bearer owner", "Firebase owner", "Bearer other", "Firebase other", "secret", "Bearer  secret",
        ])
    func refused(authorization: String?) throws {
        let harness = try seeded()
        for (what, status) in Self.attempts(harness, authorization) {
            #expect(status == 401, "\(what) with \(authorization ?? "no Authorization")")
        }
        // Nothing was written or deleted.
        #expect(harness.object("bkt", "x") == Data([1]))
        #expect(harness.object("bkt", "y") == nil)
        #expect(harness.object(Self.firebaseBucket, "x") == Data([1]))
    }

    @Test("the configured token opens everything, in the scheme of each protocol")
    func accepted() throws {
        let harness = try seeded()
        let gcs = Self.attempts(harness, "Bearer secret").filter { $0.0.hasPrefix("GCS") || $0.0 == "fault plan" }
        for (what, status) in gcs { #expect((200..<300).contains(status ?? 0), "\(what)") }
        let firebase = try seeded()
        for (what, status) in Self.attempts(firebase, "Firebase secret") where what.hasPrefix("Firebase") {
            #expect((200..<300).contains(status ?? 0), "\(what)")
        }
    }

    @Test("owner is accepted when configured, in either scheme")
    func ownerWhenAsked() throws {
        for scheme in ["Bearer", "Firebase"] {
            let harness = try seeded(acceptOwner: true)
            let results = Self.attempts(harness, "\(scheme) owner").filter {
                scheme == "Bearer" || !$0.0.hasPrefix("GCS")
            }
            for (what, status) in results { #expect((200..<300).contains(status ?? 0), "\(what) as \(scheme) owner") }
        }
    }

    @Test("a session is opened by what started it, not by the URL that reaches it")
    func sessionsKeepTheirProtocolsRule() throws {
        let harness = try seeded()
        var start: HTTPHeaders = ["Authorization": "Firebase secret"]
        start.add("X-Goog-Upload-Protocol", "resumable")
        start.add("X-Goog-Upload-Command", "start")
        let started = harness.send("POST", "/v0/b/\(Self.firebaseBucket)/o?name=x", headers: start, json: [:])
        #expect(started.status == 200)
        let id = try #require(started.headers["X-Goog-Upload-URL"]?.components(separatedBy: "upload_id=").last)
        let bareID = id.prefix { $0 != "&" }
        // A Firebase upload needs its token on every command, even through the JSON API's session URL
        // (whose own sessions are capabilities) or with a signature parameter.
        for target in [
            "/upload/storage/v1/b/\(Self.firebaseBucket)/o?uploadType=resumable&upload_id=\(bareID)",
            "/x?X-Goog-Signature=00&upload_id=\(bareID)",
        ] {
            #expect(harness.send("PUT", target, body: [6]).status == 401, "\(target)")
        }
        #expect(harness.object(Self.firebaseBucket, "x") == Data([1]))
        // The JSON API's own session URL stays a capability.
        let session = harness.startGCSSession(name: "x", headers: ["Authorization": "Bearer secret"])
        #expect(harness.send("PUT", session, body: [2]).status == 200)
        #expect(harness.object("bkt", "x") == Data([2]))
    }

    @Test("without a configured token the emulator stays open, control endpoints included")
    func openWithoutToken() throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", body: [1]).status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x").status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: ["Authorization": "Bearer owner"]).status == 200)
        #expect(harness.send("POST", "/_emulator/v1/faults", json: ["instructions": ["pass"]]).status == 200)
    }
}
