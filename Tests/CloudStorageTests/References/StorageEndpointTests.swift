import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Endpoints choose the wire protocol and the credential scheme; emulator
/// endpoints come from the environment or the emulator factories.
@Suite("Storage endpoints")
struct StorageEndpointTests {
    // MARK: Environment

    @Test(
        arguments: [
            (
                ["STORAGE_EMULATOR_HOST": "http://127.0.0.1:4443"],
                StorageEndpoint.gcs(URL(string: "http://127.0.0.1:4443")!)
            ),
            (["STORAGE_EMULATOR_HOST": "127.0.0.1:4443"], .gcs(URL(string: "http://127.0.0.1:4443")!)),
            (["STORAGE_EMULATOR_HOST": "localhost:4443/"], .gcs(URL(string: "http://localhost:4443")!)),
            (["STORAGE_EMULATOR_HOST": "https://gcs.local"], .gcs(URL(string: "https://gcs.local")!)),
            (["STORAGE_EMULATOR_HOST": " HTTP://fake-gcs:4443 "], .gcs(URL(string: "http://fake-gcs:4443")!)),
            (["STORAGE_EMULATOR_HOST": "[::1]:4443"], .gcs(URL(string: "http://[::1]:4443")!)),
            (["FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1:9199"], .firebase(URL(string: "http://127.0.0.1:9199")!)),
            (
                ["FIREBASE_STORAGE_EMULATOR_HOST": "http://localhost:9199"],
                .firebase(URL(string: "http://localhost:9199")!)
            ),
            (
                ["FIREBASE_STORAGE_EMULATOR_HOST": "firebase:9199", "STORAGE_EMULATOR_HOST": "http://127.0.0.1:4443"],
                .firebase(URL(string: "http://firebase:9199")!)
            ),
            (
                ["FIREBASE_STORAGE_EMULATOR_HOST": "", "STORAGE_EMULATOR_HOST": "127.0.0.1:4443"],
                .gcs(URL(string: "http://127.0.0.1:4443")!)
            ),
        ] as [([String: String], StorageEndpoint)])
    func emulatorVariablesNameEndpoints(environment: [String: String], expected: StorageEndpoint) throws {
        let endpoint = try StorageEndpoint.fromEnvironment(environment)
        #expect(endpoint == expected)
        #expect(endpoint?.wireProtocol == expected.wireProtocol)
    }

    @Test(arguments: [
        [:], ["STORAGE_EMULATOR_HOST": ""], ["FIREBASE_STORAGE_EMULATOR_HOST": "  "], ["OTHER": "127.0.0.1:1"],
    ])
    func withoutEmulatorVariablesThereIsNoEndpoint(environment: [String: String]) throws {
        #expect(try StorageEndpoint.fromEnvironment(environment) == nil)
    }

