import Foundation
import HTTPTestServers
import NativeTLS
import StorageTestSupport
import Testing

@testable import CloudStorage

@Suite("Credential files and service-account JWTs")
struct CredentialFileTests {
    static func serviceAccountKey(_ data: Data) throws -> ServiceAccountKey {
        guard case .serviceAccount(let key) = try CredentialFile.credential(in: data, source: "The test key") else {
            throw ScriptFailure("not a service account")
        }
        return key
    }

    @Test("a service account key file is read: email, key id, token URI, project")
    func serviceAccountFile() throws {
        let key = try Self.serviceAccountKey(try Data(contentsOf: TestCredentials.url("service-account.json")))
        #expect(key.clientEmail == TestKeyFiles.email)
        #expect(key.privateKeyID == "0123456789abcdef0123456789abcdef01234567")
        #expect(key.tokenURI.absoluteString == "https://oauth2.googleapis.com/token")
        #expect(key.projectID == "cloudstorage-test")
        #expect(key.quotaProject == nil)
        let authorization = try StorageAuthorization.serviceAccount(
            keyFile: TestCredentials.url("service-account.json"))
        #expect(authorization.oauthCredential?.scopes == ["https://www.googleapis.com/auth/devstorage.read_write"])
        let readOnly = try StorageAuthorization.serviceAccount(
            keyJSON: try TestKeyFiles.serviceAccountJSON(), scopes: ["a", "b"])
        #expect(readOnly.oauthCredential?.scopes == ["a", "b"])
    }

    @Test("an authorized_user file is read, with Google's token endpoint when it names none")
    func authorizedUserFile() throws {
        let data = try TestKeyFiles.authorizedUserJSON()
        guard case .authorizedUser(let user) = try CredentialFile.credential(in: data, source: "x") else {
            Issue.record("not an authorized user")
            return
        }
        #expect(user.clientID == "test-client.apps.googleusercontent.com")
        #expect(user.refreshToken == "TEST-ONLY-refresh-token")
        #expect(user.quotaProject == "cloudstorage-test-quota")
        #expect(user.tokenURI.absoluteString == "https://oauth2.googleapis.com/token")
        _ = try StorageAuthorization.authorizedUser(file: TestCredentials.url("authorized-user.json"))
    }

    /// Each broken key file and the phrase its error must contain.
    static var brokenKeys: [(String, String, (inout [String: Any]) -> Void)] {
        [
            ("no client_email", "has no client_email", { $0["client_email"] = nil }),
            ("empty client_email", "has no client_email", { $0["client_email"] = "" }),
            ("no private_key", "has no private_key", { $0["private_key"] = nil }),
            ("no token_uri", "has no token_uri", { $0["token_uri"] = nil }),
            ("a garbage key", "private_key that cannot be used", { $0["private_key"] = "not a key" }),
            (
                "a 1024-bit key", "private_key that cannot be used",
                { $0["private_key"] = try? TestCredentials.text("rsa-1024.key") }
            ),
            (
                "an encrypted key", "private_key that cannot be used",
                { $0["private_key"] = try? TestCredentials.text("encrypted.key") }
            ),
            ("a token_uri that is no URL", "not an http(s) URL", { $0["token_uri"] = "ftp://example.com/token" }),
            (
                "a token_uri on plain HTTP to another machine", "plain HTTP to another machine",
                { $0["token_uri"] = "http://oauth2.example.com/token" }
            ),
            ("no type", "has no \"type\" field", { $0["type"] = nil }),
            ("another type", "not \"service_account\"", { $0["type"] = "authorized_user" }),
        ]
    }

