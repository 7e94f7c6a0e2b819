import CCRC32C
import Foundation
import Testing

@testable import CloudStorage

/// Decoding object resources, encoding upload bodies, and the CRC32C text forms.
@Suite("StorageMetadata JSON")
struct StorageMetadataJSONTests {
    private func decode(_ json: String) throws -> StorageMetadata {
        try StorageMetadata(objectResource: Data(json.utf8))
    }

    private func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func expectDate(
        _ date: Date?,
        _ secondsSince1970: Double,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let date else {
            Issue.record("date is nil", sourceLocation: sourceLocation)
            return
        }
        #expect(abs(date.timeIntervalSince1970 - secondsSince1970) < 1e-5, sourceLocation: sourceLocation)
    }

    // MARK: Decoding

    @Test func decodesRealisticGCSObjectResource() throws {
        let metadata = try decode(
            """
            {
              "kind": "storage#object",
              "id": "my-bucket/images/space.jpg/1714979289123456",
              "selfLink": "https://www.googleapis.com/storage/v1/b/my-bucket/o/images%2Fspace.jpg",
              "mediaLink": "https://storage.googleapis.com/download/storage/v1/b/my-bucket/o/images%2Fspace.jpg?alt=media",
              "name": "images/space.jpg",
              "bucket": "my-bucket",
              "generation": "1714979289123456",
              "metageneration": "1",
              "contentType": "image/jpeg",
              "storageClass": "STANDARD",
              "size": "5368709120",
              "md5Hash": "XrY7u+Ae7tCTyyK7j1rNww==",
              "crc32c": "4waSgw==",
              "etag": "CMDs7+XE2oUDEAE=",
              "timeCreated": "2024-05-06T07:08:09.123Z",
              "updated": "2024-05-06T09:38:09.5+02:30",
              "timeStorageClassUpdated": "2024-05-06T07:08:09.123Z",
              "cacheControl": "public, max-age=3600",
              "contentDisposition": "inline; filename=\\"space.jpg\\"",
              "contentEncoding": "identity",
              "contentLanguage": "en",
              "metadata": {"location": "Yosemite, CA, USA", "activity": "Hiking"}
            }
            """
        )
        #expect(metadata.bucket == "my-bucket")
        #expect(metadata.path == "images/space.jpg")
        #expect(metadata.name == "space.jpg")
        #expect(metadata.generation == 1_714_979_289_123_456)
        #expect(metadata.metageneration == 1)
        #expect(metadata.size == 5_368_709_120)
        #expect(metadata.contentType == "image/jpeg")
        #expect(metadata.md5Hash == "XrY7u+Ae7tCTyyK7j1rNww==")
        #expect(metadata.crc32c == "4waSgw==")
        #expect(metadata.crc32cValue == 0xE306_9283)
        expectDate(metadata.timeCreated, 1_714_979_289.123)
        expectDate(metadata.updated, 1_714_979_289.5)
        #expect(metadata.cacheControl == "public, max-age=3600")
        #expect(metadata.contentDisposition == "inline; filename=\"space.jpg\"")
        #expect(metadata.contentEncoding == "identity")
        #expect(metadata.contentLanguage == "en")
        #expect(metadata.customMetadata == ["location": "Yosemite, CA, USA", "activity": "Hiking"])
    }

    @Test func decodesEveryFieldOfTheObjectResource() throws {
        let metadata = try decode(
            """
            {
              "kind": "storage#object", "id": "b/o/7", "name": "o", "bucket": "b", "generation": "7",
              "metageneration": "3", "size": "10", "etag": "CAcQAw==", "storageClass": "NEARLINE",
              "componentCount": 4, "kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1",
              "customerEncryption": {"encryptionAlgorithm": "AES256", "keySha256": "H4sIAAAA"},
              "temporaryHold": true, "eventBasedHold": false,
              "retention": {"mode": "Unlocked", "retainUntilTime": "2030-01-02T03:04:05.678Z"},
              "customTime": "2024-05-06T07:08:09Z", "timeDeleted": "2024-05-07T00:00:00Z",
              "timeStorageClassUpdated": "2024-05-06T07:08:10Z", "timeFinalized": "2024-05-06T07:08:11Z",
              "softDeleteTime": "2024-05-08T00:00:00Z", "hardDeleteTime": "2024-05-15T00:00:00Z",
              "owner": {"entity": "user-someone"}, "acl": [{"entity": "allUsers", "role": "READER"}]
            }
            """
        )
        #expect(metadata.id == "b/o/7")
        #expect(metadata.etag == "CAcQAw==")
        #expect(metadata.storageClass == "NEARLINE")
        #expect(metadata.componentCount == 4)
        #expect(metadata.kmsKeyName?.hasSuffix("cryptoKeyVersions/1") == true)
        #expect(metadata.customerEncryption?.encryptionAlgorithm == "AES256")
        #expect(metadata.customerEncryption?.keySHA256 == "H4sIAAAA")
        #expect(metadata.temporaryHold == true)
        #expect(metadata.eventBasedHold == false)
        #expect(metadata.retention?.mode == .unlocked)
        expectDate(metadata.retention?.retainUntilTime, 1_893_553_445.678)
        expectDate(metadata.customTime, 1_714_979_289)
        expectDate(metadata.timeDeleted, 1_715_040_000)
        expectDate(metadata.timeStorageClassUpdated, 1_714_979_290)
        expectDate(metadata.timeFinalized, 1_714_979_291)
        expectDate(metadata.softDeleteTime, 1_715_126_400)
        expectDate(metadata.hardDeleteTime, 1_715_731_200)
    }

