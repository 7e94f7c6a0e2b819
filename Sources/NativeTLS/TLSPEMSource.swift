#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            throw TLSError(
                .invalidConfiguration, "cannot open \(what) file \(path): \(String(cString: strerror(code)))",
                systemError: code)
        }
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw TLSError(
                    .invalidConfiguration, "cannot read \(what) file \(path): \(String(cString: strerror(code)))",
                    systemError: code)
            }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maximumFileSize {
                throw TLSError(.invalidConfiguration, "\(what) file \(path) is larger than \(maximumFileSize) bytes")
            }
        }
    }
}
