import Foundation
import Testing

@testable import StorageEmulator

/// Bucket names Cloud Storage refuses are refused, by `buckets.insert` and by creation on first use.
@Suite("Bucket names as Cloud Storage takes them")
struct BucketNameTests {
    static let refusedNames = [
        String(repeating: "a", count: 64),
        "a." + String(repeating: "b", count: 64) + ".c",
        "goog-bucket", "googbucket",
        "192.168.5.4", "10.0.0.1",
        "my-google-bucket", "mygooglebucket", "g00gle-data", "go0gle", "goog1e.example", "9oogle",
    ]
    static let acceptedNames = [
        String(repeating: "a", count: 63),
        [String](repeating: String(repeating: "x", count: 63), count: 3).joined(separator: ".") + ".abc",
        "1.2.3.4.5", "300.1.2.3x", "my-goo-gle", "bkt_1", "demo.appspot.com",
    ]

    @Test("buckets.insert answers 400 for a name Cloud Storage refuses", arguments: Self.refusedNames)
    func insertRefused(name: String) throws {
        let harness = try Harness(autoCreate: false)
        let response = harness.send("POST", "/storage/v1/b?project=p", json: ["name": name])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("Invalid bucket name"))
        #expect(harness.store.bucket(name) == nil)
    }

    @Test("creation on first use answers 400 for a name Cloud Storage refuses", arguments: Self.refusedNames)
    func firstUseRefused(name: String) throws {
        let harness = try Harness()
        let response = harness.send("POST", "/upload/storage/v1/b/\(name)/o?uploadType=media&name=x", body: [1])
        #expect(response.status == 400)
        #expect(harness.store.bucket(name) == nil)
    }

    @Test("names at the limits are accepted", arguments: Self.acceptedNames)
    func accepted(name: String) throws {
        let harness = try Harness(autoCreate: false)
        #expect(harness.send("POST", "/storage/v1/b?project=p", json: ["name": name]).status == 200)
        #expect(harness.store.bucket(name) != nil)
    }
}
