import Foundation
import Testing

@testable import StorageEmulator

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Emulator HTTP server with URLSession", .timeLimit(.minutes(10)))
struct URLSessionInteropTests {
    @Test func putOf20MiBIsReadCompletely() async throws {
        try await withServer(CountingApplication()) { _, port in
            let body = Data(repeating: 0x5A, count: 20 * 1024 * 1024)
            var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/upload?name=big")))
            request.httpMethod = "PUT"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await session.upload(for: request, from: body)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == String(20 * 1024 * 1024))
            // A second request reuses or reopens a connection; either way it must work.
            let (again, _) = try await session.upload(for: request, from: Data("abc".utf8))
            #expect(String(decoding: again, as: UTF8.self) == "3")
        }
    }
}
