import Foundation
import Synchronization

let usage = """
    usage: cloud-storage <command> [options]

    Commands:
      cp FILE gs://BUCKET/PATH   upload a file (with no endpoint configured, to the built-in emulator)
      emulator                   run the built-in emulator until Ctrl-C
      sign gs://BUCKET/PATH      print a V4 signed URL for an object
      help [COMMAND]             show help

    Run `cloud-storage help cp`, `help emulator` or `help sign` for their options.
    """

/// Lets exactly one caller through.
final class OnceFlag: Sendable {
    private let taken = Mutex(false)

    func take() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}

/// Runs the `cloud-storage` command line: `arguments` without the program name.
///
/// - Returns: The process's exit status.
package func runCommandLine(
    _ arguments: [String],
    environment: [String: String] = ProcessInfo.processInfo.environment
) async -> ExitCode {
    var words = arguments
    guard let command = words.first else {
        print(usage)
        return .usage
    }
    words.removeFirst()
    do {
        switch command {
        case "cp":
            if words.contains("--help") || words.contains("-h") {
                print(CopyCommand.usage)
                return .success
            }
            return try await CopyCommand(words, environment: environment).run()
        case "emulator":
            if words.contains("--help") || words.contains("-h") {
                print(EmulatorCommand.usage)
                return .success
            }
            return try await EmulatorCommand(words).run()
        case "sign":
            if words.contains("--help") || words.contains("-h") {
                print(SignCommand.usage)
                return .success
            }
            return try await SignCommand(words, environment: environment).run()
        case "help", "--help", "-h":
            switch words.first {
            case "cp": print(CopyCommand.usage)
            case "emulator": print(EmulatorCommand.usage)
            case "sign": print(SignCommand.usage)
            default: print(usage)
            }
            return .success
        default:
            throw UsageError("unknown command \(command)")
        }
    } catch {
        report("\(error)")
        if (error as? UsageError)?.showsUsage ?? true {
            FileHandle.standardError.write(Data("\n\(usage)\n".utf8))
        }
        return .usage
    }
}
