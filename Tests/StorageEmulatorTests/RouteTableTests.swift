import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// The route table is the emulator's API surface: every route is reached by the requests it
/// serves, and a request that fits none gets the answer it always got (404 for an unknown path,
/// 405 without `Allow` for a method the path's routes do not serve).
@Suite("Route table")
struct RouteTableTests {
    /// A request and the route it reaches (as ``Route/description`` writes it), or the status
    /// the router answers itself.
    enum Outcome: Sendable {
        case route(String)
        case status(Int)
    }

    static let signature = "X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=00"

    static let cases: [(method: String, target: String, outcome: Outcome)] = [
        // Control.
        ("POST", "/_emulator/v1/faults", .route("POST /_emulator/v1/faults")),
        ("GET", "/_emulator/v1/faults", .status(405)),
        ("POST", "/_emulator/v1/other", .status(404)),
        // storage-testbench's retry-test API.
        ("POST", "/retry_test", .route("POST /retry_test")),
        ("GET", "/retry_tests", .route("GET /retry_tests")),
        ("GET", "/retry_test/abc", .route("GET /retry_test/{id}")),
        ("DELETE", "/retry_test/abc", .route("DELETE /retry_test/{id}")),
        ("PUT", "/retry_test/abc", .status(405)),
        // Signed URLs, whatever the path.
        ("PUT", "/bkt/o?\(signature)&upload_id=s", .route("DELETE POST PUT /{path...} (uploadID)")),
        ("GET", "/bkt/a/b?\(signature)", .route("GET HEAD /{path...} (noUploadID)")),
        ("HEAD", "/storage/v1/b/bkt/o/x?\(signature)", .route("GET HEAD /{path...} (noUploadID)")),
        ("PUT", "/bkt/o?\(signature)", .route("PUT /{path...} (noUploadID)")),
        ("DELETE", "/bkt/o?\(signature)", .route("DELETE /{path...} (noUploadID)")),
        ("POST", "/v0/b/bkt/o?\(signature)", .route("POST /{path...} (noUploadID)")),
        ("PATCH", "/bkt/o?\(signature)", .status(405)),
        ("GET", "/bkt/o?\(signature)&upload_id=s", .status(405)),
        // XML API multipart uploads, by their query parameters.
        ("POST", "/bkt/a/b?uploads", .route("POST /{bucket}/{name...} (multipartUploads)")),
        ("GET", "/bkt?uploads", .route("GET /{bucket}/? (multipartUploads)")),
        ("PUT", "/bkt/a?partNumber=1&uploadId=u", .route("PUT /{bucket}/{name...} (multipartUploadID)")),
        ("POST", "/bkt/a?uploadId=u", .route("POST /{bucket}/{name...} (multipartUploadID)")),
        ("DELETE", "/bkt/a?uploadId=u", .route("DELETE /{bucket}/{name...} (multipartUploadID)")),
        ("GET", "/bkt/a?uploadId=u", .route("GET /{bucket}/{name...} (multipartUploadID)")),
        ("PATCH", "/bkt/a?uploadId=u", .status(405)),
        ("PUT", "/bkt/a?uploads", .status(405)),
        // Google's authentication servers.
        ("POST", "/token", .route("POST /token (authenticationService)")),
        ("GET", "/token", .status(405)),
        ("GET", "/computeMetadata/v1/instance/service-accounts/default/token", .route("* /computeMetadata/{path...}")),
        ("GET", "/", .route("* /")),
        ("POST", "/v1/projects/-/serviceAccounts/a@b:signBlob", .route("* /v1/projects/{path...}")),
        // Firebase Storage v0.
        ("POST", "/v0/b/bkt/o?upload_id=s", .route("POST /v0/b/{bucket}/o (uploadID)")),
        ("POST", "/v0/b/bkt/o?name=x", .route("POST /v0/b/{bucket}/o")),
        ("GET", "/v0/b/bkt/o", .route("GET /v0/b/{bucket}/o")),
        ("GET", "/v0/b/bkt/o?upload_id=s", .route("GET /v0/b/{bucket}/o")),
        ("PUT", "/v0/b/bkt/o?upload_id=s", .status(405)),
        ("GET", "/v0/b/bkt/o/a%2Fb?alt=media", .route("GET HEAD /v0/b/{bucket}/o/{name...}")),
        ("PATCH", "/v0/b/bkt/o/a", .route("PATCH PUT /v0/b/{bucket}/o/{name...}")),
        ("DELETE", "/v0/b/bkt/o/a/b", .route("DELETE /v0/b/{bucket}/o/{name...}")),
        ("POST", "/v0/b/bkt/o/a", .status(405)),
        ("GET", "/v0/b/bkt", .status(404)),
        // The JSON API.
        (
            "PUT", "/upload/storage/v1/b/bkt/o?upload_id=s",
            .route("DELETE POST PUT /upload/storage/v1/b/{bucket}/o (uploadID)")
        ),
        ("POST", "/upload/storage/v1/b/bkt/o?uploadType=media", .route("POST /upload/storage/v1/b/{bucket}/o")),
        ("GET", "/upload/storage/v1/b/bkt/o", .status(405)),
        ("GET", "/upload/storage/v1/b/bkt/o?upload_id=s", .status(405)),
        (
            "DELETE", "/resumable/upload/storage/v1/b/bkt/o?upload_id=s",
            .route("DELETE POST PUT /resumable/upload/storage/v1/b/{bucket}/o (uploadID)")
        ),
        ("POST", "/resumable/upload/storage/v1/b/bkt/o", .route("POST /resumable/upload/storage/v1/b/{bucket}/o")),
        ("GET", "/storage/v1/b", .route("GET /storage/v1/b/?")),
        ("POST", "/storage/v1/b/", .route("POST /storage/v1/b/?")),
        ("HEAD", "/storage/v1/b/bkt", .route("GET HEAD /storage/v1/b/{bucket}")),
        ("PATCH", "/storage/v1/b/bkt", .route("PATCH /storage/v1/b/{bucket}")),
        ("PUT", "/storage/v1/b/bkt", .route("PUT /storage/v1/b/{bucket}")),
        ("DELETE", "/storage/v1/b/bkt", .route("DELETE /storage/v1/b/{bucket}")),
        ("POST", "/storage/v1/b/bkt", .status(405)),
        ("GET", "/storage/v1/b/bkt/storageLayout", .route("GET /storage/v1/b/{bucket}/storageLayout")),
        ("POST", "/storage/v1/b/bkt/storageLayout", .status(405)),
        ("GET", "/storage/v1/b/bkt/managedFolders", .route("GET /storage/v1/b/{bucket}/managedFolders")),
        ("GET", "/storage/v1/b/bkt/o", .route("GET /storage/v1/b/{bucket}/o")),
        ("POST", "/storage/v1/b/bkt/o", .status(405)),
        ("POST", "/storage/v1/b/bkt/o/a/compose", .route("POST /storage/v1/b/{bucket}/o/{operation...}")),
        ("POST", "/storage/v1/b/bkt/o/a/copyTo/b/c/o/d", .route("POST /storage/v1/b/{bucket}/o/{operation...}")),
        // A name that merely contains an operation's keyword is an object for the other methods.
        ("GET", "/storage/v1/b/bkt/o/a/compose", .route("GET HEAD /storage/v1/b/{bucket}/o/{name...}")),
        ("POST", "/storage/v1/b/bkt/o/a%2Fsrc/other", .status(405)),
        ("GET", "/storage/v1/b/bkt/o/a%2Fb?alt=media", .route("GET HEAD /storage/v1/b/{bucket}/o/{name...}")),
        ("PATCH", "/storage/v1/b/bkt/o/a", .route("PATCH /storage/v1/b/{bucket}/o/{name...}")),
        ("PUT", "/storage/v1/b/bkt/o/a", .route("PUT /storage/v1/b/{bucket}/o/{name...}")),
        ("DELETE", "/storage/v1/b/bkt/o/a", .route("DELETE /storage/v1/b/{bucket}/o/{name...}")),
        ("GET", "/download/storage/v1/b/bkt/o/a/b", .route("GET /download/storage/v1/b/{bucket}/o/{name...}")),
        ("GET", "/storage/v1/b/bkt/other", .status(404)),
        ("GET", "/nothing/here", .status(404)),
        ("GET", "*", .status(404)),
    ]

