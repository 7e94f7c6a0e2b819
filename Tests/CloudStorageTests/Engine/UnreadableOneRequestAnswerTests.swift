import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// A one-request (multipart) upload answered `200` with a body cut short: the
/// object may or may not be stored. The engine reads the object's metadata and
/// keeps it only when its size and CRC32C are those of the bytes sent; otherwise
/// it sends again. It never deletes anything: an object that differs may be
/// another writer's.
@Suite("Unreadable one-request answers", .timeLimit(.minutes(10)))
struct UnreadableOneRequestAnswerTests {
    static let size = 100_000

    static func storage(_ transport: ScriptedFirebaseTransport) -> Storage {
        FirebaseV0ProtocolTests.storage(transport) { $0.uploads.multipartThreshold = 8 * 1024 * 1024 }
    }

    static func isMultipart(_ request: HTTPRequest) -> Bool {
        request.headers["X-Goog-Upload-Protocol"] == "multipart"
    }

    @Test func aStoredObjectThatMatchesIsKeptWithoutSendingAgain() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.unreadableSuccess(stores: true), when: Self.isMultipart)
        let payload = TestSupport.payload(size: Self.size, seed: 11)
        let stored = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(stored.size == Int64(Self.size))
        #expect(transport.object("o") == payload)
        #expect(transport.exchanges.map(\.method) == ["POST", "GET"])
    }

    @Test func anObjectThatIsMissingIsSentAgain() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.unreadableSuccess(stores: false), when: Self.isMultipart)
        let payload = TestSupport.payload(size: Self.size, seed: 12)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.object("o") == payload)
        #expect(transport.exchanges.map(\.method) == ["POST", "GET", "POST"])
    }

    @Test func anObjectThatDiffersIsLeftAloneAndTheBytesSentAgain() async throws {
        let transport = ScriptedFirebaseTransport()
        let storage = Self.storage(transport)
        let older = TestSupport.payload(size: Self.size, seed: 13)
        _ = try await storage.reference(withPath: "o").putDataAsync(older)
        transport.inject(.unreadableSuccess(stores: false), when: Self.isMultipart)
        let payload = TestSupport.payload(size: Self.size, seed: 14)
        _ = try await storage.reference(withPath: "o").putDataAsync(payload)
        #expect(transport.object("o") == payload)
        #expect(transport.exchanges.map(\.method) == ["POST", "POST", "GET", "POST"], "nothing deleted")
    }
}
