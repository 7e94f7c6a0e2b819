import FakeGCSServer
import Foundation
import Testing

/// No function, initializer, deinitializer, subscript or accessor in `Sources` runs over 60
/// lines, counted from its declaration's line to its closing brace: past that a body does
/// several things at once, and reads better as the named steps it takes.
@Suite("Source shape")
struct SourceShapeTests {
    static let maximumBodyLines = 60

    /// The repository's `Sources` folder.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// `path:line: name is N lines long, over 60` for each body in `source` longer than the rule allows.
    static func overlongBodies(in source: String, path: String) -> [String] {
        SwiftBodyScanner.bodies(in: source).filter { $0.lines > maximumBodyLines }.map {
            "\(path):\($0.line): \($0.name) is \($0.lines) lines long, over \(maximumBodyLines)"
        }
    }

    @Test func noBodyInSourcesIsLongerThanSixtyLines() throws {
        let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            let path = "Sources/" + (file.path.components(separatedBy: "/Sources/").last ?? file.lastPathComponent)
            for message in Self.overlongBodies(in: text, path: path) {
                Issue.record(Comment(rawValue: message))
            }
            checked += 1
        }
        #expect(checked > 100)
    }

    /// The folders of `Sources/CloudStorage` form layers: `scripts/folder-dependencies` finds no
    /// pair of folders whose files name each other's types both ways, and no longer cycle.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func noFolderPairOfTheSDKDependsBothWays() async throws {
        let root = Self.sources.deletingLastPathComponent()
        let report = FileManager.default.temporaryDirectory
            .appendingPathComponent("folders-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: report) }
        let script = root.appendingPathComponent("scripts/folder-dependencies").path
        let target = Self.sources.appendingPathComponent("CloudStorage").path
        let child = try ChildProcess(
            "/usr/bin/python3", [script, target], environment: [:], output: .file(report.path), errors: .standardOutput)
        await child.exited()
        let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        #expect(child.terminationReason == .exit && child.terminationStatus == 0, "\(text)")
        #expect(text.contains("\n0 of ") && text.contains("\n0 cycles"), "\(text)")
    }

    /// `count` lines of body.
    static func filler(_ count: Int) -> String {
        String(repeating: "    total += 1\n", count: count)
    }

    @Test func aBodyOfSixtyOneLinesIsTooLongAndOneOfSixtyIsNot() {
        let source = "func fits() {\n\(Self.filler(58))}\n\nstruct S {\n  init() {\n\(Self.filler(59))  }\n}\n"
        #expect(
            SwiftBodyScanner.bodies(in: source) == [
                .init(name: "func fits", line: 1, lines: 60), .init(name: "init", line: 63, lines: 61),
            ])
        #expect(Self.overlongBodies(in: source, path: "S.swift") == ["S.swift:63: init is 61 lines long, over 60"])
    }

    @Test func bracesInStringsAndCommentsAreNotCode() {
        let source = ##"""
            func quoted(_ a: [Int]) -> String {
                let plain = "}}} \" {"  // } a brace in a comment
                /* { a block comment /* nested } */ still } comment */
                let multiLine = """
                    } "quotes" "" and \""" {
                    """
                let raw = #"\"} still raw { "# + ##"}"#{"##
                let rawMultiLine = #"""
                    }"""{
                    """#
                return "\(a.map { "}\($0){" }) \(plain) \(multiLine) \(raw) \(rawMultiLine)"
            }
            func after() {}
            """##
        #expect(
            SwiftBodyScanner.bodies(in: source) == [
                .init(name: "func quoted", line: 1, lines: 12), .init(name: "func after", line: 13, lines: 1),
            ])
    }

    @Test func aRequirementHasNoBodyAndAnAccessorDoes() {
        let source = """
            protocol Store {
                func bucket(_ name: String) async throws -> Int
                init(
                    name: String
                )
                var count: Int { get }
                subscript(index: Int) -> Int { get set }
                func close()
            }
            struct Box {
                var count: Int {
                    counted + 1
                }
                var value = 0 {
                    didSet { counted += 1 }
                }
                subscript(index: Int) -> Int {
                    get { index }
                    set(newValue) {}
                }
                deinit {}
            }
            """
        #expect(
            SwiftBodyScanner.bodies(in: source) == [
                .init(name: "var count", line: 11, lines: 3), .init(name: "var value didSet", line: 15, lines: 1),
                .init(name: "subscript get", line: 18, lines: 1), .init(name: "subscript set", line: 19, lines: 1),
                .init(name: "deinit", line: 21, lines: 1),
            ])
    }

    @Test func callsAndLocalVariablesAreNotDeclarations() {
        let source = """
            func outer() {
                let make = String.init
                var seen: [Int]
                seen = []
                if var first = seen.first { first += 1 }
                if var last = seen.last, var first { first += last }
                seen.forEach {
                    print($0)
                }
                func inner(_ x: Int = { 1 }()) -> Int { x }
            }
            """
        #expect(
            SwiftBodyScanner.bodies(in: source) == [
                .init(name: "func inner", line: 10, lines: 1), .init(name: "func outer", line: 1, lines: 11),
            ])
    }
}

/// The bodies of functions, initializers, deinitializers, subscripts and accessors in Swift
/// source, found by reading braces as the compiler does: comments and string literals (multi-line
/// and raw ones, with the code of their interpolations) hide theirs, and a declaration without a
/// body, as a protocol's requirements are, has none to measure.
private enum SwiftBodyScanner {
    struct Body: Equatable, CustomStringConvertible {
        /// `func name`, `init`, `deinit`, `subscript`, `var name` (a getter without `get`), or
        /// a property's or subscript's name followed by its accessor's keyword.
        var name: String
        /// The line of the declaration's keyword, from 1.
        var line: Int
        /// From that line to the closing brace's, both counted.
        var lines: Int

        var description: String { "\(name) at line \(line), \(lines) lines" }
    }

    /// The bodies in `source`, in the order they close (an inner function before its outer one).
    static func bodies(in source: String) -> [Body] {
        var parser = SwiftBodyParser(tokens: SwiftTokenizer.tokens(in: source))
        return parser.bodies()
    }
}

/// A word, a punctuation mark or an operator of Swift source, or `"` for a whole string literal.
private struct SwiftToken {
    var text: String
    var line: Int
    /// Whether it is the first token on its line.
    var startsLine: Bool
}

/// Splits Swift source into the tokens that matter for finding bodies; comments and the
/// insides of string literals never become tokens.
private struct SwiftTokenizer {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var startsLine = true
    private var tokens: [SwiftToken] = []

    static func tokens(in source: String) -> [SwiftToken] {
        var tokenizer = SwiftTokenizer(bytes: Array(source.utf8))
        tokenizer.run()
        return tokenizer.tokens
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func run() {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                startsLine = true
                index += 1
            } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                index += 1
            } else if startsComment {
                skipComment()
            } else if startsString {
                let first = line
                skipString()
                emit("\"", line: first)
            } else {
                emitWordOrMark()
            }
        }
    }

    private func byte(at offset: Int) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    private var startsComment: Bool {
        bytes[index] == UInt8(ascii: "/") && (byte(at: 1) == UInt8(ascii: "/") || byte(at: 1) == UInt8(ascii: "*"))
    }

    /// `"`, or the `#`s of a raw string's delimiter followed by `"`.
    private var startsString: Bool {
        var offset = 0
        while byte(at: offset) == UInt8(ascii: "#") { offset += 1 }
        return byte(at: offset) == UInt8(ascii: "\"")
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static let operatorBytes = Set("=-+!*%<>&|^~?/".utf8)

    private mutating func emit(_ text: String, line: Int) {
        tokens.append(SwiftToken(text: text, line: line, startsLine: startsLine))
        startsLine = false
    }

    /// A word (`#if` and numbers too), a back-quoted name, a run of operator characters, or any
    /// other byte alone.
    private mutating func emitWordOrMark() {
        let start = index
        if bytes[index] == UInt8(ascii: "`") {
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "`") { index += 1 }
            index = min(index + 1, bytes.count)
        } else if bytes[index] == UInt8(ascii: "#") || Self.isWordByte(bytes[index]) {
            index += 1
            while index < bytes.count, Self.isWordByte(bytes[index]) { index += 1 }
        } else if Self.operatorBytes.contains(bytes[index]) {
            index += 1
            while index < bytes.count, Self.operatorBytes.contains(bytes[index]), !startsComment { index += 1 }
        } else {
            index += 1
        }
        emit(String(decoding: bytes[start..<index], as: UTF8.self), line: line)
    }

    /// Moves past `// …` up to its line's end, or past `/* … */`, which nests.
    private mutating func skipComment() {
        if byte(at: 1) == UInt8(ascii: "/") {
            while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            return
        }
        var depth = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "/") && byte(at: 1) == UInt8(ascii: "*") {
                depth += 1
                index += 2
            } else if bytes[index] == UInt8(ascii: "*") && byte(at: 1) == UInt8(ascii: "/") {
                depth -= 1
                index += 2
                if depth == 0 { return }
            } else {
                skipByte()
            }
        }
    }

    /// Moves one byte on, counting the line it ends.
    private mutating func skipByte() {
        if bytes[index] == UInt8(ascii: "\n") { line += 1 }
        index += 1
    }

    /// Whether `count` bytes `byte` start at `offset`.
    private func repeats(_ byte: UInt8, _ count: Int, at offset: Int) -> Bool {
        (0..<count).allSatisfy { self.byte(at: offset + $0) == byte }
    }

    /// Moves past a string literal, `"…"` or `"""…"""`, raw (`#"…"#`, any number of `#`) or
    /// not, with its escapes and interpolations.
    private mutating func skipString() {
        var hashes = 0
        while bytes[index] == UInt8(ascii: "#") {
            hashes += 1
            index += 1
        }
        let quotes = repeats(UInt8(ascii: "\""), 3, at: 0) ? 3 : 1
        index += quotes
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\\") && repeats(UInt8(ascii: "#"), hashes, at: 1) {
                index += 1 + hashes
                guard index < bytes.count else { return }
                if bytes[index] == UInt8(ascii: "(") {
                    index += 1
                    skipInterpolation()
                } else {
                    skipByte()  // the escaped character
                }
            } else if repeats(UInt8(ascii: "\""), quotes, at: 0) && repeats(UInt8(ascii: "#"), hashes, at: quotes) {
                index += quotes + hashes
                return
            } else {
                skipByte()
            }
        }
    }

    /// Moves past the code of an interpolation and its closing parenthesis.
    private mutating func skipInterpolation() {
        var depth = 1
        while index < bytes.count {
            if startsComment {
                skipComment()
            } else if startsString {
                skipString()
            } else {
                if bytes[index] == UInt8(ascii: "(") { depth += 1 }
                if bytes[index] == UInt8(ascii: ")") { depth -= 1 }
                skipByte()
                if depth == 0 { return }
            }
        }
    }
}

/// Finds the bodies among tokens by following braces and the declarations they belong to.
private struct SwiftBodyParser {
    /// What a pair of braces holds.
    private enum Block {
        /// The code of a function, initializer, deinitializer, subscript or accessor.
        case body(name: String, line: Int)
        /// The accessors of a property or subscript (`get`, `set`, `didSet`, …).
        case accessors(of: String)
        /// Anything else: a type's members, a closure, a statement's block.
        case other
    }

    /// A declaration that may still have a body to come.
    private struct Declaration {
        enum Kind {
            case function
            case `subscript`
            case property(initialized: Bool)
        }

        var name: String
        var line: Int
        var kind: Kind
    }

    /// An open brace, and what was going on outside it.
    private struct Frame {
        var block: Block
        var outerDepth: Int
        var outerPending: Declaration?
    }

    /// The words that end a declaration still waiting for its body: the next declaration's, or a
    /// statement's (after a local variable without an initializer).
    private static let endsDeclaration: Set<String> = [
        "func", "init", "deinit", "subscript", "var", "let", "case", "struct", "class", "enum", "protocol",
        "extension", "typealias", "associatedtype", "import", "actor", "static", "private", "fileprivate",
        "internal", "public", "package", "open", "mutating", "nonmutating", "override", "final", "nonisolated",
        "convenience", "required", "lazy", "weak", "unowned", "dynamic", "indirect", "if", "guard", "for", "in",
        "while", "repeat", "switch", "do", "return", "defer", "throw", "break", "continue", "else", "catch",
        "#if", "#else", "#elseif", "#endif",
    ]

    private static let accessorKeywords: Set<String> = [
        "get", "set", "willSet", "didSet", "init", "_read", "_modify", "read", "modify", "unsafeAddress",
        "unsafeMutableAddress",
    ]

    /// What may come between an accessor's keyword and its body, or after a requirement's keyword.
    private static let accessorFollowers: Set<String> = [
        "{", "}", "async", "throws", "mutating", "nonmutating", "borrowing", "consuming",
    ]

    private let tokens: [SwiftToken]
    private var index = 0
    private var frames: [Frame] = []
    /// Parentheses and brackets open within the innermost braces.
    private var depth = 0
    private var pending: Declaration?
    private var found: [SwiftBodyScanner.Body] = []

    init(tokens: [SwiftToken]) {
        self.tokens = tokens
    }

    mutating func bodies() -> [SwiftBodyScanner.Body] {
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            // A property's braces open on its line: after it, a `{` is some statement's.
            if token.startsLine, depth == 0, token.text != "{", case .property = pending?.kind { pending = nil }
            switch token.text {
            case "{": open()
            case "}": close(token)
            case "(", "[": depth += 1
            case ")", "]": depth -= 1
            case ";" where depth == 0: pending = nil
            case "=" where depth == 0:
                if case .property = pending?.kind { pending?.kind = .property(initialized: true) }
            default: if depth == 0 { word(token) }
            }
        }
        return found
    }

    private mutating func word(_ token: SwiftToken) {
        if case .accessors(let owner) = frames.last?.block, Self.accessorKeywords.contains(token.text) {
            pending = Declaration(name: "\(owner) \(token.text)", line: token.line, kind: .function)
            return
        }
        let previous = index >= 2 ? tokens[index - 2].text : ""
        // `.init`, `String.init`: a reference, not a declaration.
        guard previous != "." else { return }
        switch token.text {
        case "func": pending = Declaration(name: "func \(takeName())", line: token.line, kind: .function)
        case "init", "deinit": pending = Declaration(name: token.text, line: token.line, kind: .function)
        case "subscript": pending = Declaration(name: "subscript", line: token.line, kind: .subscript)
        case "var" where ["if", "guard", "while", "for", "case", ","].contains(previous):
            pending = nil  // A binding in a condition or pattern.
        case "var":
            pending = Declaration(name: "var \(takeName())", line: token.line, kind: .property(initialized: false))
        default: if Self.endsDeclaration.contains(token.text) { pending = nil }
        }
    }

    /// The declared name after `func` or `var`, or nothing when a pattern or parameters follow.
    private mutating func takeName() -> String {
        guard index < tokens.count, !["(", ")", "[", "]", "{", "}", ";"].contains(tokens[index].text) else {
            return ""
        }
        index += 1
        return tokens[index - 1].text
    }

    private mutating func open() {
        guard let declaration = pending, depth == 0 else { return push(.other) }
        pending = nil
        switch declaration.kind {
        case .function:
            push(.body(name: declaration.name, line: declaration.line))
        case .subscript, .property(initialized: false):
            push(
                opensAccessors
                    ? .accessors(of: declaration.name) : .body(name: declaration.name, line: declaration.line))
        case .property(initialized: true):
            push(opensAccessors ? .accessors(of: declaration.name) : .other)
        }
    }

    /// Whether the braces just opened hold accessors (`get {`, `set(value) {`, `get set }`, …)
    /// rather than a getter's code.
    private var opensAccessors: Bool {
        var next = index
        while next < tokens.count, ["mutating", "nonmutating", "borrowing", "consuming"].contains(tokens[next].text) {
            next += 1
        }
        guard next + 1 < tokens.count, Self.accessorKeywords.contains(tokens[next].text) else { return false }
        let follower = tokens[next + 1].text
        return Self.accessorFollowers.contains(follower) || Self.accessorKeywords.contains(follower)
            || (follower == "(" && tokens[next].text != "get")
    }

    private mutating func push(_ block: Block) {
        frames.append(Frame(block: block, outerDepth: depth, outerPending: pending))
        depth = 0
        pending = nil
    }

    private mutating func close(_ token: SwiftToken) {
        guard let frame = frames.popLast() else { return }
        if case .body(let name, let line) = frame.block {
            found.append(SwiftBodyScanner.Body(name: name, line: line, lines: token.line - line + 1))
        }
        depth = frame.outerDepth
        pending = frame.outerPending
    }
}
