package import Foundation

extension ScriptedHTTPServer {
    /// A complete `200 OK` answer carrying `body`, with `extra` header lines (each ending in
    /// `\r\n`) before the blank line: what a script writes for a plain success.
    package static func ok(_ body: String = "ok", extra: String = "") -> String {
        "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }

    /// A sparse file of `size` zero bytes in a new temporary directory: instant to create, and
    /// read from the page cache, so a large upload body costs no disk.
    package static func sparseFile(size: Int64) throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("scripted-http-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("sparse.bin")
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        return url
    }
}
