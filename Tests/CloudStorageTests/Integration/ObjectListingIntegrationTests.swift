import FakeGCSServer
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``Storage/objects(_:)`` with each listing option, against the built-in emulator and
/// fake-gcs-server. The options fake-gcs-server lacks are listed in ``Option/onFakeGCS``.
@Suite("Object listings against servers", .timeLimit(.minutes(10)))
struct ObjectListingIntegrationTests {
    enum Server: String, Sendable, CustomTestStringConvertible {
        case fakeGCS, emulator
        var testDescription: String { rawValue }
    }

    enum Option: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case flatUnderAnyPrefix, slashDelimiter, anyDelimiter, matchGlob, offsets, trailingDelimiter, versions
        case pageSize, foldersAsPrefixes
        var testDescription: String { rawValue }

        /// What fake-gcs-server implements: everything but `matchGlob`, which it ignores (it lists
        /// every name), so that case runs against the emulator only. It also lists a name's
        /// versions in no set order, so only the emulator's order is checked.
        static let onFakeGCS = Option.allCases.filter { $0 != .matchGlob }
    }

    static let names = [
        "logs/2023-12", "logs/2024-01", "logs/2024-02/a", "logs/2024-02/b/c", "logs/2025", "dir/", "dir/x",
    ]

    /// A fresh versioned bucket holding ``names`` (each holding its name's bytes) on `server`.
    static func withBucket(_ server: Server, _ body: (Storage) async throws -> Void) async throws {
        let bucket = TestSupport.bucketName("list")
        let base: URL
        var emulator: StorageEmulator?
        switch server {
        case .fakeGCS: base = try await FakeGCSServer.shared().baseURL
        case .emulator:
            let started = try StorageEmulator.start(StorageEmulator.Configuration())
            emulator = started
            base = started.baseURL
        }
        defer { emulator?.stop() }
        var request = URLRequest(url: base.appendingPathComponent("storage/v1/b"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: ["name": bucket, "versioning": ["enabled": true]])
        let (_, response) = try await URLSession.shared.data(for: request)
        try #require((response as? HTTPURLResponse)?.statusCode == 200)
        let storage = Storage(bucket: bucket, endpoint: .gcs(base))
        for name in names { _ = try await storage.reference(objectName: name).putDataAsync(Data(name.utf8)) }
        try await body(storage)
    }

    static func names(_ storage: Storage, _ query: StorageObjectQuery) async throws -> [String] {
        var names: [String] = []
        for try await entry in storage.objects(query) {
            switch entry {
            case .object(let object, let metadata):
                // The metadata came with the listing, and is the object's own.
                #expect(metadata?.path == object.fullPath && metadata?.size == Int64(object.fullPath.utf8.count))
                names.append(object.fullPath)
            case .prefix(let prefix, _): names.append(prefix + "*")
            }
        }
        return names
    }

    @Test(arguments: Option.onFakeGCS)
    func onFakeGCS(option: Option) async throws {
        try await Self.withBucket(.fakeGCS) { try await Self.run(option, $0, on: .fakeGCS) }
    }

    @Test(arguments: Option.allCases)
    func onEmulator(option: Option) async throws {
        try await Self.withBucket(.emulator) { try await Self.run(option, $0, on: .emulator) }
    }

    static func run(_ option: Option, _ storage: Storage, on server: Server) async throws {
        switch option {
        case .flatUnderAnyPrefix:
            #expect(
                try await names(storage, StorageObjectQuery(prefix: "logs/2024-"))
                    == ["logs/2024-01", "logs/2024-02/a", "logs/2024-02/b/c"])
            #expect(try await names(storage, StorageObjectQuery()) == names.sorted())
        case .slashDelimiter:
            #expect(
                try await names(storage, StorageObjectQuery(prefix: "logs/", delimiter: "/"))
                    == ["logs/2023-12", "logs/2024-01", "logs/2024-02/*", "logs/2025"])
            let top = try await Array(storage.objects(StorageObjectQuery(delimiter: "/")).collect())
            #expect(
                top == [
                    .prefix("dir/", folder: storage.reference(objectName: "dir")),
                    .prefix("logs/", folder: storage.reference(objectName: "logs")),
                ])
        case .anyDelimiter:
            #expect(
                try await names(storage, StorageObjectQuery(prefix: "logs/", delimiter: "-"))
                    == ["logs/2023-*", "logs/2024-*", "logs/2025"])
        case .matchGlob:
            #expect(
                try await names(storage, StorageObjectQuery(matchGlob: "logs/*-0?")) == ["logs/2024-01"])
            #expect(
                try await names(storage, StorageObjectQuery(matchGlob: "logs/**/c")) == ["logs/2024-02/b/c"])
        case .offsets:
            #expect(
                try await names(storage, StorageObjectQuery(startOffset: "logs/2024-01", endOffset: "logs/2025"))
                    == ["logs/2024-01", "logs/2024-02/a", "logs/2024-02/b/c"])
        case .trailingDelimiter:
            #expect(try await names(storage, StorageObjectQuery(delimiter: "/")) == ["dir/*", "logs/*"])
            #expect(
                try await names(storage, StorageObjectQuery(delimiter: "/", includesTrailingDelimiter: true))
                    == ["dir/", "dir/*", "logs/*"])
        case .versions:
            let reference = storage.reference(objectName: "dir/x")
            let second = try await reference.putDataAsync(Data("dir/y".utf8))
            var generations: [Int64] = []
            var contents: [Data] = []
            for try await case .object(let object, let metadata?) in storage.objects(
                StorageObjectQuery(prefix: "dir/x", includesVersions: true))
            {
                // Each listed version's reference is pinned to it, and reads that version's bytes.
                #expect(object == reference.atGeneration(metadata.generation))
                #expect(object.generation != nil)
                generations.append(try #require(metadata.generation))
                contents.append(try await object.data(maxSize: 100))
            }
            #expect(Set(contents) == [Data("dir/x".utf8), Data("dir/y".utf8)])
            #expect(Set(generations) == Set(generations.count == 2 ? generations : []))
            #expect(generations.contains(try #require(second.generation)))
            if server == .emulator {
                // By name then generation, as Cloud Storage lists them; fake-gcs-server's order is its map's.
                #expect(generations == generations.sorted())
            }
            #expect(try await names(storage, StorageObjectQuery(prefix: "dir/x")).count == 1)
        case .pageSize:
            let pages = try await storage.objects(StorageObjectQuery(prefix: "logs/", pageSize: 2)).pages.collect()
            #expect(pages.map(\.entries.count) == [2, 2, 1])
            // A page token handed out and brought back continues the listing.
            let listing = storage.objects(StorageObjectQuery(prefix: "logs/", pageSize: 3))
            let first = try await listing.page()
            let token: String = try #require(first.nextPageToken)
            let second = try await listing.page(token: token)
            #expect((first.entries + second.entries).map(\.name) == names.filter { $0.hasPrefix("logs/") }.sorted())
            #expect(second.nextPageToken == nil)
        case .foldersAsPrefixes:
            // A flat-namespace bucket has no folders: the same listing as without the option.
            #expect(
                try await names(storage, StorageObjectQuery(delimiter: "/", includesFoldersAsPrefixes: true))
                    == ["dir/*", "logs/*"])
        }
    }
}

extension AsyncSequence where Failure == StorageError {
    /// Every element, in order.
    func collect() async throws(StorageError) -> [Element] {
        var all: [Element] = []
        for try await element in self { all.append(element) }
        return all
    }
}
