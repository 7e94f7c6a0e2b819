import Foundation
import StorageEmulator

/// The port the built-in emulator listened on last time, kept in its directory (`port`), so that
/// a rerun listens on it again: resumable upload sessions (which the directory keeps across a
/// crash) have URLs on that port, and a recorded session is only resumed at the same address.
enum BuiltInEmulatorPort {
    static func file(in directory: URL) -> URL {
        directory.appendingPathComponent("port", isDirectory: false)
    }

    /// The port recorded in `directory`, if it holds a valid one.
    static func recorded(in directory: URL) -> Int? {
        guard let data = try? Data(contentsOf: file(in: directory)), data.count < 16,
            let text = String(data: data, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), (1...65535).contains(port)
        else { return nil }
        return port
    }

    /// Starts the emulator on the recorded port if it is free, else on any free port, and
    /// records the port it got.
    static func start(_ configuration: StorageEmulator.Configuration, in directory: URL) throws -> StorageEmulator {
        let previous = recorded(in: directory)
        // Taken by another process (or another emulator on the same directory): any port will do.
        if let previous, let emulator = try? StorageEmulator.start(with(configuration, port: previous)) {
            return emulator
        }
        let emulator = try StorageEmulator.start(with(configuration, port: 0))
        try? Data("\(emulator.port)\n".utf8).write(to: file(in: directory), options: .atomic)
        return emulator
    }

    private static func with(_ configuration: StorageEmulator.Configuration, port: Int) -> StorageEmulator.Configuration
    {
        var configuration = configuration
        configuration.port = port
        return configuration
    }
}