    @Test("a malformed key fails at construction with invalidArgument naming the problem, never the key")
    func malformedKeys() throws {
        let pem = try TestCredentials.text("service-account.key")
        let keyBody = pem.split(separator: "\n")[1]
        for (label, phrase, edit) in Self.brokenKeys {
            let data = try TestKeyFiles.serviceAccountJSON(editing: edit)
            let error = try #require(throws: StorageError.self, "\(label)") {
                try StorageAuthorization.serviceAccount(keyJSON: data)
            }
            #expect(error.code == .invalidArgument, "\(label)")
            #expect(error.message.contains(phrase), "\(label): \(error.message)")
            #expect(error.message.hasPrefix("The service account key JSON"), "\(label): \(error.message)")
            #expect(!String(describing: error).contains(keyBody), "\(label)")
        }
        let notJSON = try #require(throws: StorageError.self) {
            try StorageAuthorization.serviceAccount(keyJSON: Data("{not json".utf8))
        }
        #expect(notJSON.code == .invalidArgument)
        #expect(notJSON.message.contains("is not a JSON object"))
        let missing = URL(fileURLWithPath: "/nonexistent/key.json")
        let absent = try #require(throws: StorageError.self) {
            try StorageAuthorization.serviceAccount(keyFile: missing)
        }
        #expect(absent.code == .invalidArgument)
        #expect(absent.message == "The credentials file /nonexistent/key.json does not exist.")
    }

    @Test("a loopback token_uri may be plain HTTP (emulators, tests)")
    func loopbackTokenURI() throws {
        _ = try StorageAuthorization.serviceAccount(
            keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: "http://127.0.0.1:9/token"))
        _ = try StorageAuthorization.serviceAccount(
            keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: "http://localhost:9/token"))
    }

    @Test(
        "impersonated and external-account files say they are not supported yet",
        arguments: ["impersonated_service_account", "external_account", "external_account_authorized_user"])
    func unsupportedTypes(type: String) throws {
        let data = Data(#"{"type": "\#(type)", "audience": "x"}"#.utf8)
        let error = try #require(throws: StorageError.self) { try CredentialFile.credential(in: data, source: "F") }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("\"\(type)\" credentials, which CloudStorage does not support yet"))
    }

    @Test("authorized_user files missing a field are refused")
    func malformedAuthorizedUser() throws {
        for field in ["client_id", "client_secret", "refresh_token"] {
            let data = try TestKeyFiles.authorizedUserJSON { $0[field] = nil }
            let error = try #require(throws: StorageError.self) { try StorageAuthorization.authorizedUser(json: data) }
            #expect(error.code == .invalidArgument)
            #expect(error.message == "The authorized_user credentials JSON has no \(field).")
        }
    }

    @Test("the JWT: RS256 header with kid, claims for the scopes and the token URI, signed by the key")
    func jwtShape() throws {
        let key = try Self.serviceAccountKey(try TestKeyFiles.serviceAccountJSON(tokenURI: "https://token.example/t"))
        let issued = Date(timeIntervalSince1970: 1_700_000_000.75)
        let jwt = try key.assertion(scopes: ["scope-a", "scope-b"], issuedAt: issued)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
        let header = try TestKeyFiles.jwtPart(jwt, 0)
        #expect(
            header as? [String: String]
                == ["alg": "RS256", "typ": "JWT", "kid": "0123456789abcdef0123456789abcdef01234567"])
        let claims = try TestKeyFiles.jwtPart(jwt, 1)
        #expect(claims["iss"] as? String == TestKeyFiles.email)
        #expect(claims["scope"] as? String == "scope-a scope-b")
        #expect(claims["aud"] as? String == "https://token.example/t")
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_700_000_000)
        #expect((claims["exp"] as? NSNumber)?.int64Value == 1_700_003_600)
        #expect(claims.count == 5)

        let publicKey = try RSAKey(publicKeyPEM: Array(try TestCredentials.text("service-account.pub").utf8))
        let signature = try #require(Base64URL.decode(parts[2]))
        let signed = Array("\(parts[0]).\(parts[1])".utf8)
        #expect(publicKey.isValidSHA256Signature(signature, of: signed))
        #expect(!publicKey.isValidSHA256Signature(signature, of: signed + [0x20]))
    }

    @Test("a key without private_key_id sends no kid")
    func noKeyID() throws {
        let key = try Self.serviceAccountKey(try TestKeyFiles.serviceAccountJSON { $0["private_key_id"] = nil })
        let jwt = try key.assertion(scopes: ["s"], issuedAt: Date())
        let header = try #require(Base64URL.decode(jwt.split(separator: ".")[0]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"RS256","typ":"JWT"}"#)
    }

    @Test("form encoding percent-encodes everything but unreserved characters")
    func formEncoding() {
        #expect(
            TokenEndpoint.formEncoded([("grant_type", "urn:ietf:params"), ("a b", "x+y/z=~._-")])
                == "grant_type=urn%3Aietf%3Aparams&a%20b=x%2By%2Fz%3D~._-")
    }
}
