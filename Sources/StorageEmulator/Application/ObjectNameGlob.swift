/// A listing's `matchGlob`, as Cloud Storage reads it: `*` matches any characters but `/`,
/// `**` any characters at all, `**/` zero or more whole path segments, `?` one character
/// but `/`, `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set, `{x,y}` one of
/// the alternatives (not nested), and `\` takes the next character literally. A pattern is at
/// most ``maxPatternBytes`` long.
///
/// The pattern compiles to a nondeterministic automaton, one state per token at most three,
/// `{…}` alternatives branching into it rather than expanding the pattern; matching walks the
/// name's Unicode scalars once with the set of states reached, so it costs at most states ×
/// (name length + 1) steps, whatever the pattern: a client cannot make it backtrack, nor
/// multiply the work by its alternatives.
struct ObjectNameGlob {
    private enum Token: Equatable {
        case literal(Unicode.Scalar)
        /// `?`
        case one
        /// `*`
        case star
        /// `**` not followed by `/`
        case anything
        /// `**/`
        case segments
        case set(negated: Bool, ranges: [ClosedRange<Unicode.Scalar>])
        /// `{…}`: one of the alternatives, each a token sequence without braces.
        case alternatives([[Token]])
    }

    /// Which scalars a state consumes.
    private enum Scalars {
        case literal(Unicode.Scalar)
        case any
        case notSlash
        /// One of (or, negated, none of) the ranges, never `/`.
        case set(negated: Bool, ranges: [ClosedRange<Unicode.Scalar>])

        func contains(_ scalar: Unicode.Scalar) -> Bool {
            switch self {
            case .literal(let literal): scalar == literal
            case .any: true
            case .notSlash: scalar != "/"
            case .set(let negated, let ranges): scalar != "/" && ranges.contains { $0.contains(scalar) } != negated
            }
        }
    }

    /// One state of the automaton.
    private enum State {
        /// Consumes one scalar of the set and moves to `next`.
        case consume(Scalars, next: Int)
        /// Consumes any number of scalars of the set, staying; moves to `next` without consuming.
        case repeatOrLeave(Scalars, next: Int)
        /// Moves to every one of these without consuming.
        case branch([Int])
        case accept
    }

    /// The longest pattern taken, in UTF-8 bytes (a bound of the emulator's: Cloud Storage
    /// documents none; its object names are at most 1,024 bytes).
    static let maxPatternBytes = 1024

    private let states: [State]
    private let start: Int

    /// - Throws: ``HTTPError`` (400) for a pattern Cloud Storage would refuse (an unclosed
    ///   `[` or `{`, nested braces) or one longer than ``maxPatternBytes``.
    init(_ pattern: String) throws {
        guard pattern.utf8.count <= Self.maxPatternBytes else {
            throw HTTPError.badRequest(
                "Invalid matchGlob: the pattern is longer than \(Self.maxPatternBytes) bytes.")
        }
        let invalid = HTTPError.badRequest("Invalid matchGlob: '\(pattern)'.")
        var scalars = Array(pattern.unicodeScalars)[...]
        let tokens = try Self.tokens(&scalars, inBraces: false, invalid: invalid)
        var states: [State] = [.accept]
        start = Self.compile(tokens, next: 0, into: &states)
        self.states = states
    }

    /// Appends the states of `tokens`, which lead to `next`; the first one's index.
    private static func compile(_ tokens: [Token], next: Int, into states: inout [State]) -> Int {
        var next = next
        for token in tokens.reversed() {
            switch token {
            case .literal(let scalar): states.append(.consume(.literal(scalar), next: next))
            case .one: states.append(.consume(.notSlash, next: next))
            case .set(let negated, let ranges):
                states.append(.consume(.set(negated: negated, ranges: ranges), next: next))
            case .star: states.append(.repeatOrLeave(.notSlash, next: next))
            case .anything: states.append(.repeatOrLeave(.any, next: next))
            case .segments:
                // Nothing, or anything that ends with a `/`.
                states.append(.consume(.literal("/"), next: next))
                states.append(.repeatOrLeave(.any, next: states.count - 1))
                states.append(.branch([next, states.count - 1]))
            case .alternatives(let choices):
                let starts = choices.map { compile($0, next: next, into: &states) }
                states.append(.branch(starts))
            }
            next = states.count - 1
        }
        return next
    }