    @Test func decodesFirebaseEmulatorStyleResource() throws {
        let metadata = try decode(
            """
            {"name":"a/b/c.txt","bucket":"demo-project.appspot.com","generation":1714979289,
             "metageneration":1,"size":11,"contentType":"text/plain","crc32c":"3808858755",
             "md5Hash":"XrY7u+Ae7tCTyyK7j1rNww==","timeCreated":"2024-05-06T07:08:10Z",
             "updated":"2024-05-06T07:08:10Z","downloadTokens":"tok1,tok2",
             "metadata":{"plain":"x","count":42,"flag":true,"ratio":1.5,"gone":null,"nested":{"a":1},"list":[1]}}
            """
        )
        #expect(metadata.path == "a/b/c.txt")
        #expect(metadata.name == "c.txt")
        #expect(metadata.bucket == "demo-project.appspot.com")
        #expect(metadata.generation == 1_714_979_289)
        #expect(metadata.metageneration == 1)
        #expect(metadata.size == 11)
        #expect(metadata.crc32c == "3808858755")
        #expect(metadata.crc32cValue == 0xE306_9283)
        expectDate(metadata.timeCreated, 1_714_979_290)
        expectDate(metadata.updated, 1_714_979_290)
        // Strings kept; numbers and booleans as their JSON text; null, objects and arrays skipped.
        #expect(metadata.customMetadata == ["plain": "x", "count": "42", "flag": "true", "ratio": "1.5"])
        #expect(metadata.cacheControl == nil)
    }

