import SystemCalls

/// PEM-encoded material (certificates or a private key), given as bytes or as a file path.
///
/// ```swift
/// let roots = TLSPEMSource.file("/etc/my-company/ca.pem")
/// let inline = TLSPEMSource.bytes(Array(pemString.utf8))
/// ```
public enum TLSPEMSource: Sendable, Hashable {
    /// The PEM text itself.
    case bytes([UInt8])
    /// A file holding the PEM text, read when a ``TLSContext`` is created.
    case file(String)

    /// Largest PEM file accepted; certificate bundles are far smaller, and a bound keeps a
    /// wrong path (a device, a huge file) from exhausting memory.
    static let maximumFileSize = 16 << 20

    /// The PEM bytes. Blocking for ``file(_:)`` (reads the file).
    ///
    /// - Parameter what: Names the material in error messages ("trust roots", "private key").
    /// - Throws: ``TLSError/Kind-swift.struct/invalidConfiguration`` when the file cannot be read.
    func load(_ what: String) throws(TLSError) -> [UInt8] {
        switch self {
        case .bytes(let bytes):
            return bytes
        case .file(let path):
            return try Self.readFile(path, what)
        }
    }

    private static func readFile(_ path: String, _ what: String) throws(TLSError) -> [UInt8] {
        let fd: Int32
        do {
            fd = try SystemCall.open(path, [.readOnly, .closeOnExec])
        } catch {
            throw TLSError(
                .invalidConfiguration, "cannot open \(what) file \(path): \(error.reason)",
                systemError: error.errno)
        }
        defer { try? SystemCall.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let read = chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemCallError) in try SystemCall.read(fd, into: buffer) }
            }
            let count: Int
            do {
                count = try read.get()
            } catch {
                throw TLSError(
                    .invalidConfiguration, "cannot read \(what) file \(path): \(error.reason)",
                    systemError: error.errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maximumFileSize {
                throw TLSError(.invalidConfiguration, "\(what) file \(path) is larger than \(maximumFileSize) bytes")
            }
        }
    }
}
