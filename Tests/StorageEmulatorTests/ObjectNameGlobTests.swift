import Foundation
import Testing

@testable import StorageEmulator

/// `matchGlob` matches in steps linear in name × pattern, refuses patterns over its bound, and
/// means what the brace-expanding matcher it replaced meant.
@Suite("matchGlob: linear matching")
struct ObjectNameGlobTests {
    /// Six `{a,b}` groups, then `*a` many times: what made the expanding matcher do 64 times
    /// the work of one pattern of 1,000-odd tokens per name.
    static func pathological(stars: Int) -> String {
        String(repeating: "{a,b}", count: 6) + String(repeating: "*a", count: stars)
    }

    @Test("a pattern over 1,024 bytes is 400; the listing answers")
    func sizeBound() throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", body: [1]).status == 200)
        let long = Self.pathological(stars: 1000)
        #expect(long.utf8.count > ObjectNameGlob.maxPatternBytes)
        let refused = harness.send("GET", "/storage/v1/b/bkt/o?matchGlob=\(URLText.encodeComponent(long))")
        #expect(refused.status == 400)
        #expect(refused.errorMessage.contains("matchGlob"))
        let fits = String(repeating: "x", count: ObjectNameGlob.maxPatternBytes)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?matchGlob=\(fits)").status == 200)
    }

    @Test("the pathological pattern costs steps linear in states × name, whatever the alternatives")
    func linearSteps() throws {
        let pattern = Self.pathological(stars: 495)
        #expect(pattern.utf8.count <= ObjectNameGlob.maxPatternBytes)
        let glob = try ObjectNameGlob(pattern)
        for name in [String(repeating: "a", count: 1000), String(repeating: "ab", count: 500) + "b"] {
            var steps = 0
            _ = glob.matches(name, steps: &steps)
            // At most three states per pattern character, each visited a bounded number of times per scalar.
            let bound = 4 * 3 * (pattern.unicodeScalars.count + 1) * (name.unicodeScalars.count + 1)
            #expect(steps <= bound, "\(steps) steps for a bound of \(bound)")
        }
    }

    @Test("listing with the pathological pattern over 20 names of 1,000 bytes answers, matching nothing")
    func pathologicalListing() throws {
        let harness = try Harness()
        for index in 0..<20 {
            let name = String(repeating: "a", count: 996) + String(format: "%04d", index)
            #expect(
                harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(name)", body: [1]).status
                    == 200)
        }
        let pattern = URLText.encodeComponent(Self.pathological(stars: 495))
        let page = harness.send("GET", "/storage/v1/b/bkt/o?matchGlob=\(pattern)")
        #expect(page.status == 200)
        #expect((page.json["items"] as? [Any] ?? []).isEmpty)
    }

    @Test("a glob listing, built from copies of the store's records in batches, pages as a plain listing does")
    func batchedListing() throws {
        let harness = try Harness()
        let created = harness.send(
            "POST", "/storage/v1/b?project=p", json: ["name": "bkt", "versioning": ["enabled": true]])
        #expect(created.status == 200)
        for index in 0..<700 {
            let name = index % 3 == 0 ? "d\(index % 5)/\(index)" : String(format: "f%04d", index)
            for _ in 0..<(index % 2 + 1) {
                #expect(
                    harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(name)", body: [1]).status
                        == 200)
            }
        }
        func all(_ query: String) -> [String] {
            var names: [String] = []
            var token: String?
            repeat {
                let page = harness.send(
                    "GET", "/storage/v1/b/bkt/o?maxResults=97&" + query + (token.map { "&pageToken=\($0)" } ?? "")
                ).json
                names += (page["items"] as? [[String: Any]] ?? []).map {
                    "\($0["name"] ?? "")#\($0["generation"] ?? "")"
                }
                names += (page["prefixes"] as? [String] ?? []).map { "prefix " + $0 }
                token = page["nextPageToken"] as? String
            } while token != nil
            return names
        }
        for query in ["versions=true", "delimiter=/", "versions=true&delimiter=/", "startOffset=f0300"] {
            let plain = all(query)
            #expect(plain.count > EmulatorApplication.globBatch, "\(query)")
            #expect(all(query + "&matchGlob=**") == plain, "\(query)")
        }
    }

    /// Alternatives here are letters only: expansion pastes text, so `*{a,}*` became `**` (which
    /// crosses `/`), where the automaton reads a star, a choice, a star.
    @Test("random patterns and names: the same verdicts as brace expansion with a table per alternative")
    func sameAsExpansion() throws {
        let elements = ["a", "b", "/", "?", "*", "**", "**/", "[ab]", "[!a]", "[a-b]", "{a,b}", "{ab,a}", "{b,ba}"]
        var generator = SeededGenerator(seed: 31)
        for _ in 0..<3000 {
            let pattern = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                elements.randomElement(using: &generator)!
            }.joined()
            let name = String(
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                    "ab/".randomElement(using: &generator)!
                })
            let expected = try ExpandingGlob(pattern).matches(name)
            #expect(try ObjectNameGlob(pattern).matches(name) == expected, "'\(pattern)' ~ '\(name)'")
        }
    }
}

