/// A listing's `matchGlob`, as Cloud Storage reads it: `*` matches any characters but `/`,
/// `**` any characters at all, `**/` zero or more whole path segments, `?` one character
/// but `/`, `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set, `{x,y}` one of
/// the alternatives, and `\` takes the next character literally.
///
/// Matching runs over the name's Unicode scalars with a table of (pattern, name) positions
/// already decided, so it costs at most the product of their lengths per alternative, whatever
/// the pattern: a client cannot make it backtrack exponentially.
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
    }

    /// The most alternatives `{…}` may expand to.
    static let maxAlternatives = 64

    private let alternatives: [[Token]]

    /// - Throws: ``HTTPError`` (400) for a pattern Cloud Storage would refuse (an unclosed
    ///   `[` or `{`, nested braces, too many alternatives).
    init(_ pattern: String) throws {
        let invalid = HTTPError.badRequest("Invalid matchGlob: '\(pattern)'.")
        // Expand braces first: `a{b,c}d` is `abd` or `acd`.
        var expanded: [[Unicode.Scalar]] = [[]]
        var scalars = Array(pattern.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if scalar == "\\", let next = scalars.popFirst() {
                expanded = expanded.map { $0 + [scalar, next] }
            } else if scalar == "{" {
                guard let close = scalars.firstIndex(of: "}") else { throw invalid }
                let body = scalars[scalars.startIndex..<close]
                guard !body.contains("{") else { throw invalid }
                let choices = body.split(separator: ",", omittingEmptySubsequences: false).map(Array.init)
                expanded = expanded.flatMap { head in choices.map { head + $0 } }
                guard expanded.count <= Self.maxAlternatives else { throw invalid }
                scalars = scalars[scalars.index(after: close)...]
            } else {
                expanded = expanded.map { $0 + [scalar] }
            }
        }
        alternatives = try expanded.map { try Self.tokens($0, invalid: invalid) }
    }

    private static func tokens(_ pattern: [Unicode.Scalar], invalid: HTTPError) throws -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            let scalar = pattern[index]
            index += 1
            switch scalar {
            case "\\":
                guard index < pattern.count else { throw invalid }
                tokens.append(.literal(pattern[index]))
                index += 1
            case "?":
                tokens.append(.one)
            case "*":
                guard index < pattern.count, pattern[index] == "*" else {
                    tokens.append(.star)
                    continue
                }
                index += 1
                if index < pattern.count, pattern[index] == "/" {
                    index += 1
                    tokens.append(.segments)
                } else {
                    tokens.append(.anything)
                }
            case "[":
                var negated = false
                if index < pattern.count, pattern[index] == "!" {
                    negated = true
                    index += 1
                }
                var ranges: [ClosedRange<Unicode.Scalar>] = []
                var closed = false
                while index < pattern.count {
                    let first = pattern[index]
                    index += 1
                    if first == "]", !ranges.isEmpty {
                        closed = true
                        break
                    }
                    if index + 1 < pattern.count, pattern[index] == "-", pattern[index + 1] != "]" {
                        let last = pattern[index + 1]
                        guard first <= last else { throw invalid }
                        ranges.append(first...last)
                        index += 2
                    } else {
                        ranges.append(first...first)
                    }
                }
                guard closed else { throw invalid }
                tokens.append(.set(negated: negated, ranges: ranges))
            default:
                tokens.append(.literal(scalar))
            }
        }
        return tokens
    }

    /// Whether the whole name matches one of the alternatives.
    func matches(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        return alternatives.contains { Self.matches($0, scalars) }
    }

    private static func matches(_ tokens: [Token], _ name: [Unicode.Scalar]) -> Bool {
        // table[p][n]: whether tokens[p...] match name[n...]. Filled from the end, so every
        // lookup below is of a cell already decided.
        let slash: Unicode.Scalar = "/"
        var table = [[Bool]](repeating: [Bool](repeating: false, count: name.count + 1), count: tokens.count + 1)
        table[tokens.count][name.count] = true
        for p in stride(from: tokens.count - 1, through: 0, by: -1) {
            // For `**/`: whether some n' > n just past a `/` has table[p + 1][n'] (scanning backwards).
            var segmentEnd = false
            for n in stride(from: name.count, through: 0, by: -1) {
                let here = n < name.count ? name[n] : nil
                switch tokens[p] {
                case .literal(let scalar):
                    table[p][n] = here == scalar && table[p + 1][n + 1]
                case .one:
                    table[p][n] = here != nil && here != slash && table[p + 1][n + 1]
                case .set(let negated, let ranges):
                    guard let here else {
                        table[p][n] = false
                        continue
                    }
                    let inSet = ranges.contains { $0.contains(here) }
                    table[p][n] = here != slash && inSet != negated && table[p + 1][n + 1]
                case .star:
                    table[p][n] = table[p + 1][n] || (here != nil && here != slash && table[p][n + 1])
                case .anything:
                    table[p][n] = table[p + 1][n] || (here != nil && table[p][n + 1])
                case .segments:
                    if here == slash, table[p + 1][n + 1] { segmentEnd = true }
                    table[p][n] = table[p + 1][n] || segmentEnd
                }
            }
        }
        return table[0][0]
    }
}
