import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Object names with empty segments, and leading or trailing slashes (`a//b`, `dir/`, `/lead`),
/// are legal and name other objects than their normalized spellings: references made exactly,
/// from URLs, and from the server's listings and metadata keep them byte for byte.
@Suite("Exact object names", .timeLimit(.minutes(10)))
struct ExactNameTests {
    let storage = Storage(bucket: "my-bucket")

    // MARK: References

    @Test(arguments: [
        ("a//b", "b", "a/"), ("dir/", "", "dir"), ("/lead", "lead", ""), ("pfx//abs.txt", "abs.txt", "pfx/"),
        ("//", "", "/"),
    ])
    func anExactNameIsKeptWithItsNameAndParent(name: String, last: String, parent: String) throws {
        let ref = storage.reference(objectName: name)
        #expect(ref.fullPath == name)
        #expect(ref.name == last)
        #expect(ref.parent() == storage.reference(objectName: parent))
        #expect(ref.parent()?.fullPath == parent)
        #expect(ref != storage.reference(withPath: name), "the normalized spelling is another object")
        #expect(try ref.path.validatedObjectName() == name)
        #expect(throws: Never.self) { try StorageReference.validateObjectName(name) }
        // The description reads back to the same reference.
        #expect("\(ref)" == "gs://my-bucket/\(name)")
        #expect(try storage.reference(forURL: "\(ref)") == ref)
    }

    @Test func everyParentChainGoesUpToTheRootAndStops() {
        // `/lead` is listed under the prefix `/`, whose reference is the exact empty path: not the root.
        let lead = storage.reference(objectName: "/lead")
        let slashFolder = lead.parent()
        #expect(slashFolder == storage.reference(objectName: ""))
        #expect(slashFolder != storage.reference())
        #expect(slashFolder?.path.listingPrefix == "/")
        #expect(slashFolder?.parent() == storage.reference())
        #expect(storage.reference().parent() == nil)
        #expect(storage.reference().path.listingPrefix == "")
        // A child of an exact folder stays below it.
        #expect(storage.reference(objectName: "a/").child("b").fullPath == "a//b")
        #expect(slashFolder?.child("lead") == lead)
    }

    @Test func theEmptyNameNamesNoObject() {
        let error = #expect(throws: StorageError.self) { try StorageReference.validateObjectName("") }
        #expect(error?.code == .pathError)
    }

    @Test func equalityAndHashingCompareBytesAsCloudStorageDoes() {
        // "café" precomposed (NFC) and with a combining accent (NFD): equal Strings, two objects.
        let composed = storage.reference(objectName: "caf\u{E9}")
        let decomposed = storage.reference(objectName: "cafe\u{301}")
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(Set([composed, storage.reference(withPath: "caf\u{E9}")]).count == 1)
    }

    @Test func aMetadataNameIsTheTextAfterTheLastSlashNeverANeighboursName() throws {
        for (name, last) in [("dir/", ""), ("a//b", "b"), ("/lead", "lead")] {
            let json = #"{"name": "\#(name)", "bucket": "my-bucket", "size": "1", "generation": "1"}"#
            let metadata = try StorageMetadata(objectResource: Data(json.utf8))
            #expect(metadata.path == name)
            #expect(metadata.name == last)
        }
    }

    // MARK: Against the emulator

    static func withEmulator(directory: Bool, _ body: (StorageEmulator, Storage) async throws -> Void) async throws {
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = StorageEmulator.Configuration()
        if directory { configuration.backing = .directory(root) }
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        for (name, bytes) in TestSupport.exactNames {
            _ = try await storage.reference(objectName: name).putDataAsync(Data(bytes.utf8))
        }
        try await body(emulator, storage)
    }

    @Test(arguments: [false, true])
    func eachNameIsStoredReadAndListedAsItself(directory: Bool) async throws {
        try await Self.withEmulator(directory: directory) { _, storage in
            for (name, bytes) in TestSupport.exactNames {
                let ref = storage.reference(objectName: name)
                #expect(try await ref.data(maxSize: 100) == Data(bytes.utf8), "\(name)")
                let metadata = try await ref.getMetadata()
                #expect(metadata.path == name)
                #expect(metadata.name == ref.name)
            }
            // Every prefix is walked as itself: the walk ends, and finds each object once.
            var found: [String] = []
            var walked: [String] = []
            var pending = [storage.reference()]
            while let folder = pending.popLast() {
                walked.append(folder.path.listingPrefix)
                let page = try await folder.listAll()
                found += page.items.map(\.fullPath)
                pending += page.prefixes
            }
            #expect(found.sorted() == TestSupport.exactNames.map(\.name).sorted())
            #expect(walked.sorted() == ["", "/", "a/", "a//", "dir/", "pfx/", "pfx//"])
            // The prefix `pfx//` is the reference `pfx/`, whose listing holds only `pfx//abs.txt`.
            let pfx = try await storage.reference(withPath: "pfx").listAll()
            #expect(pfx.prefixes == [storage.reference(objectName: "pfx/")])
            #expect(pfx.items == [storage.reference(objectName: "pfx/abs.txt")])
            let doubled = try await storage.reference(objectName: "pfx/").listAll()
            #expect(doubled.items == [storage.reference(objectName: "pfx//abs.txt")])
            #expect(doubled.prefixes.isEmpty)
        }
    }

    @Test func deletingAnExactNameLeavesItsNeighbour() async throws {
        try await Self.withEmulator(directory: false) { _, storage in
            try await storage.reference(objectName: "pfx//abs.txt").delete()
            try await storage.reference(objectName: "dir/").delete()
            #expect(try await storage.reference(withPath: "pfx/abs.txt").data(maxSize: 100) == Data("single".utf8))
            #expect(try await storage.reference(withPath: "dir").data(maxSize: 100) == Data("not dir/".utf8))
        }
    }

    // MARK: A server that lists what was not asked for

    /// Answers every request with the listing `json`.
    @Test(arguments: [
        // The prefix asked for again: a walker would list it for ever.
        (#"{"prefixes": ["x/"]}"#, "the prefix \"x/\""),
        // Above, beside, or deeper than one level, or without its slash.
        (#"{"prefixes": ["y/"]}"#, "the prefix \"y/\""), (#"{"prefixes": ["x/a/b/"]}"#, "the prefix \"x/a/b/\""),
        (#"{"prefixes": ["x/a"]}"#, "the prefix \"x/a\""),
        // An object outside the prefix: rm -r would delete it.
        (#"{"items": [{"name": "other"}]}"#, "the object \"other\""),
    ])
    func aListingOfNamesNotBelowThePrefixIsAProtocolViolation(json: String, named: String) async throws {
        let server = try TestSupport.listingServer(json)
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "x").list(maxResults: 10)
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    @Test func aPrefixLongerThanAnyNameIsAProtocolViolation() async throws {
        let long = String(repeating: "n", count: 1024) + "/"
        let server = try TestSupport.listingServer(#"{"prefixes": ["\#(long)"]}"#)
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference().list(maxResults: 10)
        }
        #expect(error?.code == .protocolViolation)
    }
}