    static func match(_ method: String, _ target: String) -> RouteTable.Match {
        EmulatorApplication.routes.match(TestRequest(method, target), servesAuthentication: true)
    }

    @Test("each request reaches its route, or the status the router answers")
    func requestsReachTheirRoutes() {
        for (method, target, outcome) in Self.cases {
            let match = Self.match(method, target)
            switch outcome {
            case .route(let expected):
                #expect(match.route?.description == expected, "\(method) \(target)")
            case .status(let status):
                #expect(match.route == nil, "\(method) \(target)")
                #expect((try? match.outcome.get()) == nil)
                if case .failure(let error as HTTPError) = match.outcome {
                    #expect(error.status == status, "\(method) \(target)")
                }
            }
        }
    }

    @Test("every route in the table is reached by a request above, and each is written once")
    func everyRouteIsReachable() {
        let table = EmulatorApplication.routes
        let all = (table.groups + [table.otherwise]).flatMap(\.routes).map(\.description)
        #expect(Set(all).count == all.count, "routes written twice")
        let reached = Set(
            Self.cases.compactMap { testCase -> String? in
                if case .route(let name) = testCase.outcome { return name }
                return nil
            })
        #expect(Set(all) == reached)
    }

    @Test("an unknown path is 404 and a wrong method 405 without Allow, in each protocol's error format")
    func unmatchedRequests() throws {
        let harness = try Harness()
        let unknown = harness.send("GET", "/nothing/here")
        #expect(unknown.status == 404)
        #expect(unknown.errorMessage == "Not Found")
        let wrongMethod = harness.send("POST", "/storage/v1/b/bkt/o")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["Allow"] == nil)
        #expect(
            ((wrongMethod.json["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["reason"] as? String
                == "methodNotAllowed")
        // Firebase's error JSON has no `errors` list.
        let firebase = harness.send("PUT", "/v0/b/bkt/o")
        #expect(firebase.status == 405)
        #expect((firebase.json["error"] as? [String: Any])?["errors"] == nil)
        #expect(harness.send("GET", "/v0/nothing").status == 404)
        // Signed URLs answer in the XML API's format.
        let signed = harness.send("PATCH", "/bkt/o?\(Self.signature)")
        #expect(signed.status == 405)
        #expect(String(decoding: signed.body, as: UTF8.self).contains("<Code>MethodNotAllowed</Code>"))
        // Without the authentication service there is no token endpoint.
        #expect(harness.send("GET", "/token").status == 404)
        #expect(harness.send("GET", "/").status == 404)
    }

    @Test("the route's declared access is checked before its handler runs")
    func accessBeforeHandler() throws {
        let harness = try Harness(token: "secret")
        // Nothing is created or written without the token, on any object route.
        #expect(harness.send("POST", "/storage/v1/b", json: ["name": "new"]).status == 401)
        #expect(harness.store.bucket("new") == nil)
        #expect(harness.send("PUT", "/storage/v1/b/bkt", json: [:]).status == 401)
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/a/compose", json: [:]).status == 401)
        #expect(harness.send("GET", "/storage/v1/b/bkt/storageLayout").status == 401)
        // A wrong method is refused before credentials are asked for.
        #expect(harness.send("POST", "/storage/v1/b/bkt/o").status == 405)
        // The control endpoint takes the configured token.
        let control = harness.send(
            "POST", "/_emulator/v1/faults", headers: ["Authorization": "Bearer secret"],
            json: ["instructions": ["pass"]])
        #expect(control.status == 200)
    }
}
