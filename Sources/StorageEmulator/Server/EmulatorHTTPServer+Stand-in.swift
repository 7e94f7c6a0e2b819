// STAND-IN — DELETE ON MERGE. The real `EmulatorHTTPServer` (socket server)
// is being written in another worktree; this file only keeps
// `StorageEmulator.swift` compiling against its API until it lands.

/// Stand-in for the emulator's HTTP/1.1 server: same API, never starts.
package final class EmulatorHTTPServer: Sendable {
    /// Server limits (stand-in: none).
    package struct Limits: Sendable {
        package init() {}
    }

    /// Why the stand-in cannot start.
    package struct NotAvailable: Error, CustomStringConvertible {
        package var description: String { "EmulatorHTTPServer is not available yet (stand-in)." }
    }

    private let application: any ServerApplication

    package init(
        host: String = "127.0.0.1", port: Int = 0, application: any ServerApplication, limits: Limits = .init()
    ) {
        self.application = application
    }

    /// Always throws: the socket server has not landed yet.
    package func start() throws -> Int {
        throw NotAvailable()
    }

    package var port: Int { 0 }

    package func stop() {}
}
