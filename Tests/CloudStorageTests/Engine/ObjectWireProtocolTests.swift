import Foundation
import HTTP1
import Testing

@testable import CloudStorage

/// The requests the object protocols build and the answers they read, without a network.
@Suite("Object wire protocols")
struct ObjectWireProtocolTests {
    static let base = URL(string: "https://example.test")!

    @Test func updatesSendOnlyNamedFieldsAndNullsForRemovals() {
        var update = StorageMetadataUpdate()
        #expect(update.isEmpty)
        update.contentType = .set("text/plain")
        update.cacheControl = .remove
        update.customMetadata = ["b": .remove, "a": .set("1")]
        #expect(
            String(decoding: update.patchBody, as: UTF8.self)
                == #"{"cacheControl":null,"contentType":"text/plain","metadata":{"a":"1","b":null}}"#)
        let request = GCSJSONProtocol(baseURL: Self.base).updateMetadata(bucket: "b", name: "a/b c", update)
        #expect(request.method == "PATCH")
        #expect(request.url.absoluteString == "https://example.test/storage/v1/b/b/o/a%2Fb%20c")
        let v0 = FirebaseV0Protocol(baseURL: Self.base).updateMetadata(bucket: "b", name: "a/b c", update)
        #expect(v0.url.absoluteString == "https://example.test/v0/b/b/o/a%2Fb%20c")
    }

    @Test func listingsAskForOneLevelBelowThePrefix() {
        let gcs = GCSJSONProtocol(baseURL: Self.base).list(bucket: "b", prefix: "p/", maxResults: 10, pageToken: "t+/")
        let query = URLComponents(url: gcs.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "delimiter" }?.value == "/")
        #expect(query.first { $0.name == "prefix" }?.value == "p/")
        #expect(query.first { $0.name == "maxResults" }?.value == "10")
        #expect(query.first { $0.name == "pageToken" }?.value == "t+/")
        #expect(gcs.url.absoluteString.contains("pageToken=t%2B%2F"))
        let v0 = FirebaseV0Protocol(baseURL: Self.base).list(bucket: "b", prefix: "", maxResults: 5, pageToken: nil)
        #expect(v0.url.absoluteString == "https://example.test/v0/b/b/o?prefix=&delimiter=%2F&maxResults=5")
    }

    @Test func listPagesAreRead() throws {
        let body = Data(#"{"prefixes":["p/x/"],"items":[{"name":"p/a","bucket":"b"}],"nextPageToken":"n"}"#.utf8)
        let page = try ObjectListPage(listJSON: body)
        #expect(page == ObjectListPage(items: ["p/a"], prefixes: ["p/x/"], nextPageToken: "n"))
        #expect(try ObjectListPage(listJSON: Data("{}".utf8)) == ObjectListPage(items: [], prefixes: []))
        #expect(throws: StorageError.self) { try ObjectListPage(listJSON: Data("[]".utf8)) }
    }

    @Test func downloadURLsFollowEachProtocol() throws {
        var metadata = try StorageMetadata(objectResource: Data(#"{"name":"a/b","downloadTokens":"t1,t2"}"#.utf8))
        let v0 = FirebaseV0Protocol(baseURL: Self.base)
        #expect(
            v0.downloadURL(bucket: "b", name: "a/b", metadata: metadata)?.absoluteString
                == "https://example.test/v0/b/b/o/a%2Fb?alt=media&token=t1")
        metadata.downloadTokens = []
        #expect(v0.downloadURL(bucket: "b", name: "a/b", metadata: metadata) == nil)
        #expect(v0.addDownloadToken(bucket: "b", name: "a/b", token: "new")?.method == "PATCH")
        let gcs = GCSJSONProtocol(baseURL: Self.base)
        #expect(
            gcs.downloadURL(bucket: "b", name: "a/b", metadata: metadata)?.absoluteString
                == "https://example.test/storage/v1/b/b/o/a%2Fb?alt=media")
        #expect(gcs.addDownloadToken(bucket: "b", name: "a/b", token: "x") == nil)
    }

    @Test func mediaRequestsAskForARangeOnlyWhenResuming() {
        let gcs = GCSJSONProtocol(baseURL: Self.base)
        #expect(gcs.media(bucket: "b", name: "o", offset: 0).headers["Range"] == nil)
        #expect(gcs.media(bucket: "b", name: "o", offset: 42).headers["Range"] == "bytes=42-")
        #expect(
            FirebaseV0Protocol(baseURL: Self.base).media(bucket: "b", name: "o", offset: 7).headers["Range"]
                == "bytes=7-")
    }

    @Test func contentRangesAreParsed() {
        #expect(ContentRangeHeader("bytes 5-9/10") == ContentRangeHeader(first: 5, last: 9, total: 10))
        #expect(ContentRangeHeader("bytes 5-9/*")?.total == nil)
        #expect(ContentRangeHeader("bytes 9-5/10") == nil)
        #expect(ContentRangeHeader("bytes */10") == nil)
        #expect(ContentRangeHeader(nil) == nil)
    }
}
