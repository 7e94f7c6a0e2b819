import Foundation
import HTTP1
import Testing

@testable import CloudStorage
@testable import HTTPClient

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

    @Test func updatesOfGCSOnlyFieldsSendTheirJSONTypesAndTheRetentionOverrideOnlyWhenAsked() {
        var update = StorageMetadataUpdate()
        update.temporaryHold = .set(false)
        update.customTime = .set(Date(timeIntervalSince1970: 0))
        update.retention = .remove
        #expect(
            String(decoding: update.patchBody, as: UTF8.self)
                == #"{"customTime":"1970-01-01T00:00:00.000Z","retention":null,"temporaryHold":false}"#)
        let gcs = GCSJSONProtocol(baseURL: Self.base)
        #expect(!gcs.updateMetadata(bucket: "b", name: "o", update).url.absoluteString.contains("override"))
        update.overrideUnlockedRetention = true
        #expect(
            gcs.updateMetadata(bucket: "b", name: "o", update).url.absoluteString
                == "https://example.test/storage/v1/b/b/o/o?overrideUnlockedRetention=true")
        // Setting every field of metadata names the GCS-only ones too, but never the storage class.
        var metadata = StorageMetadata()
        metadata.eventBasedHold = true
        metadata.storageClass = "ARCHIVE"
        let setting = StorageMetadataUpdate(setting: metadata)
        #expect(String(decoding: setting.patchBody, as: UTF8.self) == #"{"eventBasedHold":true}"#)
    }

    @Test func listingsAskForOneLevelBelowThePrefix() {
        let gcs = GCSJSONProtocol(baseURL: Self.base).list(
            bucket: "b", StorageObjectQuery(prefix: "p/", delimiter: "/", pageSize: 10), pageToken: "t+/")
        let query = URLComponents(url: gcs.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "delimiter" }?.value == "/")
        #expect(query.first { $0.name == "prefix" }?.value == "p/")
        #expect(query.first { $0.name == "maxResults" }?.value == "10")
        #expect(query.first { $0.name == "pageToken" }?.value == "t+/")
        #expect(gcs.url.absoluteString.contains("pageToken=t%2B%2F"))
        let v0 = FirebaseV0Protocol(baseURL: Self.base).list(
            bucket: "b", StorageObjectQuery(delimiter: "/", pageSize: 5), pageToken: nil)
        #expect(v0.url.absoluteString == "https://example.test/v0/b/b/o?prefix=&delimiter=%2F&maxResults=5")
    }

    @Test func gcsListingsSendEveryQueryOptionPercentEncoded() {
        let query = StorageObjectQuery(
            prefix: "a b/2024-", delimiter: "&", matchGlob: "**/*.{jpg,png}", startOffset: "a b/2024-01+",
            endOffset: "a b/2024-03=", includesVersions: true, includesTrailingDelimiter: true,
            includesFoldersAsPrefixes: true, pageSize: 7)
        let request = GCSJSONProtocol(baseURL: Self.base).list(bucket: "b", query, pageToken: "t/=")
        let url = request.url.absoluteString
        for encoded in [
            "maxResults=7", "prefix=a%20b%2F2024-", "delimiter=%26", "matchGlob=%2A%2A%2F%2A.%7Bjpg%2Cpng%7D",
            "startOffset=a%20b%2F2024-01%2B", "endOffset=a%20b%2F2024-03%3D", "versions=true",
            "includeTrailingDelimiter=true", "includeFoldersAsPrefixes=true", "pageToken=t%2F%3D",
        ] {
            #expect(url.contains("&\(encoded)") || url.contains("?\(encoded)"), "\(encoded) in \(url)")
        }
        // A flat listing sends no delimiter, and no option that is not set.
        let flat = GCSJSONProtocol(baseURL: Self.base).list(bucket: "b", StorageObjectQuery(), pageToken: nil)
        let names = (URLComponents(url: flat.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map(\.name)
        #expect(names == ["maxResults", "fields"])
    }

    @Test func listPagesAreRead() throws {
        let body = Data(#"{"prefixes":["p/x/"],"items":[{"name":"p/a","bucket":"b"}],"nextPageToken":"n"}"#.utf8)
        let page = try ObjectListPage(listJSON: body)
        #expect(page == ObjectListPage(items: ["p/a"], prefixes: ["p/x/"], nextPageToken: "n"))
        #expect(try ObjectListPage(listJSON: Data("{}".utf8)) == ObjectListPage(items: [], prefixes: []))
        #expect(throws: StorageError.self) { try ObjectListPage(listJSON: Data("[]".utf8)) }
    }

    @Test func gcsListingsAskForEachItemsResourceButOnlyTheFieldsMetadataReads() throws {
        let request = GCSJSONProtocol(baseURL: Self.base).list(
            bucket: "b", StorageObjectQuery(pageSize: 5), pageToken: nil)
        let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let fields = try #require(query.first { $0.name == "fields" }?.value)
        #expect(fields.hasPrefix("items(") && fields.hasSuffix("),prefixes,nextPageToken"))
        let itemFields = Set(fields.dropFirst("items(".count).prefix { $0 != ")" }.split(separator: ","))
        for needed in [
            "name", "size", "generation", "metageneration", "updated", "crc32c", "md5Hash", "metadata", "id", "etag",
            "storageClass", "customTime", "temporaryHold", "eventBasedHold", "retention", "componentCount",
            "customerEncryption", "softDeleteTime", "hardDeleteTime",
        ] {
            #expect(itemFields.contains(Substring(needed)))
        }
        // Not asked for: what StorageMetadata never reads, and v0's field, which GCS refuses.
        for unread in ["selfLink", "mediaLink", "acl", "kind", "downloadTokens"] {
            #expect(!itemFields.contains(Substring(unread)))
        }
    }

    @Test func gcsListPagesCarryEachItemsMetadataAndAnOddItemOnlyLosesItsOwn() throws {
        let body = Data(
            #"""
            {"items":[
              {"name":"p/a","bucket":"b","size":"12","generation":"7","metageneration":"2","contentType":"text/plain",
               "crc32c":"AAAAAA==","updated":"2024-05-01T12:00:00.000Z","metadata":{"k":"v"}},
              {"name":"p/bad","size":"twelve","generation":"1"},
              {"name":"p/names-only"},
              {"name":"p/c","size":3,"generation":1}
            ],"prefixes":["p/x/"]}
            """#.utf8)
        let response = HTTPResponse(status: 200, headers: HTTPHeaders(), body: body)
        let page = try GCSJSONProtocol(baseURL: Self.base).listPage(from: response)
        #expect(page.items == ["p/a", "p/bad", "p/names-only", "p/c"])
        try #require(page.metadata.count == 4)
        let first = try #require(page.metadata[0])
        #expect(first.path == "p/a" && first.size == 12 && first.generation == 7 && first.metageneration == 2)
        #expect(first.contentType == "text/plain" && first.crc32c == "AAAAAA==" && first.customMetadata == ["k": "v"])
        #expect(first.updated == RFC3339Date.parse("2024-05-01T12:00:00.000Z"))
        #expect(page.metadata[1] == nil, "a malformed size costs the item its metadata, not the page")
        #expect(page.metadata[2] == nil, "a name alone is no resource: not an empty object")
        #expect(page.metadata[3]?.size == 3)
        // v0 items carry only name and bucket: no metadata, even when more is sent.
        let v0 = try FirebaseV0Protocol(baseURL: Self.base).listPage(from: response)
        #expect(v0.items == page.items && v0.metadata.isEmpty)
        // An item without a name still fails the page, as before.
        let nameless = HTTPResponse(status: 200, headers: HTTPHeaders(), body: Data(#"{"items":[{"size":"1"}]}"#.utf8))
        let error = #expect(throws: StorageError.self) {
            try GCSJSONProtocol(baseURL: Self.base).listPage(from: nameless)
        }
        #expect(error?.code == .protocolViolation)
    }

    @Test func listResultsKeepMetadataOnlyForTheirItems() {
        let storage = Storage(bucket: "b", endpoint: .gcs(Self.base))
        let listed = storage.reference(withPath: "a")
        let other = storage.reference(withPath: "z")
        var metadata = StorageMetadata()
        metadata.size = 5
        let page = StorageListResult(
            prefixes: [], items: [listed], pageToken: nil, itemMetadata: [listed: metadata, other: metadata])
        #expect(page.metadata(for: listed)?.size == 5)
        #expect(page.metadata(for: other) == nil)
        #expect(StorageListResult(prefixes: [], items: [listed], pageToken: nil).metadata(for: listed) == nil)
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
        #expect(gcs.media(bucket: "b", name: "o", MediaRead(offset: 0)).headers["Range"] == nil)
        #expect(gcs.media(bucket: "b", name: "o", MediaRead(offset: 42)).headers["Range"] == "bytes=42-")
        #expect(
            FirebaseV0Protocol(baseURL: Self.base).media(bucket: "b", name: "o", MediaRead(offset: 7)).headers["Range"]
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
