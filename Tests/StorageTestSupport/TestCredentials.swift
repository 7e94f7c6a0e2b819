package import Foundation

/// The TEST-ONLY keys of Tests/TestCredentials (see its README).
package enum TestCredentials {
    /// Tests/TestCredentials, found from this file's place in the source tree.
    package static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TestCredentials")

    /// The file `name` of Tests/TestCredentials.
    package static func url(_ name: String) -> URL {
        directory.appendingPathComponent(name)
    }

    /// The text of the file `name` of Tests/TestCredentials.
    package static func text(_ name: String) throws -> String {
        try String(contentsOf: url(name), encoding: .utf8)
    }
}
