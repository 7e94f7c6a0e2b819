/// An HTTP version as written on the wire, `HTTP/<major>.<minor>`.
package struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    package var major: Int
    package var minor: Int

    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `HTTP/1.1`.
    package static let http11 = HTTPVersion(major: 1, minor: 1)
    /// `HTTP/1.0`.
    package static let http10 = HTTPVersion(major: 1, minor: 0)

    package var description: String { "HTTP/\(major).\(minor)" }
}
