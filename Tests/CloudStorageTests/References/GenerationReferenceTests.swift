import Foundation
import HTTPTestServers
import Synchronization
import Testing

@testable import CloudStorage

/// References pinned to a generation: identity, URLs, what goes on the wire, what a Firebase
/// endpoint refuses, and a server that answers with another generation than the one asked for.
@Suite("Generation references")
struct GenerationReferenceTests {
    static let storage = Storage(bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:9")!))

    @Test func aPinnedReferenceIsAnotherReferenceAndItsRelativesAreNotPinned() {
        let live = Self.storage.reference(withPath: "a/o")
        let pinned = live.atGeneration(5)
        #expect(pinned.generation == 5 && live.generation == nil)
        #expect(pinned != live && pinned != live.atGeneration(6) && pinned == live.atGeneration(5))
        #expect(Set([live, pinned, live.atGeneration(5)]).count == 2)
        #expect(pinned.atGeneration(nil) == live)
        #expect(Self.storage.reference(objectName: "a/o", generation: 5) == pinned)
        #expect(pinned.child("x").generation == nil && pinned.parent()?.generation == nil)
        #expect(pinned.root().generation == nil)
        #expect(pinned.description == "gs://b/a/o#5" && live.description == "gs://b/a/o")
    }

    @Test(arguments: [
        ("gs://b/a/o#5", "a/o", Int64?.some(5)),
        ("gs://b/notes#draft", "notes#draft", nil),  // not digits: part of the name
        ("gs://b/#12", "#12", nil),  // gcloud's rule needs a name before the #
        ("gs://b/a#1#2", "a#1", 2),
        ("gs://b/a#", "a#", nil),
        ("https://storage.googleapis.com/storage/v1/b/b/o/a%2Fo?generation=5", "a/o", 5),
        ("http://127.0.0.1:9/download/storage/v1/b/b/o/a%2Fo?alt=media&generation=5", "a/o", 5),
        ("https://storage.googleapis.com/b/a/o?generation=5", "a/o", 5),
        ("https://b.storage.googleapis.com/a/o?x-goog-foo=1&generation=5", "a/o", 5),
        ("https://firebasestorage.googleapis.com/v0/b/b/o/a%2Fo?alt=media&generation=5", "a/o", nil),
    ])
    func urlsNameAGeneration(url: String, name: String, generation: Int64?) throws {
        let reference = try Self.storage.reference(forURL: url)
        #expect(reference.fullPath == name && reference.generation == generation)
    }

    @Test func aPinnedReferenceSurvivesTheRoundTripThroughItsDescription() throws {
        for reference in [
            Self.storage.reference(objectName: "a//b#x", generation: 1_712_345_678_901_234),
            Self.storage.reference(objectName: "dir/", generation: Int64.max),
            Self.storage.reference(withPath: "plain.txt"),
        ] {
            #expect(try Self.storage.reference(forURL: reference.description) == reference)
        }
    }

    @Test(arguments: [
        "gs://b/o#0", "gs://b/o#99999999999999999999", "https://storage.googleapis.com/b/o?generation=x",
        "https://storage.googleapis.com/b/o?generation=-1",
        "https://storage.googleapis.com/b/o?generation=1&generation=1",
    ])
    func aMalformedGenerationIsAPathError(url: String) {
        let error = #expect(throws: StorageError.self) { try Self.storage.reference(forURL: url) }
        #expect(error?.code == .pathError)
    }

    @Test func requestsOfAPinnedReferenceNameItsGeneration() {
        let gcs = GCSJSONProtocol(baseURL: URL(string: "http://h")!)
        let conditions = StoragePreconditions(ifMetagenerationMatch: 3)
        #expect(gcs.getMetadata(bucket: "b", name: "o", generation: 5).url.query == "generation=5")
        #expect(
            gcs.updateMetadata(
                bucket: "b", name: "o", generation: 5, StorageMetadataUpdate(), preconditions: conditions
            )
            .url.query == "generation=5&ifMetagenerationMatch=3")
        #expect(gcs.delete(bucket: "b", name: "o", generation: 5).url.query == "generation=5")
        #expect(
            gcs.media(bucket: "b", name: "o", MediaRead(generation: 5, offset: 9)).url.query == "alt=media&generation=5"
        )
        #expect(gcs.getMetadata(bucket: "b", name: "o").url.query == nil)
        let copy = ServerSideCopy(
            sourceBucket: "b", sourceName: "o", sourceGeneration: 5, destinationBucket: "b", destinationName: "p")
        #expect(gcs.rewrite(copy, rewriteToken: nil)?.url.query == "sourceGeneration=5")
        let compose = gcs.compose(
            bucket: "b", name: "c",
            sources: [
                ComposeSource(name: "o", generation: 5), ComposeSource(name: "p"),
            ],
            metadata: StorageMetadata(), preconditions: .none)
        guard case .data(let bytes)? = compose?.body.segments.first else {
            Issue.record("the compose has no JSON body")
            return
        }
        let body = String(decoding: bytes, as: UTF8.self)
        #expect(body.contains(#"{"generation":"5","name":"o"}"#), "\(body)")
        #expect(body.contains(#"{"name":"p"}"#), "\(body)")
    }

    @Test func aSignedURLCarriesTheGenerationForReadsAndRefusesWrites() async throws {
        let signer = try SignedURLEmulatorTests.keySigner()
        let pinned = Self.storage.reference(withPath: "o").atGeneration(5)
        let url = try await pinned.signedURL(expiresIn: .seconds(60), signer: signer)
        #expect(url.query?.contains("generation=5") == true)
        let error = await #expect(throws: StorageError.self) {
            try await pinned.signedURL(method: .put, expiresIn: .seconds(60), signer: signer)
        }
        #expect(error?.code == .invalidArgument)
    }

    // MARK: Firebase, which has no generations

    @Test func everyOperationOnAPinnedReferenceIsRefusedOnFirebaseBeforeAnyRequest() async throws {
        let transport = ScriptedFirebaseTransport()
        let storage = Storage(
            bucket: "b", endpoint: .firebase(ScriptedFirebaseTransport.base), authorization: .none,
            configuration: StorageConfiguration(),
            transport: transport)
        let pinned = storage.reference(withPath: "o").atGeneration(5)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
        let operations: [(String, () async throws -> Void)] = [
            ("getMetadata", { _ = try await pinned.getMetadata() }),
            ("updateMetadata", { _ = try await pinned.updateMetadata(StorageMetadata()) }),
            ("delete", { try await pinned.delete() }),
            ("data", { _ = try await pinned.data(maxSize: 10) }),
            ("writeAsync", { _ = try await pinned.writeAsync(toFile: file) }),
            ("dataStream", { for try await _ in pinned.dataStream() {} }),
            ("downloadURL", { _ = try await pinned.downloadURL() }),
        ]
        for (name, operation) in operations {
            let error = await #expect(throws: StorageError.self, "\(name)") { try await operation() }
            #expect(error?.code == .invalidArgument, "\(name)")
            #expect(error?.message.contains("Firebase Storage has no object generations") == true, "\(name)")
        }
        #expect(transport.exchanges.isEmpty, "nothing was sent")
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    // MARK: A server that answers with another generation

    /// Answers every metadata read with generation 7, and every media read with the bytes of
    /// generation 7, whatever was asked.
    static func otherGenerationServer() throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { connection, _ in
            while let (head, _) = connection.readRequest() {
                if head.target.contains("alt=media") {
                    _ = connection.write(
                        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nx-goog-generation: 7\r\n\r\nWRONG")
                } else {
                    let json = #"{"name":"o","bucket":"b","generation":"7","metageneration":"1","size":"5"}"#
                    _ = connection.write(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n"
                            + json)
                }
            }
        }
    }

    @Test func anAnswerOfAnotherGenerationIsAProtocolViolationNeverTheBytes() async throws {
        let server = try Self.otherGenerationServer()
        defer { server.stop() }
        let storage = Storage(bucket: "b", endpoint: .gcs(server.baseURL))
        let pinned = storage.reference(withPath: "o").atGeneration(5)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
        let received = Mutex<Data>(Data())
        let operations: [(String, () async throws -> Void)] = [
            ("getMetadata", { _ = try await pinned.getMetadata() }),
            ("data", { _ = try await pinned.data(maxSize: 10) }),
            ("writeAsync", { _ = try await pinned.writeAsync(toFile: file) }),
            ("dataStream", { for try await chunk in pinned.dataStream() { received.withLock { $0 += chunk } } }),
        ]
        for (name, operation) in operations {
            let error = await #expect(throws: StorageError.self, "\(name)") { try await operation() }
            #expect(error?.code == .protocolViolation, "\(name): \(String(describing: error))")
        }
        #expect(received.withLock { $0.isEmpty }, "no byte of the wrong generation was handed on")
        #expect(!FileManager.default.fileExists(atPath: file.path))
        // Unpinned, the same answers are simply the live object.
        #expect(try await storage.reference(withPath: "o").data(maxSize: 10) == Data("WRONG".utf8))
    }
}
