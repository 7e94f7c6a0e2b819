import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Per-request options against fake-gcs-server, for what it supports: it takes every option's
/// query parameters and headers without complaint (`userProject`, `predefinedAcl`,
/// `kmsKeyName`, the encryption headers, extra headers) but checks none, and stores the
/// storage class the object resource names.
@Suite("Request options on fake-gcs-server", .timeLimit(.minutes(10)))
struct RequestOptionsFakeGCSTests {
    @Test func optionsRoundTrip() async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "opts", route: .nativeHTTP)
        let billed = storage.with(.init(userProject: "my-billing-project", headers: ["X-Request-Reason": "test"]))
        let ref = billed.reference(withPath: "a/b.bin")
        let payload = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        _ = try await ref.putDataAsync(payload)
        #expect(try await ref.data(maxSize: 1 << 20) == payload)
        #expect(try await billed.reference(withPath: "a").listAll().items.count == 1)
        _ = try await ref.copy(to: billed.reference(withPath: "c.bin"))
        try await billed.reference(withPath: "c.bin").delete()

        let kms = "projects/p/locations/us/keyRings/r/cryptoKeys/k"
        let options = StorageRequestOptions(kmsKeyName: kms, predefinedACL: .publicRead, storageClass: "NEARLINE")
        let stored = try await storage.reference(withPath: "cold.bin").with(options).putDataAsync(payload)
        #expect(stored.storageClass == "NEARLINE")
        // It keeps no KMS key and ignores customer-supplied keys (it serves such an object to
        // anyone): what the emulator checks of those has no counterpart there.
    }
}