/// The matcher `ObjectNameGlob` replaced, kept as the reference: braces expanded into
/// alternatives, each matched with a table of (pattern, name) positions.
private struct ExpandingGlob {
    enum Token { case literal(Unicode.Scalar), one, star, anything, segments, set(Bool, [ClosedRange<Unicode.Scalar>]) }
    let alternatives: [[Token]]

    init(_ pattern: String) throws {
        var expanded: [[Unicode.Scalar]] = [[]]
        var scalars = Array(pattern.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if scalar == "{", let close = scalars.firstIndex(of: "}") {
                let choices = scalars[scalars.startIndex..<close].split(
                    separator: ",", omittingEmptySubsequences: false)
                expanded = expanded.flatMap { head in choices.map { head + Array($0) } }
                scalars = scalars[scalars.index(after: close)...]
            } else {
                expanded = expanded.map { $0 + [scalar] }
            }
        }
        alternatives = expanded.map(Self.tokens)
    }

    static func tokens(_ pattern: [Unicode.Scalar]) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            let scalar = pattern[index]
            index += 1
            switch scalar {
            case "?": tokens.append(.one)
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
                let negated = pattern[index] == "!"
                if negated { index += 1 }
                var ranges: [ClosedRange<Unicode.Scalar>] = []
                while pattern[index] != "]" {
                    if pattern[index + 1] == "-" {
                        ranges.append(pattern[index]...pattern[index + 2])
                        index += 3
                    } else {
                        ranges.append(pattern[index]...pattern[index])
                        index += 1
                    }
                }
                index += 1
                tokens.append(.set(negated, ranges))
            default: tokens.append(.literal(scalar))
            }
        }
        return tokens
    }

    func matches(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        return alternatives.contains { Self.matches($0, scalars) }
    }

    static func matches(_ tokens: [Token], _ name: [Unicode.Scalar]) -> Bool {
        let slash: Unicode.Scalar = "/"
        var table = [[Bool]](repeating: [Bool](repeating: false, count: name.count + 1), count: tokens.count + 1)
        table[tokens.count][name.count] = true
        for p in stride(from: tokens.count - 1, through: 0, by: -1) {
            var segmentEnd = false
            for n in stride(from: name.count, through: 0, by: -1) {
                let here = n < name.count ? name[n] : nil
                switch tokens[p] {
                case .literal(let scalar): table[p][n] = here == scalar && table[p + 1][n + 1]
                case .one: table[p][n] = here != nil && here != slash && table[p + 1][n + 1]
                case .set(let negated, let ranges):
                    guard let here else { continue }
                    table[p][n] =
                        here != slash && ranges.contains { $0.contains(here) } != negated && table[p + 1][n + 1]
                case .star: table[p][n] = table[p + 1][n] || (here != nil && here != slash && table[p][n + 1])
                case .anything: table[p][n] = table[p + 1][n] || (here != nil && table[p][n + 1])
                case .segments:
                    if here == slash, table[p + 1][n + 1] { segmentEnd = true }
                    table[p][n] = table[p + 1][n] || segmentEnd
                }
            }
        }
        return table[0][0]
    }
}
