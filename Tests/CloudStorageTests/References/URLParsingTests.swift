import Foundation
import Testing

@testable import CloudStorage

/// `Storage.reference(forURL:)` for every accepted form and for garbage.
@Suite("URL parsing")
struct URLParsingTests {
    let storage = Storage(bucket: "my-bucket")

    private func path(_ url: String) throws -> String {
        try storage.reference(forURL: url).fullPath
    }

    // MARK: gs://

    @Test func gsWithPath() throws {
        #expect(try path("gs://my-bucket/images/stars.jpg") == "images/stars.jpg")
    }

    @Test(arguments: ["gs://my-bucket", "gs://my-bucket/", "GS://my-bucket/"])
    func gsRoot(url: String) throws {
        let ref = try storage.reference(forURL: url)
        #expect(ref == storage.reference())
    }

    @Test func gsPathIsLiteralAndExact() throws {
        // gs:// paths are not percent-decoded: `%20` is three characters of the name.
        #expect(try path("gs://my-bucket/a%20b") == "a%20b")
        #expect(try path("gs://my-bucket/a%2Fb") == "a%2Fb")
        #expect(try path("gs://my-bucket/bad%ZZ") == "bad%ZZ")
        #expect(try path("gs://my-bucket/a+b c?d#e") == "a+b c?d#e")
        // Nor normalized: a URL names one object, and `/x//y/` is not `x/y` (gsutil reads it so too).
        #expect(try path("gs://my-bucket//x//y/") == "/x//y/")
        #expect(try storage.reference(forURL: "gs://my-bucket//") == storage.reference(objectName: "/"))
    }

    // MARK: Firebase v0

    @Test func firebaseDownloadURLWithToken() throws {
        let url =
            "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars%20big.jpg?alt=media&token=abc"
        #expect(try path(url) == "images/stars big.jpg")
    }

    @Test func firebaseAppspotBucket() throws {
        let appStorage = Storage(bucket: "my-app.appspot.com")
        let ref = try appStorage.reference(
            forURL: "https://firebasestorage.googleapis.com/v0/b/my-app.appspot.com/o/images%2Fstars%20big.jpg"
                + "?alt=media&token=abc"
        )
        #expect(ref.fullPath == "images/stars big.jpg")
        #expect(ref.bucket == "my-app.appspot.com")
    }

    @Test(arguments: [
        "http://127.0.0.1:9199/v0/b/my-bucket/o/a%2Fb.txt",
        "http://localhost:9199/v0/b/my-bucket/o/a%2Fb.txt?alt=media",
        "https://example.com/v0/b/my-bucket/o/a%2Fb.txt#frag",
        "http://[::1]:9199/v0/b/my-bucket/o/a%2Fb.txt",
        "HTTPS://FIREBASESTORAGE.GOOGLEAPIS.COM/v0/b/my-bucket/o/a%2fb.txt",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/a/b.txt",
    ])
    func firebaseOnAnyHost(url: String) throws {
        #expect(try path(url) == "a/b.txt")
    }

    @Test(arguments: [
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o?alt=media",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket?x=1",
    ])
    func firebaseRoot(url: String) throws {
        #expect(try storage.reference(forURL: url) == storage.reference())
    }

    // MARK: Percent-decoding

    @Test(arguments: [
        ("images%2Fstars.jpg", "images/stars.jpg"),
        ("a%20b", "a b"),
        ("100%25", "100%"),
        ("%2525", "%25"),  // decoded exactly once
        ("caf%C3%A9", "café"),
        ("%F0%9F%9A%80", "🚀"),
        ("a+b", "a+b"),
        ("a%2Bb", "a+b"),
        ("%23%5B%5D%2A%3F", "#[]*?"),
        ("%2Fleading%2F%2Fdouble%2F", "/leading//double/"),  // an exact name, not normalized
    ])
    func percentDecodingInObjectPaths(encoded: String, decoded: String) throws {
        #expect(try path("https://firebasestorage.googleapis.com/v0/b/my-bucket/o/\(encoded)?alt=media") == decoded)
        #expect(try path("https://storage.googleapis.com/storage/v1/b/my-bucket/o/\(encoded)") == decoded)
        #expect(try path("https://storage.googleapis.com/my-bucket/\(encoded)") == decoded)
    }

    @Test func queryIsIgnored() throws {
        let firebase = "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/a.jpg?alt=media&token=x%2Fy/z"
        #expect(try path(firebase) == "a.jpg")
        #expect(try path("https://storage.googleapis.com/my-bucket/a.jpg?generation=12#x") == "a.jpg")
        #expect(try path("https://storage.googleapis.com/my-bucket/a.jpg?bad%ZZ") == "a.jpg")
    }

    // MARK: JSON API

    @Test(arguments: [
        "https://storage.googleapis.com/storage/v1/b/my-bucket/o/images%2Fstars.jpg",
        "https://storage.googleapis.com/download/storage/v1/b/my-bucket/o/images%2Fstars.jpg?alt=media",
        "http://127.0.0.1:4443/storage/v1/b/my-bucket/o/images%2Fstars.jpg",
        "http://localhost:4443/download/storage/v1/b/my-bucket/o/images%2Fstars.jpg?alt=media&generation=1",
    ])
    func jsonAPIObjectURLs(url: String) throws {
        #expect(try path(url) == "images/stars.jpg")
    }

