package import Foundation

/// Payloads, files and servers for the SDK's and the command-line tool's test suites.
package enum TestSupport {
    /// Deterministic pseudo-random bytes, fast enough for 100 MiB in a debug build.
    package static func payload(size: Int, seed: UInt64) -> Data {
        var data = Data(count: size)
        var generator = SeededGenerator(seed: seed)
        data.withUnsafeMutableBytes { raw in
            let words = size / 8
            let wordPointer = raw.baseAddress!.assumingMemoryBound(to: UInt64.self)
            for index in 0..<words {
                wordPointer[index] = generator.next()
            }
            var tail = generator.next()
            for index in (words * 8)..<size {
                raw[index] = UInt8(truncatingIfNeeded: tail)
                tail >>= 8
            }
        }
        return data
    }

    /// A new directory under the system's temporary directory, for one test.
    package static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("cloudstorage-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes `data` to a new file named `name` in a new temporary directory.
    package static func file(named name: String = "payload.bin", containing data: Data) throws -> URL {
        let url = try temporaryDirectory().appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    /// The regular files below `directory`, by relative path, with their bytes.
    package static func files(below directory: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [:] }
        while let relative = enumerator.nextObject() as? String {
            let url = directory.appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                result[relative] = try Data(contentsOf: url)
            }
        }
        return result
    }

    /// A unique bucket name for one test.
    package static func bucketName(_ label: String = "t") -> String {
        "\(label)-\(UUID().uuidString.lowercased().prefix(13))"
    }

    /// Exact object names (`a//b`, `dir/`, `/lead`) and the neighbours a normalizing SDK confused
    /// them with, each with its bytes.
    package static let exactNames: [(name: String, bytes: String)] = [
        ("pfx//abs.txt", "doubled"), ("pfx/abs.txt", "single"), ("a//b", "a-b"), ("a/b", "not a//b"),
        ("dir/", "placeholder"), ("dir", "not dir/"), ("/lead", "leading"), ("lead", "not /lead"),
    ]
}
