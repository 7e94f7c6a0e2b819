import Foundation
import Synchronization
import SystemCalls
import Testing

@testable import CloudStorage
@testable import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// Over TLS the native transport encrypts an upload's file where it lies, from a map of it
/// (``MappedFileRegion``), instead of copying it into a buffer first: the bytes sent are still
/// the file's, the engine's inline checksum still sees each of them, and a file that shrinks
/// under the map ends the request in the file's own early-end error, never in a crash.
@Suite("Uploads from mapped files", .timeLimit(.minutes(10)))
struct MappedUploadTests {
    /// A file of `count` test bytes, and its bytes.
    static func file(count: Int, seed: UInt64) throws -> (URL, Data) {
        let payload = Data(testBytes(count: count, seed: seed))
        return (try TestSupport.file(containing: payload), payload)
    }

    /// Reads every byte of `bytes`, as a checksum or a cipher would.
    static func touch(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        bytes.reduce(0) { $0 &+ UInt64($1) }
    }

    @Test func aMapHoldsTheFilesBytesFromAnyOffset() throws {
        let (url, payload) = try Self.file(count: 3 * 65536 + 5, seed: 7)
        let file = try ReadOnlyFile(path: url.path)
        let region = try #require(MappedFileRegion(descriptor: file.descriptor, offset: 4097, length: 65536 * 2))
        #expect(Data(region.bytes) == payload[4097..<(4097 + 65536 * 2)])
        #expect(!region.faulted)
    }

    @Test func aFileTruncatedUnderTheMapReadsAsZerosAndMarksTheMap() throws {
        let (url, _) = try Self.file(count: 1 << 20, seed: 8)
        let file = try ReadOnlyFile(path: url.path)
        let region = try #require(MappedFileRegion(descriptor: file.descriptor, offset: 0, length: 1 << 20))
        #expect(truncate(url.path, 0) == 0)
        // Without the guard this read would kill the process with SIGBUS.
        #expect(Self.touch(region.bytes) == 0)
        #expect(region.faulted)
        // A region of its own has its own mark.
        let (other, _) = try Self.file(count: 8192, seed: 9)
        let intact = try ReadOnlyFile(path: other.path)
        let second = try #require(MappedFileRegion(descriptor: intact.descriptor, offset: 0, length: 8192))
        #expect(Self.touch(second.bytes) > 0)
        #expect(!second.faulted)
    }

    @Test func aMappedUploadHashesEveryByteItSends() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let (url, payload) = try Self.file(count: 3 * 1024 * 1024 + 123, seed: 10)
        let file = try ReadOnlyFile(path: url.path)
        let checksum = InlineChecksum(size: Int64(payload.count))
        let body = HTTPRequestBody(segments: [
            .fileRegion(HashingBodyFile(file: file, checksum: checksum), offset: 0, length: Int64(payload.count))
        ])
        let response = try await TLSTestPKI.transport().execute(
            HTTPRequest(method: "PUT", url: NativeTLSTransportTests.url(server), body: body), progress: nil)
        var crc = CRC32C()
        crc.update(payload)
        #expect(String(decoding: response.body, as: UTF8.self) == "\(payload.count) \(crc.value)")
        // Every byte was hashed as it passed: nothing is left to read for the checksum.
        #expect(checksum.valueIfComplete == crc.value)
    }

    /// A body file that truncates itself the first time the transport reports mapped bytes,
    /// then reads them, as the inline checksum does.
    final class ShrinkingFile: HTTPBodyFile {
        let file: ReadOnlyFile
        let shrunk = Mutex(false)
        var descriptor: Int32 { file.descriptor }

        init(file: ReadOnlyFile) {
            self.file = file
        }

        func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
            try file.readExactly(into: buffer, count: count, at: offset)
        }

        func observe(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
            let first = shrunk.withLock { shrunk in
                defer { shrunk = true }
                return !shrunk
            }
            if first { _ = truncate(file.path, 4096) }
            _ = MappedUploadTests.touch(bytes)
        }

        func endedEarlyError(at end: Int64) -> any Error { file.endedEarlyError(at: end) }
        func readFailedError(errno code: Int32) -> any Error { file.readFailedError(errno: code) }
    }

    @Test func aFileThatShrinksUnderTheMapEndsInTheFileChangedError() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let (url, payload) = try Self.file(count: 2 * 1024 * 1024, seed: 11)
        let file = try ReadOnlyFile(path: url.path)
        let body = HTTPRequestBody(segments: [
            .fileRegion(ShrinkingFile(file: file), offset: 0, length: Int64(payload.count))
        ])
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await TLSTestPKI.transport().execute(
                HTTPRequest(method: "PUT", url: NativeTLSTransportTests.url(server), body: body), progress: nil)
        }
        #expect(error?.kind == .bodySourceFailed)
        let changed = error?.underlying as? StorageError
        #expect(changed?.code == .fileChanged)
        // Noticed at the slice that read the lost pages (by the map's mark and the file's size),
        // not only by the short `pread` of the region's last slice.
        #expect(changed?.message.contains("ended at byte 4096") == true)
    }
}
