import Foundation
import Synchronization

let usage = """
    usage: cloud-storage <command> [options]

    Commands:
      cp SOURCE DESTINATION      copy a file, - (standard input/output) or, with -r, a directory to or
                                 from gs://BUCKET/PATH (with no endpoint configured, the built-in emulator),
                                 or an object to another on the server
      mv SOURCE DESTINATION      move a file or an object (as cp, then the source is deleted)
      rsync [-r] SOURCE DESTINATION
                                 make DESTINATION match SOURCE (a directory or gs://BUCKET[/PREFIX]),
                                 copying only what differs (--delete-unmatched, --dry-run)
      compose gs://B/SRC... gs://B/DST
                                 concatenate up to 32 objects into one, on the server
      update gs://BUCKET/PATH... change objects' metadata
      hash FILE|gs://BUCKET/PATH...
                                 print CRC32C and MD5 digests
      ls [-l] [-r] [-a] gs://BUCKET[/PREFIX]
                                 list objects and folders (-l: sizes, times, a total; -r: all below;
                                 -a: every generation, as gs://BUCKET/PATH#GENERATION)
      stat gs://BUCKET/PATH...   show objects' metadata
      cat gs://BUCKET/PATH...    write objects' bytes to standard output (-r START-END: a range)
      rm [-r] gs://BUCKET/PATH...
                                 delete objects (-r: everything under PATH/)
      du [-s] [-c] [-a] gs://BUCKET[/PREFIX]...
                                 sizes of objects (-s: a sum per URL; -c: a total)
      emulator                   run the built-in emulator until Ctrl-C
      sign gs://BUCKET/PATH      print a V4 signed URL for an object
      help [COMMAND]             show help

    Every command that talks to a server also takes --verbose: print what the SDK does (each request
    with its status and duration, retries, upload sessions, token fetches, the transport chosen,
    checksum verdicts) to standard error, one line each, without secrets.

    Run `cloud-storage help COMMAND` (cp, mv, rsync, compose, update, hash, ls, stat, cat, rm, du, emulator,
    sign) for its options.
    """

/// The usage of the commands that work on stored objects, by name.
let objectCommandUsage = [
    "ls": ListCommand.usage, "stat": StatCommand.usage, "cat": CatCommand.usage, "rm": RemoveCommand.usage,
    "mv": CopyCommand.moveUsage, "compose": ComposeCommand.usage, "update": UpdateCommand.usage,
    "hash": HashCommand.usage, "du": DiskUsageCommand.usage, "rsync": RsyncCommand.usage,
]

/// Runs `body` with a writer to standard output, stopped afterwards.
func withStandardOutput(_ body: (OutputWriter) async -> ExitCode) async -> ExitCode {
    let output = OutputWriter()
    defer { output.finish() }
    return await body(output)
}

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
    // `cloud-storage --verbose COMMAND …` is `cloud-storage COMMAND --verbose …`.
    if words.first == "--verbose", words.count > 1 {
        words.removeFirst()
        words.insert("--verbose", at: 1)
    }
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
            let parsed = try CopyCommand(words, environment: environment)
            return await withStandardOutput { await parsed.run(output: $0) }
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
        case "ls", "stat", "cat", "rm", "mv", "compose", "update", "hash", "du", "rsync":
            if words.contains("--help") || words.contains("-h") {
                print(objectCommandUsage[command] ?? usage)
                return .success
            }
            return try await runObjectCommand(command, words, environment: environment)
        case "help", "--help", "-h":
            printHelp(for: words.first)
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

/// Runs one of the commands on objects (`ls`, `stat`, `cat`, `rm`, `mv`, `compose`, `update`,
/// `hash`, `du`): parses its `words` (and checks the names) before anything starts, then runs
/// it with the standard output.
///
/// - Throws: The ``UsageError`` of words the command does not take.
private func runObjectCommand(
    _ command: String, _ words: [String], environment: [String: String]
) async throws(UsageError) -> ExitCode {
    // Parsed (and names checked) before anything starts.
    let parsed: any OutputCommand =
        switch command {
        case "ls": try ListCommand(words, environment: environment)
        case "stat": try StatCommand(words, environment: environment)
        case "cat": try CatCommand(words, environment: environment)
        case "mv": try CopyCommand(words, environment: environment, moving: true)
        case "compose": try ComposeCommand(words, environment: environment)
        case "update": try UpdateCommand(words, environment: environment)
        case "hash": try HashCommand(words, environment: environment)
        case "du": try DiskUsageCommand(words, environment: environment)
        case "rsync": try RsyncCommand(words, environment: environment)
        default: try RemoveCommand(words, environment: environment)
        }
    return await withStandardOutput { await parsed.run(output: $0) }
}

/// A parsed command that runs writing to the standard output.
protocol OutputCommand {
    /// Runs the command, writing what it prints to `output`.
    func run(output: OutputWriter) async -> ExitCode
}

extension ListCommand: OutputCommand {}
extension StatCommand: OutputCommand {}
extension CatCommand: OutputCommand {}
extension CopyCommand: OutputCommand {}
extension ComposeCommand: OutputCommand {}
extension UpdateCommand: OutputCommand {}
extension HashCommand: OutputCommand {}
extension DiskUsageCommand: OutputCommand {}
extension RemoveCommand: OutputCommand {}
extension RsyncCommand: OutputCommand {}

/// Prints the usage of the command `name`, or the tool's when it names none.
private func printHelp(for name: String?) {
    switch name {
    case "cp": print(CopyCommand.usage)
    case "emulator": print(EmulatorCommand.usage)
    case "sign": print(SignCommand.usage)
    case let name? where objectCommandUsage[name] != nil: print(objectCommandUsage[name] ?? usage)
    default: print(usage)
    }
}
