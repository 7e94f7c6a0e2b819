import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// The object-resource fields beyond the headers — storage class, custom time, retention — go out
/// with uploads and updates and come back from fake-gcs-server, which keeps them; Firebase
/// endpoints refuse them before sending anything.
@Suite("Object resource fields", .timeLimit(.minutes(10)))
struct ObjectResourceFieldsTests {
    @Test(arguments: [false, true])
    func uploadsAndUpdatesCarryTheGCSOnlyFields(resumable: Bool) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "fields", route: .nativeHTTP) {
            if resumable { $0.uploads.multipartThreshold = 0 }
        }
        var metadata = StorageMetadata()
        metadata.storageClass = "NEARLINE"
        metadata.customTime = Date(timeIntervalSince1970: 1_714_979_289.25)
        metadata.retention = .init(mode: .unlocked, retainUntilTime: Date(timeIntervalSince1970: 1_900_000_000))
        let ref = storage.reference(withPath: "kept.bin")
        let stored = try await ref.putDataAsync(Data("fields".utf8), metadata: metadata)
        for read in [stored, try await ref.getMetadata()] {
            // fake-gcs-server reads the storage class only from one-request uploads; both carry it
            // (the same resource JSON starts a session).
            if !resumable { #expect(read.storageClass == "NEARLINE") }
            #expect(read.customTime == metadata.customTime)
            #expect(read.retention == metadata.retention)
            #expect(read.id != nil && read.etag != nil)
        }

        var update = StorageMetadataUpdate()
        update.customTime = .set(Date(timeIntervalSince1970: 1_800_000_000))
        _ = try await ref.updateMetadata(update)
        #expect(try await ref.getMetadata().customTime == Date(timeIntervalSince1970: 1_800_000_000))

        // A listing's projection asks for the new fields too.
        let listed = try await storage.reference().list(maxResults: 10)
        #expect(listed.metadata(for: ref)?.retention == metadata.retention)
        if !resumable { #expect(listed.metadata(for: ref)?.storageClass == "NEARLINE") }
    }

    @Test func firebaseEndpointsRefuseGCSOnlyFieldsBeforeSendingAnything() async throws {
        // Nothing listens on port 9: any request would fail with another code.
        let storage = Storage(bucket: "b", endpoint: .firebase(URL(string: "http://127.0.0.1:9")!))
        var metadata = StorageMetadata()
        metadata.eventBasedHold = true
        let upload = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").putDataAsync(Data("x".utf8), metadata: metadata)
        }
        #expect(upload?.code == .invalidArgument && upload?.message.contains("eventBasedHold") == true)
        var update = StorageMetadataUpdate()
        update.customTime = .set(Date())
        let patch = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").updateMetadata(update)
        }
        #expect(patch?.code == .invalidArgument && patch?.message.contains("customTime") == true)
    }
}
