import Dispatch
import Foundation
import HTTP1
import Synchronization
import Testing

@testable import StorageEmulator

/// Concurrent conditional writes over real HTTP: the check of `ifGenerationMatch` and friends and the
/// write are one step, so of writers conditioned on the same version exactly one wins.
///
/// A ``WriteBarrier`` holds every racing request just before the application hands its write to the
/// store, until all of them are there: the race is certain, not a matter of timing. (When the
/// conditions were checked before that point, every writer passed them and all succeeded.)
@Suite("Conditional writes are atomic", .timeLimit(.minutes(10)))
struct AtomicPreconditionTests {
    static let writers = 16

    enum Backing: String, CaseIterable, Sendable { case memory, directory }

    @Test("Uploads with the same ifGenerationMatch: one wins, the rest get 412", arguments: Backing.allCases)
    func sameGenerationOverwrites(_ backing: Backing) async throws {
        try await withEmulator(backing) { harness, barrier, port in
            let start = try #require(generation(upload(port, "obj", Array("start".utf8))))
            barrier.arm(Self.writers)
            let responses = try await race(Self.writers) { index in
                try upload(port, "obj", Self.bytes(index), query: "&ifGenerationMatch=\(start)")
            }
            try expectOneWinner(responses, harness: harness, backing)
        }
    }

    @Test("Creations with ifGenerationMatch=0: one creates, the rest get 412", arguments: Backing.allCases)
    func createOnly(_ backing: Backing) async throws {
        try await withEmulator(backing) { harness, barrier, port in
            barrier.arm(Self.writers)
            let responses = try await race(Self.writers) { index in
                try upload(port, "obj", Self.bytes(index), query: "&ifGenerationMatch=0")
            }
            try expectOneWinner(responses, harness: harness, backing)
        }
    }

