import Foundation
import HTTP1
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The object wire protocols build every media request and read every media answer's head:
/// the download engine sets no header and reads none.
@Suite("Media requests and answers")
struct MediaAnswerTests {
    static let base = URL(string: "https://example.test")!
    static let gcs = GCSJSONProtocol(baseURL: base)
    static let v0 = FirebaseV0Protocol(baseURL: base)

    static func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name, value) }
        return headers
    }

    static func query(_ request: HTTPRequest) -> [String: String] {
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test func requestsAskForTheRangeAndTheGenerationOfTheRead() {
        let resumed = Self.gcs.media(bucket: "b", name: "o", MediaRead(offset: 4, last: 9, expectedGeneration: 7))
        #expect(resumed.headers["Range"] == "bytes=4-9")
        #expect(Self.query(resumed)["ifGenerationMatch"] == "7")
        #expect(Self.gcs.media(bucket: "b", name: "o", MediaRead(offset: 0, last: 3)).headers["Range"] == "bytes=0-3")
        // The caller's own condition stands: its 412 is the caller's failed precondition.
        let conditioned = Self.gcs.media(
            bucket: "b", name: "o", MediaRead(offset: 4, expectedGeneration: 7),
            preconditions: StoragePreconditions(ifGenerationMatch: 5))
        #expect(Self.query(conditioned)["ifGenerationMatch"] == "5")
        #expect(Self.gcs.pinsGenerations && !Self.v0.pinsGenerations)
        let v0 = Self.v0.media(bucket: "b", name: "o", MediaRead(offset: 2, last: 8))
        #expect(v0.headers["Range"] == "bytes=2-8" && Self.query(v0)["ifGenerationMatch"] == nil)
    }

    @Test func aWholeAnswerTellsTheObjectItServes() throws {
        let head = try Self.gcs.mediaHead(
            status: 200,
            headers: Self.headers([
                ("Content-Length", "10"), ("x-goog-generation", "7"),
                ("x-goog-hash", "crc32c=AQIDBA=="), ("x-goog-hash", "md5=XUFAKrxLKna5cZ2REBfFkg=="),
                ("x-goog-stored-content-encoding", "identity"),
            ]),
            answering: MediaRead(offset: 4))
        #expect(
            head
                == MediaHead(
                    content: .whole, objectSize: 10, generation: 7, crc32c: 0x0102_0304,
                    md5: "XUFAKrxLKna5cZ2REBfFkg==", contentEncoding: nil, storedEncoding: nil))
    }

    @Test func aPartialAnswerTellsWhereItsBytesLie() throws {
        let head = try Self.v0.mediaHead(
            status: 206,
            headers: Self.headers([
                ("Content-Range", "bytes 4-9/10"), ("Content-Length", "6"), ("x-goog-stored-content-length", "10"),
                ("Content-Encoding", "GZIP"), ("x-goog-stored-content-encoding", "gzip"),
            ]),
            answering: MediaRead(offset: 4))
        #expect(head.content == .part(first: 4, last: 9) && head.objectSize == 10)
        #expect(head.contentEncoding == "gzip" && head.storedEncoding == "gzip")
    }

    /// Answers that break the protocol, and the sentence each earns.
    static let violations: [(status: Int, fields: [(String, String)], read: MediaRead, message: String)] = [
        (
            206, [("Content-Range", "bytes 4-9/10")], MediaRead(generation: 5, offset: 4),
            "The server was asked for generation 5 and answered with the bytes of generation 6."
        ),
        (
            206, [("Content-Range", "4-9/10")], MediaRead(offset: 4),
            "The server answered a ranged download with an unreadable Content-Range (4-9/10)."
        ),
        (
            206, [("Content-Range", "bytes 3-9/10")], MediaRead(offset: 4),
            "The server answered a download from byte 4 with bytes from 3."
        ),
        (
            206, [("Content-Range", "bytes 4-9/10")], MediaRead(offset: 4, last: 6),
            "The server answered a download of bytes 4-6 with bytes up to 9."
        ),
        (
            206, [("Content-Range", "bytes 4-9/10"), ("Content-Length", "5")], MediaRead(offset: 4),
            "The server's Content-Length (5) disagrees with its Content-Range (bytes 4-9/10)."
        ),
        (
            206, [("Content-Range", "bytes 4-9/10"), ("x-goog-stored-content-length", "11")], MediaRead(offset: 4),
            "The server's Content-Range total (10) and stored length (11) differ."
        ),
        (200, [("Content-Length", "ten")], MediaRead(offset: 0), "The server sent an unreadable Content-Length (ten)."),
    ]

    @Test func answersThatBreakTheProtocolAreViolations() {
        for (index, violation) in Self.violations.enumerated() {
            var fields = violation.fields
            if violation.read.generation != nil { fields.append(("x-goog-generation", "6")) }
            let error = Self.failure(violation.status, Self.headers(fields), violation.read)
            #expect(error?.code == .protocolViolation, "case \(index)")
            #expect(error?.message == violation.message, "case \(index)")
        }
    }

    /// What reading the head throws, or nil.
    static func failure(_ status: Int, _ headers: HTTPHeaders, _ read: MediaRead) -> StorageError? {
        do throws(StorageError) {
            _ = try gcs.mediaHead(status: status, headers: headers, answering: read)
            return nil
        } catch {
            return error
        }
    }
}