    /// Reads tokens from `pattern` up to its end or, `inBraces`, up to the `,` or `}` that ends an
    /// alternative (left in `pattern`).
    private static func tokens(
        _ pattern: inout ArraySlice<Unicode.Scalar>, inBraces: Bool, invalid: HTTPError
    ) throws -> [Token] {
        var tokens: [Token] = []
        while let scalar = pattern.first {
            if inBraces, scalar == "," || scalar == "}" { return tokens }
            pattern.removeFirst()
            switch scalar {
            case "\\":
                guard let next = pattern.popFirst() else { throw invalid }
                tokens.append(.literal(next))
            case "{":
                guard !inBraces else { throw invalid }
                var choices: [[Token]] = []
                while true {
                    choices.append(try Self.tokens(&pattern, inBraces: true, invalid: invalid))
                    guard let end = pattern.popFirst() else { throw invalid }
                    if end == "}" { break }
                }
                tokens.append(.alternatives(choices))
            case "?":
                tokens.append(.one)
            case "*":
                guard pattern.first == "*" else {
                    tokens.append(.star)
                    continue
                }
                pattern.removeFirst()
                if pattern.first == "/" {
                    pattern.removeFirst()
                    tokens.append(.segments)
                } else {
                    tokens.append(.anything)
                }
            case "[":
                tokens.append(try set(&pattern, invalid: invalid))
            default:
                tokens.append(.literal(scalar))
            }
        }
        return tokens
    }

    /// Reads a set after its `[`, through its `]`: `]` first is a member, `!` first negates.
    private static func set(_ pattern: inout ArraySlice<Unicode.Scalar>, invalid: HTTPError) throws -> Token {
        var negated = false
        if pattern.first == "!" {
            negated = true
            pattern.removeFirst()
        }
        var ranges: [ClosedRange<Unicode.Scalar>] = []
        while let first = pattern.popFirst() {
            if first == "]", !ranges.isEmpty { return .set(negated: negated, ranges: ranges) }
            let rest = Array(pattern.prefix(2))
            if rest.count == 2, rest[0] == "-", rest[1] != "]" {
                guard first <= rest[1] else { throw invalid }
                ranges.append(first...rest[1])
                pattern.removeFirst(2)
            } else {
                ranges.append(first...first)
            }
        }
        throw invalid
    }

    /// Whether the whole name matches.
    func matches(_ name: String) -> Bool {
        var steps = 0
        return matches(name, steps: &steps)
    }

    /// Whether the whole name matches, adding to `steps` every state visited (for tests: the
    /// count is at most a few times states × (scalars + 1)).
    func matches(_ name: String, steps: inout Int) -> Bool {
        var reached = [Bool](repeating: false, count: states.count)
        var current: [Int] = []
        reach(start, &reached, &current, &steps)
        for scalar in name.unicodeScalars {
            guard !current.isEmpty else { return false }
            var next: [Int] = []
            reached = [Bool](repeating: false, count: states.count)
            for index in current {
                steps += 1
                switch states[index] {
                case .consume(let set, let target) where set.contains(scalar): reach(target, &reached, &next, &steps)
                case .repeatOrLeave(let set, _) where set.contains(scalar): reach(index, &reached, &next, &steps)
                default: break
                }
            }
            current = next
        }
        return current.contains { if case .accept = states[$0] { true } else { false } }
    }

    /// Adds `index` and every state it moves to without consuming to `list`, once each.
    private func reach(_ index: Int, _ reached: inout [Bool], _ list: inout [Int], _ steps: inout Int) {
        var pending = [index]
        while let index = pending.popLast() {
            steps += 1
            guard !reached[index] else { continue }
            reached[index] = true
            switch states[index] {
            case .branch(let targets): pending += targets
            case .repeatOrLeave(_, let next):
                list.append(index)
                pending.append(next)
            case .consume, .accept: list.append(index)
            }
        }
    }
}
