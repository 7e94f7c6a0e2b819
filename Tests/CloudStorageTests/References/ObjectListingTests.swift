import Foundation
import HTTP1
import HTTPTestServers
import Testing

@testable import CloudStorage

/// ``Storage/objects(_:)`` against scripted servers: queries refused before any request, answers
/// that break the query ended with `protocolViolation`, and page tokens that would loop.
@Suite("Object listings: rules and hostile servers", .timeLimit(.minutes(10)))
struct ObjectListingTests {
    /// A resource a GCS listing item carries.
    static func item(_ name: String, generation: Int = 1) -> String {
        #"{"name":"\#(name)","bucket":"demo","size":"1","generation":"\#(generation)"}"#
    }

    /// Answers each request with `answer(pageToken)`'s JSON, counting requests.
    static func server(_ answer: @escaping @Sendable (String?) -> String) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { connection, _ in
            while let request = connection.readRequest() {
                let token = URLComponents(string: request.head.target)?.queryItems?
                    .first { $0.name == "pageToken" }?.value
                let json = answer(token)
                connection.write(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n"
                        + json)
            }
        }
    }

    static func drain(_ listing: StorageObjectListing) async throws(StorageError) -> [StorageListEntry] {
        var entries: [StorageListEntry] = []
        for try await entry in listing { entries.append(entry) }
        return entries
    }

    @Test(arguments: [
        (StorageObjectQuery(pageSize: 0), "pageSize"), (StorageObjectQuery(pageSize: 1001), "pageSize"),
        (StorageObjectQuery(delimiter: ""), "delimiter"), (StorageObjectQuery(matchGlob: ""), "matchGlob"),
        (StorageObjectQuery(endOffset: ""), "endOffset"),
        (StorageObjectQuery(includesTrailingDelimiter: true), "includesTrailingDelimiter"),
        (StorageObjectQuery(delimiter: "-", includesFoldersAsPrefixes: true), "includesFoldersAsPrefixes"),
    ])
    func badQueriesAreRefusedBeforeAnyRequest(query: StorageObjectQuery, option: String) async throws {
        let server = try Self.server { _ in "{}" }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let error = await #expect(throws: StorageError.self) { try await Self.drain(storage.objects(query)) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(option) == true, "\(error?.message ?? "")")
        #expect(server.acceptedConnections == 0)
    }

    @Test(arguments: [
        (StorageObjectQuery(prefix: "a/"), "a flat listing"),
        (StorageObjectQuery(prefix: "a", delimiter: "/"), "a prefix that does not end in"),
        (StorageObjectQuery(delimiter: "-"), "delimiter"),
        (StorageObjectQuery(delimiter: "/", matchGlob: "*"), "matchGlob"),
        (StorageObjectQuery(delimiter: "/", startOffset: "b"), "startOffset"),
        (StorageObjectQuery(delimiter: "/", endOffset: "b"), "endOffset"),
        (StorageObjectQuery(delimiter: "/", includesVersions: true), "includesVersions"),
        (StorageObjectQuery(delimiter: "/", includesTrailingDelimiter: true), "includesTrailingDelimiter"),
        (StorageObjectQuery(delimiter: "/", includesFoldersAsPrefixes: true), "includesFoldersAsPrefixes"),
    ])
    func firebaseRefusesWhatItsListingsCannotDo(query: StorageObjectQuery, option: String) async throws {
        let server = try Self.server { _ in "{}" }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .firebase(server.baseURL))
        let error = await #expect(throws: StorageError.self) { try await Self.drain(storage.objects(query)) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(option) == true, "\(error?.message ?? "")")
        #expect(server.acceptedConnections == 0)
        // What maps exactly goes through.
        let fine = StorageObjectQuery(prefix: "a/", delimiter: "/", pageSize: 10)
        #expect(try await Self.drain(storage.objects(fine)).isEmpty)
    }

    @Test(arguments: [
        (StorageObjectQuery(prefix: "logs/2024-"), #"{"items":[\#(item("logs/2023-12"))]}"#, "logs/2023-12"),
        (StorageObjectQuery(startOffset: "m"), #"{"items":[\#(item("l"))]}"#, "startOffset"),
        (StorageObjectQuery(endOffset: "m"), #"{"items":[\#(item("m"))]}"#, "endOffset"),
        // Grouped by the delimiter, a deeper name is no item, and a prefix ends at its first delimiter.
        (StorageObjectQuery(prefix: "a/", delimiter: "/"), #"{"items":[\#(item("a/b/c"))]}"#, "a/b/c"),
        (StorageObjectQuery(prefix: "a/", delimiter: "/"), #"{"prefixes":["a/b/c/"]}"#, "a/b/c/"),
        (StorageObjectQuery(prefix: "a/", delimiter: "/"), #"{"prefixes":["a/"]}"#, "\"a/\""),
        (StorageObjectQuery(prefix: "a/", delimiter: "/"), #"{"prefixes":["b/"]}"#, "b/"),
        // A flat listing has no prefixes.
        (StorageObjectQuery(), #"{"prefixes":["x/"]}"#, "without a delimiter"),
        // A GCS item without its resource would pass for an empty object.
        (StorageObjectQuery(), #"{"items":[{"name":"a"}]}"#, "resource"),
    ])
    func answersOutsideTheQueryAreProtocolViolations(
        query: StorageObjectQuery, json: String, named: String
    ) async throws {
        let server = try Self.server { _ in json }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let error = await #expect(throws: StorageError.self) { try await Self.drain(storage.objects(query)) }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    /// A server that sends the listing round a cycle of page tokens (A, B, A, …) would be
    /// listed for ever: every way of listing stops at the first token seen twice.
    @Test func aRepeatedPageTokenEndsEveryListingInsteadOfLooping() async throws {
        let server = try Self.server { token in
            let next = token == "A" ? "B" : "A"
            let name = "x/" + (token ?? "first")
            return #"{"items":[\#(Self.item(name))],"nextPageToken":"\#(next)"}"#
        }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))

        var seen: [String] = []
        let error = await #expect(throws: StorageError.self) {
            for try await entry in storage.objects() { seen.append(entry.name) }
        }
        #expect(error?.code == .protocolViolation)
        #expect(seen == ["x/first", "x/A"], "each page once, then the error")

        let pagesError = await #expect(throws: StorageError.self) {
            for try await _ in storage.reference(withPath: "x").pages(maxResults: 10) {}
        }
        #expect(pagesError?.code == .protocolViolation)
        let allError = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "x").listAll()
        }
        #expect(allError?.code == .protocolViolation)

        // One page asked for at a token, answered with that token again.
        let again = await #expect(throws: StorageError.self) {
            _ = try await storage.objects().page(token: "B")  // answers "A"
            _ = try await storage.objects().page(token: "A")  // answers "B": fine
            let looping = try Self.server { token in #"{"nextPageToken":"\#(token ?? "t")"}"# }
            defer { looping.stop() }
            _ = try await Storage(bucket: "demo", endpoint: .gcs(looping.baseURL)).objects().page(token: "t")
        }
        #expect(again?.code == .protocolViolation)
    }

    @Test func entriesComeInNameOrderWithPrefixesOnceAndFoldersForSlashPrefixes() async throws {
        let server = try Self.server { token in
            switch token {
            case nil:
                #"{"items":[\#(Self.item("p/b")),\#(Self.item("p/d/"))],"prefixes":["p/d/","p/a/"],"nextPageToken":"2"}"#
            default:
                // A prefix may come back on the next page; it is given once.
                #"{"items":[\#(Self.item("p/e"))],"prefixes":["p/d/"]}"#
            }
        }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let query = StorageObjectQuery(prefix: "p/", delimiter: "/", includesTrailingDelimiter: true)
        let entries = try await Self.drain(storage.objects(query))
        #expect(entries.map(\.name) == ["p/a/", "p/b", "p/d/", "p/d/", "p/e"])
        guard case .prefix(_, let folder?) = entries[0], case .object(let placeholder, let metadata?) = entries[2],
            case .prefix = entries[3]
        else {
            Issue.record("unexpected entries \(entries)")
            return
        }
        #expect(folder == storage.reference(objectName: "p/a"))
        #expect(placeholder == storage.reference(objectName: "p/d/"))
        #expect(metadata.size == 1 && metadata.generation == 1)
        // Page by page, the pages are as the server sent them, merged in name order.
        let pages = try await storage.objects(query).pages.reduce(into: [[String]]()) {
            $0.append($1.entries.map(\.name))
        }
        #expect(pages == [["p/a/", "p/b", "p/d/", "p/d/"], ["p/d/", "p/e"]])
    }

    @Test func aPrefixNotEndingInSlashHasNoFolder() async throws {
        let server = try Self.server { _ in #"{"prefixes":["logs-2024-"]}"# }
        defer { server.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(server.baseURL))
        let entries = try await Self.drain(storage.objects(StorageObjectQuery(prefix: "logs-", delimiter: "-")))
        #expect(entries == [.prefix("logs-2024-", folder: nil)])
    }
}
