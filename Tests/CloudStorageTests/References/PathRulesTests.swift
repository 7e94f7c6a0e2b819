import Testing

@testable import CloudStorage

/// The object-name rules checked by `StoragePath.validatedObjectName()`.
@Suite("Path rules")
struct PathRulesTests {
    private func expectPathError(_ raw: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let path = StoragePath(normalizing: raw)
        let error = #expect(throws: StorageError.self, sourceLocation: sourceLocation) {
            try path.validatedObjectName()
        }
        #expect(error?.code == .pathError, sourceLocation: sourceLocation)
    }

    @Test func oneByteIsValid() throws {
        #expect(try StoragePath(normalizing: "a").validatedObjectName() == "a")
    }

    @Test func returnsTheNormalizedName() throws {
        #expect(try StoragePath(normalizing: "/images//space.jpg/").validatedObjectName() == "images/space.jpg")
    }

    @Test func exactly1024BytesIsValid() throws {
        let name = String(repeating: "a", count: 1024)
        #expect(try StoragePath(normalizing: name).validatedObjectName() == name)
    }

    @Test func bytes1025IsAPathErrorNamingTheCount() throws {
        let path = StoragePath(normalizing: String(repeating: "a", count: 1025))
        let error = try #require(throws: StorageError.self) { try path.validatedObjectName() }
        #expect(error.code == .pathError)
        #expect(error.message.contains("1025"))
    }

    @Test func multibyteCharactersCountInUTF8Bytes() throws {
        // "é" (U+00E9) is 2 bytes: 512 of them are 1024 bytes, 513 are 1026.
        let ok = String(repeating: "é", count: 512)
        #expect(ok.count == 512)
        #expect(try StoragePath(normalizing: ok).validatedObjectName() == ok)
        expectPathError(String(repeating: "é", count: 513))

        // An emoji is 4 bytes: 256 are 1024 bytes, 256 plus one ASCII byte is 1025.
        let emoji = String(repeating: "🚀", count: 256)
        #expect(try StoragePath(normalizing: emoji).validatedObjectName() == emoji)
        expectPathError(emoji + "a")
    }

    @Test func slashesCountTowardTheLimit() throws {
        // 512 segments of one byte joined by 511 slashes: 1023 bytes.
        let ok = Array(repeating: "a", count: 512).joined(separator: "/")
        #expect(ok.utf8.count == 1023)
        #expect(try StoragePath(normalizing: ok).validatedObjectName() == ok)
        expectPathError(ok + "/bb")
    }

    @Test(arguments: ["a\nb", "a\rb", "a\r\nb", "line\n", "\rstart", "dir/na\nme"])
    func carriageReturnAndLineFeedAreRejected(raw: String) {
        expectPathError(raw)
    }

    @Test func rootIsInvalidArgument() throws {
        for raw in ["", "/", "///"] {
            let error = try #require(throws: StorageError.self) {
                try StoragePath(normalizing: raw).validatedObjectName()
            }
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("root"))
        }
    }

    @Test(arguments: [".", "..", "/./", "/../"])
    func dotNamesAreRejected(raw: String) {
        expectPathError(raw)
    }

    @Test(arguments: ["./a", "../a", "a/..", "...", ".hidden", "a/./b"])
    func namesMerelyContainingDotsAreAccepted(raw: String) throws {
        #expect(try StoragePath(normalizing: raw).validatedObjectName() == StoragePath(normalizing: raw).string)
    }

    @Test(arguments: [
        ".well-known/acme-challenge/token",
        "/.well-known/acme-challenge/x/y",
        ".well-known/acme-challenge/\u{301}x",
    ])
    func acmeChallengePrefixIsRejected(raw: String) {
        expectPathError(raw)
    }

    @Test(arguments: [".well-known/acme-challenge", ".well-known/other", "x/.well-known/acme-challenge/y"])
    func nearMissesOfTheAcmePrefixAreAccepted(raw: String) throws {
        #expect(throws: Never.self) { try StoragePath(normalizing: raw).validatedObjectName() }
    }

    @Test(arguments: ["a#b", "[x]", "star*", "what?", "#[]*?", "images/photo #1 [draft]*?.jpg"])
    func discouragedCharactersAreAccepted(raw: String) throws {
        #expect(try StoragePath(normalizing: raw).validatedObjectName() == raw)
    }

    @Test func referenceConstructionNeverValidates() {
        // Building references with bad paths works; only operations fail.
        let storage = Storage(bucket: "my-bucket")
        let long = storage.reference(withPath: String(repeating: "x", count: 5000))
        #expect(long.fullPath.utf8.count == 5000)
        #expect(storage.reference(withPath: "a\nb").name == "a\nb")
    }
}