    @Test(arguments: [
        "https://storage.googleapis.com/storage/v1/b/my-bucket",
        "https://storage.googleapis.com/storage/v1/b/my-bucket/o",
        "https://storage.googleapis.com/download/storage/v1/b/my-bucket/o/",
    ])
    func jsonAPIRoot(url: String) throws {
        #expect(try storage.reference(forURL: url) == storage.reference())
    }

    // MARK: Path and virtual-host styles

    @Test(arguments: [
        "https://storage.googleapis.com/my-bucket/images/stars%20big.jpg",
        "https://storage.cloud.google.com/my-bucket/images/stars%20big.jpg",
        "https://Storage.GoogleAPIs.com:443/my-bucket/images/stars%20big.jpg",
        "https://my-bucket.storage.googleapis.com/images/stars%20big.jpg",
        "https://MY-BUCKET.storage.googleapis.com/images/stars%20big.jpg?x=y",
        "https://my-bucket.storage.googleapis.com/images%2Fstars%20big.jpg",
    ])
    func pathAndVirtualHostStyles(url: String) throws {
        #expect(try path(url) == "images/stars big.jpg")
    }

    @Test(arguments: [
        "https://storage.googleapis.com/my-bucket",
        "https://storage.googleapis.com/my-bucket/",
        "https://my-bucket.storage.googleapis.com",
        "https://my-bucket.storage.googleapis.com/",
    ])
    func pathStyleRoot(url: String) throws {
        #expect(try storage.reference(forURL: url) == storage.reference())
    }

    @Test func dottedBucketInVirtualHost() throws {
        let dotted = Storage(bucket: "assets.example.com")
        let ref = try dotted.reference(forURL: "https://assets.example.com.storage.googleapis.com/css/site.css")
        #expect(ref.fullPath == "css/site.css")
    }

    // MARK: URL overload

    @Test func foundationURLOverloadKeepsEscapes() throws {
        let url = try #require(
            URL(string: "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars%20big.jpg?alt=media")
        )
        #expect(try storage.reference(forURL: url).fullPath == "images/stars big.jpg")
        let gs = try #require(URL(string: "gs://my-bucket/images/stars.jpg"))
        #expect(try storage.reference(forURL: gs).fullPath == "images/stars.jpg")
    }

    // MARK: Errors

    @Test(arguments: [
        "gs://other-bucket/images/stars.jpg",
        "gs://other-bucket",
        "https://firebasestorage.googleapis.com/v0/b/other-bucket/o/a.jpg?alt=media&token=secret-token",
        "https://storage.googleapis.com/storage/v1/b/other-bucket/o/a.jpg",
        "https://storage.googleapis.com/other-bucket/a.jpg",
        "https://other-bucket.storage.googleapis.com/a.jpg",
        "gs://My-Bucket/a.jpg",
    ])
    func bucketMismatch(url: String) throws {
        let error = try #require(throws: StorageError.self) { try storage.reference(forURL: url) }
        #expect(error.code == .bucketMismatch)
        #expect(error.message.contains("my-bucket"))
        #expect(error.message.lowercased().contains("other-bucket") || error.message.contains("My-Bucket"))
        #expect(!error.message.contains("secret-token"))
    }

    @Test(arguments: [
        "",
        "images/a.jpg",
        "my-bucket/images/a.jpg",
        "ftp://x/y",
        "file:///tmp/a.jpg",
        "mailto:someone@example.com",
        "gs://",
        "gs:///a.jpg",
        "gs://bad bucket/a.jpg",
        "gs://my-bucket:80/a.jpg",
        "https://example.com/whatever",
        "https://example.com/my-bucket/a.jpg",
        "https://example.com",
        "https://",
        "https:///v0/b/my-bucket/o/a",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/bad%ZZ",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/trailing%2",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/trailing%",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/notutf8%FF",
        "https://firebasestorage.googleapis.com/v0/b//o/a.jpg",
        "https://firebasestorage.googleapis.com/v0/b/my-bucket/x/a.jpg",
        "https://firebasestorage.googleapis.com/v0/b",
        "https://firebasestorage.googleapis.com/",
        "https://storage.googleapis.com/",
        "https://storage.googleapis.com",
        "https://storage.googleapis.com/my%20bucket/a.jpg",
        "https://storage.googleapis.com/my-bucket/bad%G0",
        "https://.storage.googleapis.com/a.jpg",
        "https://storage.googleapis.com/storage/v1/b//o/a",
    ])
    func garbageIsAPathError(url: String) throws {
        let error = try #require(throws: StorageError.self) { try storage.reference(forURL: url) }
        #expect(error.code == .pathError, "\(url) gave \(error)")
    }

    @Test func pathErrorsNeverRepeatTheQuery() throws {
        let error = try #require(throws: StorageError.self) {
            try storage.reference(forURL: "https://example.com/whatever?alt=media&token=secret-token")
        }
        #expect(error.code == .pathError)
        #expect(!error.description.contains("secret-token"))
        #expect(error.message.contains("example.com/whatever"))
    }

    @Test func errorsNeverRepeatUserInformation() throws {
        let error = try #require(throws: StorageError.self) {
            try storage.reference(forURL: "https://user:hunter2@example.com/whatever#x")
        }
        #expect(error.code == .pathError)
        #expect(!error.message.contains("hunter2"))
        #expect(error.message.contains("https://…@example.com/whatever"))
        // User information does not change what a valid URL names.
        #expect(try path("https://user:pw@storage.googleapis.com/my-bucket/a.jpg") == "a.jpg")
    }
}
