import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// A chunked request body with broken framing gets a `400` with `Connection: close`,
/// not a silent close that a client would take for a network failure.
@Suite("Malformed chunked bodies", .serialized, .timeLimit(.minutes(10)))
struct MalformedChunkedBodyTests {
    @Test(
        "the emulator answers 400 and closes",
        arguments: [
            "zz\r\nabc\r\n0\r\n\r\n",  // a chunk size without hexadecimal digits
            "3\r\nabcX\r\n0\r\n\r\n",  // chunk data not followed by CRLF
            "ffffffffffffffffff\r\n",  // a chunk size beyond Int64
            "3\r\nabc\r\n0\r\nbad\n\r\n",  // a trailer line ending in a bare LF
            "3\nabc\r\n0\r\n\r\n",  // a bare LF after the chunk size
        ])
    func emulatorAnswers400(body: String) async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let port = emulator.port
        let response = try await onThread {
            let client = try RawClient(port: port)
            try client.send(
                "POST /upload/storage/v1/b/bkt/o?uploadType=media&name=x HTTP/1.1\r\nHost: h\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n" + body)
            let response = try client.readResponse()
            _ = try client.readToEOF()
            return response
        }
        #expect(response.status == 400)
        #expect(response.headers["Connection"] == "close")
        #expect(response.text.contains("chunked"))
    }

    @Test("an application that gives up on a malformed body without answering still yields 400")
    func serverAnswers400() async throws {
        let application = ClosureApplication { request, _ in
            _ = try? request.readWholeBody(limit: 1024)
        }
        let response = try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
                let response = try client.readResponse()
                _ = try client.readToEOF()
                return response
            }
        }
        #expect(response.status == 400)
        #expect(response.headers["Connection"] == "close")
    }
}
