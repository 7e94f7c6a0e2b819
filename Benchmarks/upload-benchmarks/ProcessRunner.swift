import FakeGCSServer
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program to completion and collects what it printed and what it cost.
///
/// The program is spawned with `posix_spawn` and reaped with `wait4` on a
/// dispatch thread (``BlockingWork``), never on the cooperative pool; `wait4`
/// gives the CPU time of exactly that child.
enum ProcessRunner {
    /// How a program ended, what it printed, and its CPU time.
    struct Output: Sendable {
        var status: Int32
        var standardOutput: Data
        var standardError: Data
        /// User + system CPU seconds of the child.
        var cpuSeconds: Double
        /// Voluntary + involuntary context switches of the child.
        var contextSwitches: Int64

        var errorText: String {
            String(decoding: standardError.prefix(2048), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// Runs `executable` with `arguments` and waits for it to exit.
    ///
    /// - Parameters:
    ///   - executable: An absolute path.
    ///   - arguments: The arguments, without the program name.
    ///   - environment: Variables to set or replace in the child's copy of this process's environment.
    /// - Returns: The exit status (128 + signal if killed), output and usage.
    /// - Throws: ``BenchmarkError`` when the program cannot be started.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> Output {
        try await BlockingWork.run { try runBlocking(executable, arguments, environment: environment) }
    }

    /// ``run(_:_:environment:)`` for code that already runs on a blocking thread (never the cooperative pool).
    ///
    /// - Parameters:
    ///   - executable: An absolute path.
    ///   - arguments: The arguments, without the program name.
    ///   - environment: Variables to set or replace in the child's copy of this process's environment.
    /// - Returns: The exit status (128 + signal if killed), output and usage.
    /// - Throws: ``BenchmarkError`` when the program cannot be started.
    static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> Output {
        let outputPipe = try makePipe()
        let errorPipe: [Int32]
        do {
            errorPipe = try makePipe()
        } catch {
            close(outputPipe[0])
            close(outputPipe[1])
            throw error
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        // The originals must not stay open in the child, or our reads would never see end of file.
        for descriptor in outputPipe + errorPipe {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned: Int32
        if environment.isEmpty {
            spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        } else {
            let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in envp { free(pointer) } }
            spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        }
        close(outputPipe[1])
        close(errorPipe[1])
        guard spawned == 0 else {
            close(outputPipe[0])
            close(errorPipe[0])
            throw BenchmarkError("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }

        // Drain stderr on another thread so that neither pipe can fill up and stall the child.
        let errorData = Mutex(Data())
        let drained = DispatchGroup()
        let errorDescriptor = errorPipe[0]
        DispatchQueue.global().async(group: drained) {
            let data = readToEnd(errorDescriptor)
            errorData.withLock { $0 = data }
        }
        let outputData = readToEnd(outputPipe[0])
        drained.wait()
        close(outputPipe[0])
        close(errorPipe[0])

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchmarkError("wait4 for \(executable) failed: errno \(errno)") }
        }
        let signal = status & 0x7f
        let exitStatus = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return Output(
            status: exitStatus,
            standardOutput: outputData,
            standardError: errorData.withLock { $0 },
            cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
            contextSwitches: Int64(usage.ru_nvcsw) + Int64(usage.ru_nivcsw)
        )
    }

    /// A pipe whose ends are closed in programs this process executes.
    private static func makePipe() throws -> [Int32] {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw BenchmarkError("pipe failed: errno \(errno)") }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        return descriptors
    }

    /// Reads a descriptor until end of file (the child closed it or exited).
    private static func readToEnd(_ descriptor: Int32) -> Data {
        var data = Data()
        let chunk = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer, chunk)
            if count > 0 {
                data.append(buffer.assumingMemoryBound(to: UInt8.self), count: count)
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    /// The first executable named `name` in the directories of `PATH`, as `which` finds it.
    ///
    /// - Parameter name: A program name such as `curl`.
    /// - Returns: Its absolute path, or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
