/// The words after the command name, taken apart: options (`--name value`,
/// `--name=value`, flags) and positional arguments, in order.
struct CommandLineArguments {
    private(set) var positional: [String] = []
    /// Every value of each valued option, in order (an option may be repeated).
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// - Parameters:
    ///   - words: The arguments.
    ///   - valued: Options that take a value.
    ///   - flags: Options that take none.
    /// - Throws: ``UsageError`` for an unknown option or a missing value.
    init(_ words: [String], valued: Set<String>, flags knownFlags: Set<String>) throws(UsageError) {
        var rest = words[...]
        var onlyPositional = false
        while let word = rest.popFirst() {
            if onlyPositional || word == "-" || !word.hasPrefix("-") {
                positional.append(word)
            } else if word == "--" {
                onlyPositional = true
            } else {
                let (name, inline) = Self.split(word)
                if knownFlags.contains(name) {
                    guard inline == nil else { throw UsageError("\(name) takes no value") }
                    flags.insert(name)
                } else if valued.contains(name) {
                    guard let value = inline ?? rest.popFirst() else { throw UsageError("\(name) needs a value") }
                    options[name, default: []].append(value)
                } else {
                    throw UsageError("unknown option \(name)")
                }
            }
        }
    }

    private static func split(_ word: String) -> (String, String?) {
        guard let equals = word.firstIndex(of: "=") else { return (word, nil) }
        return (String(word[..<equals]), String(word[word.index(after: equals)...]))
    }

    /// The option's value; the last one when it is repeated.
    func value(_ name: String) -> String? { options[name]?.last }

    /// Every value of a repeatable option, in order.
    func values(_ name: String) -> [String] { options[name] ?? [] }

    /// `--jobs N`, how many files a command moves at once: 1 to 256, `fallback` when not given.
    func jobs(default fallback: Int) throws(UsageError) -> Int {
        guard let text = value("--jobs") else { return fallback }
        guard let jobs = Int(text), (1...256).contains(jobs) else {
            throw UsageError("--jobs: \(text) is not a number from 1 to 256")
        }
        return jobs
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// The command line was wrong: say what, and show the usage.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    /// Whether to show the usage text after the message (not for, say, a bad environment variable).
    let showsUsage: Bool

    init(_ description: String, showsUsage: Bool = true) {
        self.description = description
        self.showsUsage = showsUsage
    }
}

/// Single-letter flags written together, as `ls -lr` for `ls -l -r`.
enum ShortFlags {
    /// `words` with each word made only of `letters` after one dash (`-lr`) split into one word
    /// per letter (`-l`, `-r`); words after `--` are left alone.
    static func expand(_ words: [String], letters: String) -> [String] {
        var result: [String] = []
        var onlyPositional = false
        for word in words {
            if word == "--" { onlyPositional = true }
            let body = word.dropFirst()
            if !onlyPositional, word.hasPrefix("-"), !word.hasPrefix("--"), body.count > 1,
                body.allSatisfy(letters.contains)
            {
                result += body.map { "-\($0)" }
            } else {
                result.append(word)
            }
        }
        return result
    }
}