    @Test(
        "Resumable finalizes with the same ifGenerationMatch: one wins, the losers' sessions end",
        arguments: Backing.allCases)
    func resumableFinalizes(_ backing: Backing) async throws {
        try await withEmulator(backing) { harness, barrier, port in
            let start = try #require(generation(upload(port, "obj", Array("start".utf8))))
            var sessions: [String] = []
            for _ in 0..<Self.writers {
                let response = try exchange(
                    port, "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=obj&ifGenerationMatch=\(start)",
                    headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
                try #require(response.status == 200)
                let location = try #require(response.headers["Location"])
                let path = try #require(URLComponents(string: location)).percentEncodedPath
                let query = try #require(URLComponents(string: location)?.percentEncodedQuery)
                sessions.append(path + "?" + query)
            }
            let targets = sessions
            barrier.arm(Self.writers)
            let responses = try await race(Self.writers) { index in
                let bytes = Self.bytes(index)
                return try exchange(
                    port, "PUT", targets[index],
                    headers: [("Content-Range", "bytes 0-\(bytes.count - 1)/\(bytes.count)")],
                    body: bytes)
            }
            try expectOneWinner(responses, harness: harness, backing)
            // A failed condition at finalize discarded the staged bytes: the session is over.
            for (index, response) in responses.enumerated() where response.status == 412 {
                let status = try exchange(port, "PUT", targets[index], headers: [("Content-Range", "bytes */*")])
                #expect(status.status == 404, "\(backing)")
            }
        }
    }

    @Test("Deletes with ifGenerationMatch racing an overwrite with it: one of them wins", arguments: Backing.allCases)
    func deletesRaceAnOverwrite(_ backing: Backing) async throws {
        try await withEmulator(backing) { harness, barrier, port in
            let start = try #require(generation(upload(port, "obj", Array("start".utf8))))
            barrier.arm(Self.writers)
            // Writer 0 overwrites; the others delete.
            let responses = try await race(Self.writers) { index in
                index == 0
                    ? try upload(port, "obj", Self.bytes(0), query: "&ifGenerationMatch=\(start)")
                    : try exchange(port, "DELETE", "/storage/v1/b/bkt/o/obj?ifGenerationMatch=\(start)")
            }
            let winners = responses.indices.filter { responses[$0].status / 100 == 2 }
            #expect(winners.count == 1, "\(backing): \(responses.map(\.status))")
            // A loser saw the object replaced (412) or already deleted (404).
            #expect(responses.allSatisfy { [200, 204, 404, 412].contains($0.status) }, "\(backing)")
            if winners == [0] {
                #expect(harness.object("bkt", "obj") == Data(Self.bytes(0)), "\(backing)")
            } else {
                #expect(harness.store.record(bucket: "bkt", name: "obj") == nil, "\(backing)")
            }
        }
    }

    @Test(
        "Metadata updates with the same ifMetagenerationMatch: one applies, the rest get 412",
        arguments: Backing.allCases)
    func metadataUpdates(_ backing: Backing) async throws {
        try await withEmulator(backing) { harness, barrier, port in
            try #require(upload(port, "obj", Array("start".utf8)).status == 200)
            barrier.arm(Self.writers)
            let responses = try await race(Self.writers) { index in
                try exchange(
                    port, "PATCH", "/storage/v1/b/bkt/o/obj?ifMetagenerationMatch=1",
                    headers: [("Content-Type", "application/json")],
                    body: Array(#"{"metadata": {"writer": "\#(index)"}}"#.utf8))
            }
            let winners = responses.indices.filter { responses[$0].status == 200 }
            #expect(winners.count == 1, "\(backing): \(responses.map(\.status))")
            #expect(responses.allSatisfy { [200, 412].contains($0.status) }, "\(backing)")
            let record = try #require(harness.store.record(bucket: "bkt", name: "obj"))
            #expect(record.metageneration == 2, "\(backing)")
            #expect(record.attributes.metadata["writer"] == winners.first.map(String.init), "\(backing)")
        }
    }

    // MARK: Helpers

    static func bytes(_ writer: Int) -> [UInt8] {
        Array("bytes of writer \(writer)".utf8)
    }

    /// Exactly one 200, every other answer 412, and the object holds the winner's bytes.
    func expectOneWinner(_ responses: [RawClient.Response], harness: Harness, _ backing: Backing) throws {
        let winners = responses.indices.filter { responses[$0].status == 200 }
        #expect(winners.count == 1, "\(backing): \(responses.map(\.status))")
        #expect(responses.allSatisfy { [200, 412].contains($0.status) }, "\(backing)")
        let winner = try #require(winners.first)
        #expect(harness.object("bkt", "obj") == Data(Self.bytes(winner)), "\(backing)")
        let record = try #require(harness.store.record(bucket: "bkt", name: "obj"))
        #expect(generation(responses[winner]) == record.generation, "\(backing)")
    }

    /// Runs `body` with an emulator on `backing`, served over HTTP, whose writes pass `barrier`.
    func withEmulator(
        _ backing: Backing, _ body: (Harness, WriteBarrier, Int) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "atomic-preconditions-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: any ObjectStore =
            switch backing {
            case .memory: MemoryObjectStore()
            case .directory: try DirectoryObjectStore(root: directory)
            }
        let barrier = WriteBarrier()
        let harness = try Harness(store: store) { settings in
            settings.beforeStoreWrite = { barrier.arrive() }
        }
        try await withServer(harness.app) { _, port in
            try await body(harness, barrier, port)
        }
        #expect(!barrier.timedOut, "every racing writer reached the store")
    }

    /// Runs `count` blocking exchanges at once, each on a thread of its own.
    func race(
        _ count: Int, _ body: @escaping @Sendable (Int) throws -> RawClient.Response
    ) async throws -> [RawClient.Response] {
        try await withThrowingTaskGroup(of: (Int, RawClient.Response).self) { group in
            for index in 0..<count {
                group.addTask { (index, try await onThread { try body(index) }) }
            }
            var responses = [RawClient.Response?](repeating: nil, count: count)
            for try await (index, response) in group { responses[index] = response }
            return responses.compactMap { $0 }
        }
    }
}

/// One request on a connection of its own.
private func exchange(
    _ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
) throws -> RawClient.Response {
    let client = try RawClient(port: port)
    var head =
        "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    try client.send(Array((head + "\r\n").utf8) + body)
    return try client.readResponse(requestMethod: method)
}

private func upload(_ port: Int, _ name: String, _ bytes: [UInt8], query: String = "") throws -> RawClient.Response {
    try exchange(
        port, "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(name)\(query)",
        headers: [("Content-Type", "text/plain")], body: bytes)
}

/// The generation of an object resource in a response, if it has one.
private func generation(_ response: RawClient.Response) -> Int64? {
    let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
    return (json?["generation"] as? String).flatMap { Int64($0) }
}

/// Holds the writes that reach it, once armed for `count` of them, until all `count` have: then
/// they race for the store's lock. Unarmed, it lets writes through.
final class WriteBarrier: Sendable {
    private struct State {
        var expected = 0
        var arrived = 0
        var timedOut = false
    }

    private let state = Mutex(State())
    private let gate = DispatchSemaphore(value: 0)

    func arm(_ count: Int) {
        state.withLock { $0 = State(expected: count) }
    }

    /// Whether a writer gave up waiting: not every racing request reached the store.
    var timedOut: Bool { state.withLock { $0.timedOut } }

    func arrive() {
        let (held, releases) = state.withLock { state -> (Bool, Int) in
            guard state.expected > 0 else { return (false, 0) }
            state.arrived += 1
            guard state.arrived == state.expected else { return (true, 0) }
            defer { state.expected = 0 }
            return (false, state.expected - 1)
        }
        for _ in 0..<releases { gate.signal() }
        // A guard against a hang only: every racing request arrives at once, so the wait is short.
        if held, gate.wait(timeout: .now() + .seconds(60)) == .timedOut {
            state.withLock { $0.timedOut = true }
        }
    }
}