    @Test func minimalResourceLeavesEverythingElseUnset() throws {
        let metadata = try decode(#"{"name":"x","unknownField":{"deep":[1,2,3]},"size":"0"}"#)
        #expect(metadata.path == "x")
        #expect(metadata.name == "x")
        #expect(metadata.size == 0)
        #expect(metadata.bucket == nil)
        #expect(metadata.generation == nil)
        #expect(metadata.crc32c == nil)
        #expect(metadata.crc32cValue == nil)
        #expect(metadata.timeCreated == nil)
        #expect(metadata.customMetadata.isEmpty)
        #expect(try decode("{}") == StorageMetadata())
    }

    @Test func dateForms() throws {
        let cases: [(String, Double)] = [
            ("2024-05-06T07:08:09.123Z", 1_714_979_289.123),
            ("2024-05-06T07:08:10Z", 1_714_979_290),
            ("2024-05-06t07:08:10z", 1_714_979_290),
            ("2024-05-06 07:08:10Z", 1_714_979_290),
            ("2024-05-06T09:38:09.5+02:30", 1_714_979_289.5),
            ("2000-02-29T23:59:59-08:00", 951_897_599),
            ("1969-12-31T23:59:59Z", -1),
            ("2024-05-06T07:08:09.123456789Z", 1_714_979_289.123456789),
        ]
        for (text, seconds) in cases {
            expectDate(RFC3339Date.parse(text), seconds)
            expectDate(try decode(#"{"timeCreated":"\#(text)"}"#).timeCreated, seconds)
        }
    }

    @Test(arguments: [
        "", "2024-05-06", "2024-05-06T07:08:09", "2024-13-06T07:08:09Z", "2023-02-29T00:00:00Z",
        "2024-05-06T24:00:00Z", "2024-05-06T07:08:09.Z", "2024-05-06T07:08:09+0200", "2024-05-06T07:08:09Zjunk",
        "yesterday",
    ])
    func unparseableDatesAreNil(text: String) throws {
        #expect(RFC3339Date.parse(text) == nil)
        let metadata = try decode(#"{"name":"a","updated":"\#(text)"}"#)
        #expect(metadata.updated == nil)
        #expect(metadata.path == "a")
    }

    @Test(arguments: [
        "",
        "not json",
        "[]",
        #"["name"]"#,
        "\"a string\"",
        "42",
        "null",
        #"{"name": 5}"#,
        #"{"size": "big"}"#,
        #"{"size": 1.5}"#,
        #"{"size": "-1"}"#,
        #"{"generation": true}"#,
        #"{"metadata": "not an object"}"#,
        #"{"metadata": [1, 2]}"#,
        #"{"crc32c": 12345}"#,
        #"{"timeCreated": 0}"#,
        #"{"name": "a", "#,
        #"{"storageClass": 1}"#,
        #"{"temporaryHold": "true"}"#,
        #"{"eventBasedHold": 1}"#,
        #"{"componentCount": "many"}"#,
        #"{"componentCount": 0}"#,
        #"{"etag": false}"#,
        #"{"customTime": 5}"#,
        #"{"retention": "Locked"}"#,
        #"{"retention": {"mode": "Locked"}}"#,
        #"{"retention": {"mode": "Locked", "retainUntilTime": "soon"}}"#,
        #"{"customerEncryption": {"encryptionAlgorithm": "AES256"}}"#,
        #"{"softDeleteTime": []}"#,
    ])
    func garbageIsAProtocolViolation(json: String) throws {
        let error = try #require(throws: StorageError.self) { try decode(json) }
        #expect(error.code == .protocolViolation)
        #expect(error.message.contains("not an object resource"))
        #expect(error.underlyingError != nil)
    }

    // MARK: Encoding

    @Test func resourceJSONRoundTripsWritableFields() throws {
        var metadata = StorageMetadata()
        metadata.contentType = "image/jpeg"
        metadata.cacheControl = "public, max-age=3600"
        metadata.contentDisposition = "attachment; filename=\"a b.jpg\""
        metadata.contentEncoding = "gzip"
        metadata.contentLanguage = "fr"
        metadata.customMetadata = ["location": "Yosemite", "quote\"back\\slash": "line\nbreak\ttab\u{01}é🚀/"]
        let body = try object(metadata.resourceJSON(name: "images/space.jpg", crc32c: 0xE306_9283))

        #expect(
            Set(body.keys) == [
                "name", "contentType", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage",
                "metadata", "crc32c",
            ])
        #expect(body["name"] as? String == "images/space.jpg")
        #expect(body["contentType"] as? String == "image/jpeg")
        #expect(body["cacheControl"] as? String == "public, max-age=3600")
        #expect(body["contentDisposition"] as? String == "attachment; filename=\"a b.jpg\"")
        #expect(body["contentEncoding"] as? String == "gzip")
        #expect(body["contentLanguage"] as? String == "fr")
        #expect(body["crc32c"] as? String == "4waSgw==")
        #expect(body["metadata"] as? [String: String] == metadata.customMetadata)

        // What is sent decodes back to the same writable fields.
        let decoded = try StorageMetadata(objectResource: metadata.resourceJSON(name: "images/space.jpg", crc32c: nil))
        #expect(decoded.contentType == metadata.contentType)
        #expect(decoded.cacheControl == metadata.cacheControl)
        #expect(decoded.contentDisposition == metadata.contentDisposition)
        #expect(decoded.contentEncoding == metadata.contentEncoding)
        #expect(decoded.contentLanguage == metadata.contentLanguage)
        #expect(decoded.customMetadata == metadata.customMetadata)
        #expect(decoded.path == "images/space.jpg")
    }

    @Test func resourceJSONCarriesTheGCSOnlyWritableFieldsWithTheirJSONTypes() throws {
        var metadata = StorageMetadata()
        metadata.storageClass = "COLDLINE"
        metadata.customTime = Date(timeIntervalSince1970: 1_714_979_289.5)
        metadata.temporaryHold = true
        metadata.eventBasedHold = false
        metadata.retention = .init(mode: .locked, retainUntilTime: Date(timeIntervalSince1970: 1_893_553_445.678))
        let data = metadata.resourceJSON(name: "n", crc32c: nil)
        #expect(
            String(decoding: data, as: UTF8.self)
                == #"{"customTime":"2024-05-06T07:08:09.500Z","eventBasedHold":false,"name":"n","#
                + #""retention":{"mode":"Locked","retainUntilTime":"2030-01-02T03:04:05.678Z"},"#
                + #""storageClass":"COLDLINE","temporaryHold":true}"#)
        let decoded = try StorageMetadata(objectResource: data)
        #expect(decoded.storageClass == "COLDLINE")
        #expect(decoded.customTime == metadata.customTime)
        #expect(decoded.temporaryHold == true && decoded.eventBasedHold == false)
        #expect(decoded.retention == metadata.retention)
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"), (-0.001, "1969-12-31T23:59:59.999Z"),
        (951_782_400, "2000-02-29T00:00:00.000Z"),
        (253_402_300_799.999, "9999-12-31T23:59:59.999Z"), (1_714_979_289.1239, "2024-05-06T07:08:09.124Z"),
    ])
    func datesAreWrittenAsRFC3339InUTC(seconds: Double, text: String) {
        #expect(RFC3339Date.format(Date(timeIntervalSince1970: seconds)) == text)
        #expect(RFC3339Date.parse(text).map { RFC3339Date.format($0) } == text)
    }

    @Test func gcsOnlyFieldsAreRefusedOnFirebaseBeforeAnyRequest() throws {
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        let firebase = StorageEndpoint.firebase(URL(string: "http://127.0.0.1:9199")!)
        try metadata.validate(for: firebase)
        metadata.temporaryHold = false
        metadata.storageClass = "ARCHIVE"
        let error = try #require(throws: StorageError.self) { try metadata.validate(for: firebase) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("storageClass, temporaryHold"))
        try metadata.validate(for: .googleCloudStorage)

        var update = StorageMetadataUpdate()
        update.cacheControl = .set("no-store")
        try update.validate(for: firebase)
        update.eventBasedHold = .set(true)
        let refused = try #require(throws: StorageError.self) { try update.validate(for: firebase) }
        #expect(refused.code == .invalidArgument && refused.message.contains("eventBasedHold"))
    }

    @Test func unsetFieldsAreAbsent() throws {
        let body = try object(StorageMetadata().resourceJSON(name: "a.txt", crc32c: nil))
        #expect(Set(body.keys) == ["name"])
        #expect(
            String(decoding: StorageMetadata().resourceJSON(name: "a.txt", crc32c: nil), as: UTF8.self)
                == #"{"name":"a.txt"}"#)

        var onlyType = StorageMetadata()
        onlyType.contentType = "text/plain"
        let typed = try object(onlyType.resourceJSON(name: "a.txt", crc32c: 1))
        #expect(Set(typed.keys) == ["name", "contentType", "crc32c"])
        #expect(typed["crc32c"] as? String == "AAAAAQ==")
    }

    @Test func resourceJSONIsDeterministicWithSortedKeys() throws {
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        metadata.cacheControl = "no-cache"
        metadata.customMetadata = ["zeta": "1", "alpha": "2", "Mid": "3"]
        let text = String(decoding: metadata.resourceJSON(name: "n", crc32c: 0xE306_9283), as: UTF8.self)
        #expect(
            text == #"{"cacheControl":"no-cache","contentType":"text/plain","crc32c":"4waSgw==","#
                + #""metadata":{"Mid":"3","alpha":"2","zeta":"1"},"name":"n"}"#
        )
        for _ in 0..<20 {
            #expect(String(decoding: metadata.resourceJSON(name: "n", crc32c: 0xE306_9283), as: UTF8.self) == text)
        }
    }

    @Test func resourceJSONEscapesEveryControlCharacter() throws {
        let name = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init))) + "\u{7F}\u{2028}\"\\/"
        let data = StorageMetadata().resourceJSON(name: name, crc32c: nil)
        let body = try object(data)
        #expect(body["name"] as? String == name)
        #expect(!data.contains(0x0A))
        #expect(!data.contains(0x00))
    }

    // MARK: CRC32C text forms

    @Test func crc32cBase64OfTheCheckValue() {
        let check = Array("123456789".utf8)
        let crc = check.withUnsafeBytes { cs_crc32c_update(0, $0.baseAddress, $0.count) }
        #expect(crc == 0xE306_9283)
        #expect(CRC32CEncoding.base64(crc) == "4waSgw==")
        #expect(CRC32CEncoding.base64(0) == "AAAAAA==")
        #expect(CRC32CEncoding.base64(1) == "AAAAAQ==")
        #expect(CRC32CEncoding.base64(.max) == "/////w==")
    }

    @Test(arguments: [UInt32(0), 1, 255, 256, 0xE306_9283, 0x0102_0304, .max])
    func crc32cBase64RoundTrips(value: UInt32) {
        #expect(CRC32CEncoding.parse(CRC32CEncoding.base64(value)) == value)
        #expect(CRC32CEncoding.parse(String(value)) == value)
    }

    @Test(arguments: ["", "abc", "4waSgw", "4waSgw=", "AAAAAAAA", "4294967296", "-1", "+5", " 1", "1.0", "4waSgwAA"])
    func crc32cUnreadableTextIsNil(text: String) {
        #expect(CRC32CEncoding.parse(text) == nil)
    }

    @Test func crc32cValueReadsBothServerForms() throws {
        #expect(try decode(#"{"crc32c":"4waSgw=="}"#).crc32cValue == 0xE306_9283)
        #expect(try decode(#"{"crc32c":"3808858755"}"#).crc32cValue == 0xE306_9283)
        #expect(try decode(#"{"crc32c":"garbage!"}"#).crc32cValue == nil)
    }
}
