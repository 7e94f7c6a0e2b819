import Foundation
import Testing

@testable import StorageEmulator

/// A listing page must cost in proportion to the page, not to the bucket: the stores keep their
/// objects in an ordered index that a page seeks into (its prefix, its page token, past each
/// common prefix it collapses). Counted in objects visited, not in time.
@Suite("Listing cost")
struct ListingCostTests {
    /// 400 objects: `a/000`…`a/299`, `b/x`, `m/000`…`m/098`.
    static func fill(_ store: any ObjectStore) throws {
        _ = try store.createBucket("bkt")
        for index in 0..<300 { try put(store, "bkt", "a/" + Self.number(index), []) }
        try put(store, "bkt", "b/x", [])
        for index in 0..<99 { try put(store, "bkt", "m/" + Self.number(index), []) }
    }

    static func number(_ value: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// Lists one page; returns its names (prefixes marked with a trailing `*`), its token and the objects visited.
    static func page(_ harness: Harness, _ query: String) -> (names: [String], token: String?, visited: Int) {
        let before = harness.app.objectsVisitedByListings
        let response = harness.send("GET", "/storage/v1/b/bkt/o?" + query)
        #expect(response.status == 200, "\(query)")
        let items = (response.json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        let prefixes = (response.json["prefixes"] as? [String] ?? []).map { $0 + "*" }
        return (
            items + prefixes, response.json["nextPageToken"] as? String,
            harness.app.objectsVisitedByListings - before
        )
    }

    @Test("a page with a prefix, a page token or a delimiter visits its own entries and at most one more")
    func pagesSeek() throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let stores: [(String, any ObjectStore)] = [
            ("memory", MemoryObjectStore()), ("directory", try DirectoryObjectStore(root: parent)),
        ]
        for (kind, store) in stores {
            try Self.fill(store)
            let harness = try Harness(store: store)
            // The last names of the bucket: the 300 names before them are never looked at.
            let first = Self.page(harness, "prefix=m%2F&maxResults=5")
            #expect(first.names == ["m/000", "m/001", "m/002", "m/003", "m/004"], "\(kind)")
            #expect(first.visited <= 6, "\(kind): \(first.visited) objects visited for a page of 5")
            let token = try #require(first.token, "\(kind)")
            let second = Self.page(harness, "prefix=m%2F&maxResults=5&pageToken=\(URLText.encodeComponent(token))")
            #expect(second.names == ["m/005", "m/006", "m/007", "m/008", "m/009"], "\(kind)")
            #expect(second.visited <= 6, "\(kind): \(second.visited) objects visited for the second page")
            // Common prefixes are skipped whole, however many names they hold.
            let top = Self.page(harness, "delimiter=%2F&maxResults=3")
            #expect(top.names == ["a/*", "b/*", "m/*"], "\(kind)")
            #expect(top.visited <= 4, "\(kind): \(top.visited) objects visited for 3 prefixes")
            let afterA = Self.page(harness, "delimiter=%2F&maxResults=1&pageToken=\(Self.token("p:a/"))")
            #expect(afterA.names == ["b/*"], "\(kind)")
            #expect(afterA.visited <= 2, "\(kind): \(afterA.visited) objects visited after a prefix token")
            let none = Self.page(harness, "prefix=zzz")
            #expect(none.names.isEmpty && none.token == nil, "\(kind)")
            #expect(none.visited == 0, "\(kind): \(none.visited) objects visited for an empty prefix range")
        }
    }

    @Test("pages of versions and pages from a startOffset visit their own entries and at most one more")
    func versionsAndOffsetsSeek() throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let stores: [(String, any ObjectStore)] = [
            ("memory", MemoryObjectStore()), ("directory", try DirectoryObjectStore(root: parent)),
        ]
        for (kind, store) in stores {
            // A versioned bucket: `a/000`…`a/149` and `m/000`…`m/029` twice each, `z` forty times.
            _ = try store.createBucket("bkt")
            _ = try store.updateBucket("bkt") { $0.versioning = true }
            for _ in 0..<2 {
                for index in 0..<150 { try put(store, "bkt", "a/" + Self.number(index), []) }
                for index in 0..<30 { try put(store, "bkt", "m/" + Self.number(index), []) }
            }
            for _ in 0..<40 { try put(store, "bkt", "z", []) }
            let harness = try Harness(store: store)
            let all = store.versions(bucket: "bkt")
            #expect(all.count == 2 * 180 + 40, "\(kind)")

            // Versions under a prefix near the end of the bucket: the 300 versions before it are never looked at.
            let first = Self.page(harness, "versions=true&prefix=m%2F&maxResults=5")
            #expect(first.names == ["m/000", "m/000", "m/001", "m/001", "m/002"], "\(kind)")
            #expect((5...6).contains(first.visited), "\(kind): \(first.visited) versions visited for a page of 5")
            // The token resumes after (name, generation): mid-name, with the second version of m/002.
            let token = try #require(first.token, "\(kind)")
            let second = Self.page(
                harness, "versions=true&prefix=m%2F&maxResults=5&pageToken=\(URLText.encodeComponent(token))")
            #expect(second.names == ["m/002", "m/003", "m/003", "m/004", "m/004"], "\(kind)")
            #expect((5...6).contains(second.visited), "\(kind): \(second.visited) versions visited for the second page")
            // Deep into the forty versions of one name, a page still starts at its own generation.
            let zGenerations = all.filter { $0.name == "z" }.map(\.generation)
            let deepQuery = "versions=true&maxResults=3&pageToken=\(Self.token("v:\(zGenerations[29]):z"))"
            let deep = Self.page(harness, deepQuery)
            #expect(deep.names == ["z", "z", "z"], "\(kind)")
            #expect((3...4).contains(deep.visited), "\(kind): \(deep.visited) versions visited resuming at z's 31st")
            let deepGenerations =
                harness.send("GET", "/storage/v1/b/bkt/o?" + deepQuery).json["items"] as? [[String: Any]]
            #expect(
                deepGenerations?.compactMap { $0["generation"] as? String } == zGenerations[30..<33].map { "\($0)" },
                "\(kind)")

            // A startOffset seeks: the 200 names before it are never looked at; an endOffset stops the scan.
            let offset = Self.page(harness, "startOffset=a%2F100&maxResults=4")
            #expect(offset.names == ["a/100", "a/101", "a/102", "a/103"], "\(kind)")
            #expect((4...5).contains(offset.visited), "\(kind): \(offset.visited) objects visited from a startOffset")
            let bounded = Self.page(harness, "startOffset=a%2F100&endOffset=a%2F103")
            #expect(bounded.names == ["a/100", "a/101", "a/102"] && bounded.token == nil, "\(kind)")
            #expect((3...4).contains(bounded.visited), "\(kind): \(bounded.visited) objects visited between offsets")
            // Both at once: versions from a startOffset.
            let both = Self.page(harness, "versions=true&startOffset=a%2F140&maxResults=3")
            #expect(both.names == ["a/140", "a/140", "a/141"], "\(kind)")
            #expect((3...4).contains(both.visited), "\(kind): \(both.visited) versions visited from a startOffset")
        }
    }

    static func token(_ text: String) -> String {
        URLText.encodeComponent(Data(text.utf8).base64EncodedString())
    }

    @Test("walks from any key agree with a sorted list through thousands of inserts, replacements and removals")
    func indexMatchesSortedReference() {
        var generator = SeededGenerator(seed: 42)
        // Few distinct bytes (0xFF included, for prefixEnd's carry) make shared prefixes and repeats common.
        let alphabet: [UInt8] = [0x2F, 0x61, 0x62, 0xC3, 0xA9, 0xFF]
        func randomKey() -> ObjectKey {
            let length = Int.random(in: 1...5, using: &generator)
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
            return ObjectKey(bytes: bytes)
        }
        // Blocks of 8 keys: hundreds of keys make the index split, thin out and merge many times.
        var index = ObjectIndex<Int>(maxBlockCount: 8)
        var reference: [ObjectKey: Int] = [:]
        // The reference's keys, in no order, to remove one at random.
        var present: [ObjectKey] = []
        for step in 0..<8000 {
            // Mostly inserts (and replacements) at first, mostly removals later: the index grows past
            // a block, its blocks split, then thin out, merge and go.
            if Int.random(in: 0..<8000, using: &generator) < step, !present.isEmpty {
                present.swapAt(Int.random(in: 0..<present.count, using: &generator), present.count - 1)
                let key = present.removeLast()
                index[key] = nil
                reference[key] = nil
            } else {
                let key = randomKey()
                if reference[key] == nil { present.append(key) }
                index[key] = step
                reference[key] = step
            }
            guard step % 1000 == 999 else { continue }
            let sorted = reference.keys.sorted()
            #expect(index.count == sorted.count)
            var all: [ObjectKey] = []
            index.walk(from: ObjectKey(bytes: [])) { key, _ in
                all.append(key)
                return .next
            }
            #expect(all == sorted, "every key once, in order")
            for _ in 0..<10 {
                let start = randomKey()
                var walked: [ObjectKey] = []
                index.walk(from: start) { key, value in
                    #expect(reference[key] == value)
                    walked.append(key)
                    return walked.count == 8 ? .stop : .next
                }
                #expect(walked == Array(sorted.filter { !($0 < start) }.prefix(8)), "from \(start.bytes)")
                // Seeking past everything under a prefix lands on the first key beyond them.
                var landed: ObjectKey?
                var seeked = false
                index.walk(from: start) { key, _ in
                    if seeked {
                        landed = key
                        return .stop
                    }
                    seeked = true
                    return key.prefixEnd.map { .seek($0) } ?? .stop
                }
                if let first = sorted.first(where: { !($0 < start) }), let end = first.prefixEnd {
                    #expect(landed == sorted.first { !($0 < end) })
                }
            }
        }
    }
}

/// A deterministic random number generator (SplitMix64), so every run does the same operations.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
