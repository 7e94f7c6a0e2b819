import Foundation
import HTTPTestServers
import StorageTestSupport
import Synchronization
import SystemCalls
import Testing

@testable import CloudStorage
@testable import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// Over TLS the native transport reads an upload's file with `pread` into the connection's
/// reused buffer and encrypts from there: the bytes sent are the file's, the engine's inline
/// checksum sees each of them, and a file that shrinks meanwhile ends the request in the
/// file's own early-end error.
@Suite("Uploads of files over TLS", .timeLimit(.minutes(10)))
struct TLSFileUploadTests {
    /// A file of `count` test bytes, and its bytes.
    static func file(count: Int, seed: UInt64) throws -> (URL, Data) {
        let payload = Data(testBytes(count: count, seed: seed))
        return (try TestSupport.file(containing: payload), payload)
    }

    @Test func anUploadOverTLSHashesEveryByteItSends() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let (url, payload) = try Self.file(count: 3 * 1024 * 1024 + 123, seed: 10)
        let file = try ReadOnlyFile(path: url.path)
        let checksum = InlineChecksum(size: Int64(payload.count))
        let body = HTTPRequestBody(segments: [
            .fileRegion(HashingBodyFile(file: file, checksum: checksum), offset: 0, length: Int64(payload.count))
        ])
        let response = try await TLSTestPKI.transport().execute(
            HTTPRequest(method: "PUT", url: server.url(), body: body), progress: nil)
        var crc = CRC32C()
        crc.update(payload)
        #expect(String(decoding: response.body, as: UTF8.self) == "\(payload.count) \(crc.value)")
        // Every byte was hashed as it passed: nothing is left to read for the checksum.
        #expect(checksum.valueIfComplete == crc.value)
    }

    /// A body file that truncates itself to 4096 bytes after its first read.
    final class ShrinkingFile: HTTPBodyFile {
        let file: ReadOnlyFile
        let shrunk = Mutex(false)
        var descriptor: Int32 { file.descriptor }

        init(file: ReadOnlyFile) {
            self.file = file
        }

        func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
            try file.readExactly(into: buffer, count: count, at: offset)
            let first = shrunk.withLock { shrunk in
                defer { shrunk = true }
                return !shrunk
            }
            if first { _ = truncate(file.path, 4096) }
        }

        func endedEarlyError(at end: Int64) -> any Error { file.endedEarlyError(at: end) }
        func readFailedError(errno code: Int32) -> any Error { file.readFailedError(errno: code) }
    }

    @Test func aFileThatShrinksDuringAnUploadOverTLSEndsInTheFileChangedError() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let (url, payload) = try Self.file(count: 2 * 1024 * 1024, seed: 11)
        let file = try ReadOnlyFile(path: url.path)
        let body = HTTPRequestBody(segments: [
            .fileRegion(ShrinkingFile(file: file), offset: 0, length: Int64(payload.count))
        ])
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await TLSTestPKI.transport().execute(
                HTTPRequest(method: "PUT", url: server.url(), body: body), progress: nil)
        }
        #expect(error?.kind == .bodySourceFailed)
        let changed = error?.underlying as? StorageError
        #expect(changed?.code == .fileChanged)
        // The read after the one that shrank the file finds nothing where it starts (one slice in).
        #expect(
            changed?.message.contains("ended at byte \(NativeExchange.encryptedSlice)") == true,
            "\(String(describing: changed))")
    }
}