    @Test(arguments: [
        ("STORAGE_EMULATOR_HOST", "ftp://127.0.0.1:21"),
        ("STORAGE_EMULATOR_HOST", "http://"),
        ("STORAGE_EMULATOR_HOST", "127.0.0.1:"),
        ("STORAGE_EMULATOR_HOST", "127.0.0.1:0"),
        ("STORAGE_EMULATOR_HOST", "127.0.0.1:65536"),
        ("STORAGE_EMULATOR_HOST", "127.0.0.1:44a3"),
        ("STORAGE_EMULATOR_HOST", "::1:4443"),
        ("STORAGE_EMULATOR_HOST", "[::1"),
        ("STORAGE_EMULATOR_HOST", "[::1]x"),
        ("STORAGE_EMULATOR_HOST", "http://127.0.0.1:4443/storage/v1"),
        ("STORAGE_EMULATOR_HOST", "http://127.0.0.1:4443?x=1"),
        ("STORAGE_EMULATOR_HOST", "http://user:secret@127.0.0.1:4443"),
        ("STORAGE_EMULATOR_HOST", "my host:4443"),
        ("STORAGE_EMULATOR_HOST", "-bad:4443"),
        ("FIREBASE_STORAGE_EMULATOR_HOST", "127.0.0.1"),
        ("FIREBASE_STORAGE_EMULATOR_HOST", "localhost:port"),
        ("FIREBASE_STORAGE_EMULATOR_HOST", "gs://127.0.0.1:9199"),
    ])
    func malformedVariablesAreInvalidArguments(variable: String, value: String) throws {
        let error = #expect(throws: StorageError.self) {
            try StorageEndpoint.fromEnvironment([variable: value])
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(variable) == true, "the message names the variable")
        #expect(error?.message.contains("secret") == false, "user information is never repeated")
    }

    @Test func aMalformedFirebaseVariableIsNotSilentlyReplacedByTheGCSOne() throws {
        #expect(throws: StorageError.self) {
            try StorageEndpoint.fromEnvironment([
                "FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1", "STORAGE_EMULATOR_HOST": "127.0.0.1:4443",
            ])
        }
    }

    // MARK: Factories

    @Test func theFirebaseEmulatorFactoryDefaultsToTheLocalEmulatorAsItsOwner() async throws {
        let storage = try Storage.firebaseEmulator(bucket: "demo.appspot.com")
        #expect(storage.bucket == "demo.appspot.com")
        #expect(storage.endpoint == .firebase(URL(string: "http://127.0.0.1:9199")!))
        #expect(try await storage.authorization.token(forceRefresh: false) == "owner")
        #expect(!storage.authorization.isSecret)
        let other = try Storage.firebaseEmulator(bucket: "b", host: "::1", port: 9000, authorization: .none)
        #expect(other.endpoint.baseURL.absoluteString == "http://[::1]:9000")
        #expect(try await other.authorization.token(forceRefresh: false) == nil)
    }

    @Test(arguments: [("", 9199), ("bad host", 9199), ("127.0.0.1", 0), ("127.0.0.1", 70_000), ("a/b", 1)])
    func theFirebaseEmulatorFactoryRefusesBadAddresses(host: String, port: Int) {
        let error = #expect(throws: StorageError.self) {
            try Storage.firebaseEmulator(bucket: "b", host: host, port: port)
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test func theGCSEmulatorFactorySpeaksTheJSONAPIWithoutCredentials() async throws {
        let url = URL(string: "http://127.0.0.1:4443")!
        let storage = Storage.gcsEmulator(bucket: "b", baseURL: url)
        #expect(storage.endpoint == .gcs(url))
        #expect(storage.endpoint.wireProtocol == .gcsJSON)
        #expect(try await storage.authorization.token(forceRefresh: false) == nil)
    }

    @Test func productionEndpointsAndTheirProtocols() {
        #expect(StorageEndpoint.firebaseStorage.baseURL.absoluteString == "https://firebasestorage.googleapis.com")
        #expect(Storage(bucket: "b", endpoint: .firebaseStorage).uploadProtocol is FirebaseV0Protocol)
        #expect(Storage(bucket: "b").uploadProtocol is GCSJSONProtocol)
        #expect(StorageEndpoint.firebaseStorage != .gcs(StorageEndpoint.firebaseStorage.baseURL))
    }

    // MARK: Credentials

    @Test(arguments: [
        (StorageEndpoint.gcs(ScriptedGCSTransport.base), StorageAuthorization.bearerToken("t"), "Bearer t"),
        (.firebase(ScriptedFirebaseTransport.base), .bearerToken("t"), "Firebase t"),
        (.gcs(ScriptedGCSTransport.base), .emulatorOwner, "Bearer owner"),
        (.firebase(ScriptedFirebaseTransport.base), .emulatorOwner, "Firebase owner"),
    ])
    func theCredentialSchemeIsTheProtocols(
        endpoint: StorageEndpoint, authorization: StorageAuthorization, header: String
    ) async throws {
        let (storage, exchanges) = Self.storage(endpoint, authorization)
        _ = try await storage.reference(withPath: "o").putDataAsync(TestSupport.payload(size: 300_000, seed: 1))
        let headers = exchanges()
        #expect(!headers.isEmpty)
        #expect(headers.allSatisfy { $0 == header })
    }

    @Test func theEmulatorOwnerMayTravelOverPlainHTTPToAnotherHostButTokensMayNot() async throws {
        let remote = URL(string: "http://firebase-emulator:9199")!
        let (owner, exchanges) = Self.storage(.firebase(remote), .emulatorOwner)
        _ = try await owner.reference(withPath: "o").putDataAsync(Data(count: 10))
        #expect(exchanges() == ["Firebase owner"])

        let (token, _) = Self.storage(.firebase(remote), .bearerToken("secret"))
        let error = await #expect(throws: StorageError.self) {
            try await token.reference(withPath: "o").putDataAsync(Data(count: 10))
        }
        #expect(error?.code == .invalidArgument)
    }

    /// A storage on `endpoint` over the matching scripted transport, and a
    /// reader of the `Authorization` headers it has seen.
    static func storage(
        _ endpoint: StorageEndpoint, _ authorization: StorageAuthorization
    ) -> (Storage, () -> [String?]) {
        var configuration = StorageConfiguration()
        configuration.uploads.multipartThreshold = 256 * 1024
        let transport: any HTTPTransport
        let headers: () -> [String?]
        switch endpoint.wireProtocol {
        case .gcsJSON:
            let gcs = ScriptedGCSTransport()
            transport = gcs
            headers = { gcs.exchanges.map { $0.headers["Authorization"] } }
        case .firebaseV0:
            let firebase = ScriptedFirebaseTransport()
            transport = firebase
            headers = { firebase.exchanges.map { $0.headers["Authorization"] } }
        }
        let storage = Storage(
            bucket: "b", endpoint: endpoint, authorization: authorization, configuration: configuration,
            transport: transport)
        return (storage, headers)
    }

    // MARK: References

    @Test func referencesFromURLsDoNotDependOnTheEndpoint() throws {
        let firebase = try Storage.firebaseEmulator(bucket: "my-bucket")
        let gcs = Storage(bucket: "my-bucket")
        for url in [
            "gs://my-bucket/images/stars.jpg",
            "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars.jpg?alt=media&token=abc",
            "http://127.0.0.1:9199/v0/b/my-bucket/o/images%2Fstars.jpg",
        ] {
            #expect(try firebase.reference(forURL: url).fullPath == "images/stars.jpg")
            #expect(try gcs.reference(forURL: url).fullPath == "images/stars.jpg")
        }
        let error = #expect(throws: StorageError.self) {
            try firebase.reference(forURL: "gs://other-bucket/a")
        }
        #expect(error?.code == .bucketMismatch)
    }

    // MARK: Metadata

    @Test func firebaseMetadataDecodesInBothCRC32CForms() throws {
        let emulator = ScriptedFirebaseTransport.metadata(
            name: "a/b.txt", Data("hello".utf8), generation: 12, crc: CRC32C.checksum(Data("hello".utf8)))
        let fromEmulator = try StorageMetadata(objectResource: emulator)
        #expect(fromEmulator.path == "a/b.txt")
        #expect(fromEmulator.name == "b.txt")
        #expect(fromEmulator.size == 5)
        #expect(fromEmulator.generation == 12)
        #expect(fromEmulator.metageneration == 1)
        #expect(fromEmulator.contentDisposition == "inline")
        #expect(fromEmulator.timeCreated != nil)
        #expect(fromEmulator.downloadTokens == ["token-1", "token-2"])
        #expect(fromEmulator.crc32cValue == CRC32C.checksum(Data("hello".utf8)))

        let production = Data(
            #"{"name":"a","bucket":"b","size":"5","crc32c":"\#(CRC32CEncoding.base64(CRC32C.checksum(Data("hello".utf8))))","downloadTokens":"only"}"#
                .utf8)
        let fromProduction = try StorageMetadata(objectResource: production)
        #expect(fromProduction.crc32cValue == fromEmulator.crc32cValue)
        #expect(fromProduction.downloadTokens == ["only"])
        #expect(try StorageMetadata(objectResource: Data(#"{"name":"a"}"#.utf8)).downloadTokens == [])
    }
}
