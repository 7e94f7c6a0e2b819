import Foundation
import Testing

/// Keeps the documentation's Swift examples honest.
///
/// Every ```` ```swift ```` block in README.md and in the `.md` files under
/// DocsCatalog must equal the region of a Swift file in this folder marked
/// `// snippet: <file>#<n>` … `// end snippet`, which the compiler checks with
/// the rest of the tests. Blocks and regions are compared after removing their
/// common leading indentation, trailing whitespace and surrounding blank lines.
/// Examples that are deliberately not compilable Swift must use another fence
/// (```` ```text ````, ```` ```sh ````).
@Suite("Documentation snippets")
struct DocumentationSnippetTests {
    /// The package root: four levels above this file
    /// (`Tests/CloudStorageTests/Documentation/<file>`).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Where the compiled regions are: every Swift file of this folder (DocumentationSnippets.swift
    /// compiles them; the tests of a feature may also run its article's examples).
    static let snippetsFolder = "Tests/CloudStorageTests/Documentation"

    /// The regions of every Swift file in ``snippetsFolder``, keyed `<file>#<n>`.
    ///
    /// - Throws: ``SnippetText/MarkerError`` as ``SnippetText/regions(inSwift:)`` does, and for a key used in two files.
    static func compiledRegions() throws -> [String: String] {
        let folder = packageRoot.appendingPathComponent(snippetsFolder, isDirectory: true)
        // This file's own examples of markers are test data, not regions.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasSuffix(".swift") && $0 != URL(fileURLWithPath: #filePath).lastPathComponent
        }
        var regions: [String: String] = [:]
        for file in files.sorted() {
            for (key, region) in try SnippetText.regions(inSwift: try read(snippetsFolder + "/" + file)) {
                guard regions.updateValue(region, forKey: key) == nil else {
                    throw SnippetText.MarkerError(description: "region \(key) appears twice (again in \(file))")
                }
            }
        }
        return regions
    }

    /// README.md and every Markdown file in DocsCatalog, as paths from the package root.
    static func documentationFiles() throws -> [String] {
        var files = ["README.md"]
        let catalog = packageRoot.appendingPathComponent("DocsCatalog", isDirectory: true)
        let enumerator = FileManager.default.enumerator(atPath: catalog.path)
        var found: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            if relative.hasSuffix(".md") { found.append("DocsCatalog/" + relative) }
        }
        files += found.sorted()
        return files
    }

    static func read(_ relativePath: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// Every swift block of every documentation file, keyed `<file>#<n>`.
    static func documentationBlocks() throws -> [String: String] {
        var blocks: [String: String] = [:]
        for file in try documentationFiles() {
            for (index, block) in SnippetText.swiftBlocks(inMarkdown: try read(file)).enumerated() {
                blocks["\(file)#\(index + 1)"] = block
            }
        }
        return blocks
    }

    @Test func theDocumentationHasSwiftBlocksInEveryFile() throws {
        let files = try Self.documentationFiles()
        #expect(files.contains("DocsCatalog/CloudStorage.docc/CloudStorage.md"))
        #expect(files.contains("DocsCatalog/CloudStorage.docc/GettingStarted.md"))
        #expect(files.contains("DocsCatalog/CloudStorage.docc/UploadingFiles.md"))
        #expect(files.contains("DocsCatalog/CloudStorage.docc/Emulators.md"))
        let blocks = try Self.documentationBlocks()
        let catalog = "DocsCatalog/CloudStorage.docc"
        for file in [
            "README.md", "\(catalog)/GettingStarted.md", "\(catalog)/UploadingFiles.md", "\(catalog)/Emulators.md",
        ] {
            #expect(blocks["\(file)#1"] != nil, "\(file) has no swift block: is the extractor broken?")
        }
    }

    @Test func everySwiftBlockEqualsItsCompiledRegion() throws {
        let blocks = try Self.documentationBlocks()
        let regions = try Self.compiledRegions()
        for key in blocks.keys.sorted() {
            guard let region = regions[key] else {
                Issue.record("\(key) has no region `// snippet: \(key)` in \(Self.snippetsFolder)")
                continue
            }
            let expected = SnippetText.normalized(region)
            let actual = SnippetText.normalized(blocks[key]!)
            #expect(
                actual == expected,
                "\(key) differs from its compiled region: \(SnippetText.firstDifference(actual, expected))"
            )
        }
    }

    @Test func everyRegionHasABlock() throws {
        let blocks = try Self.documentationBlocks()
        let regions = try Self.compiledRegions()
        for key in regions.keys.sorted() where blocks[key] == nil {
            Issue.record("\(Self.snippetsFolder) has a region \(key), but no such swift block exists")
        }
    }

    // MARK: The extractor itself

    @Test func blocksAreFoundWhateverTheirFenceAndIndentation() {
        let markdown = """
            Text
            ```swift
            let a = 1
            ```
            - In a list:

              ```swift
              let b = 2
                  .description
              ```
            ````swift
            let c = "```"
            ````
            ```sh
            swift test
            ```
            ~~~swift
            let d = 4
            ~~~
            ```Swift
            let e = 5
            ```
            """
        #expect(
            SnippetText.swiftBlocks(inMarkdown: markdown).map(SnippetText.normalized) == [
                "let a = 1", "let b = 2\n    .description", "let c = \"```\"", "let d = 4", "let e = 5",
            ]
        )
    }

    @Test func regionsAreReadAndMalformedMarkersRejected() throws {
        let swift = """
            func f() {
                // snippet: A.md#1
                let x = 1

                print(x)   \t
                // end snippet
            }
            """
        let regions = try SnippetText.regions(inSwift: swift)
        #expect(regions.keys.sorted() == ["A.md#1"])
        #expect(SnippetText.normalized(regions["A.md#1"]!) == "let x = 1\n\nprint(x)")
        #expect(throws: SnippetText.MarkerError.self) {
            try SnippetText.regions(inSwift: "// snippet: A.md#1\nlet x = 1\n")
        }
        #expect(throws: SnippetText.MarkerError.self) {
            try SnippetText.regions(inSwift: "// snippet: A.md#1\n// end snippet\n// snippet: A.md#1\n// end snippet\n")
        }
        #expect(throws: SnippetText.MarkerError.self) {
            try SnippetText.regions(inSwift: "// end snippet\n")
        }
        let shared = try SnippetText.regions(inSwift: "// snippet: A.md#2, B.md#1\nlet y = 2\n// end snippet\n")
        #expect(shared == ["A.md#2": "let y = 2", "B.md#1": "let y = 2"])
        #expect(throws: SnippetText.MarkerError.self) {
            try SnippetText.regions(inSwift: "// snippet: A.md#1, A.md#1\n// end snippet\n")
        }
    }
}

/// Reads code blocks out of Markdown and marked regions out of Swift.
enum SnippetText {
    struct MarkerError: Error, CustomStringConvertible {
        var description: String
    }

    /// The contents of every fenced block whose info string is `swift`, in order.
    ///
    /// A fence is three or more backticks or tildes, indented by up to three
    /// spaces or inside a list item; the block ends at a line holding only a
    /// fence of the same character at least as long.
    static func swiftBlocks(inMarkdown markdown: String) -> [String] {
        var blocks: [String] = []
        var open: (character: Character, length: Int, isSwift: Bool, lines: [Substring])?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop(while: { $0 == " " })
            if var current = open {
                let run = trimmed.prefix(while: { $0 == current.character })
                if run.count >= current.length && trimmed.dropFirst(run.count).allSatisfy(\.isWhitespace) {
                    if current.isSwift { blocks.append(current.lines.joined(separator: "\n")) }
                    open = nil
                } else {
                    current.lines.append(line)
                    open = current
                }
                continue
            }
            guard let first = trimmed.first, first == "`" || first == "~" else { continue }
            let run = trimmed.prefix(while: { $0 == first })
            guard run.count >= 3 else { continue }
            let info = trimmed.dropFirst(run.count).trimmingCharacters(in: .whitespaces)
            let language = info.split(separator: " ").first.map { $0.lowercased() } ?? ""
            open = (first, run.count, language == "swift", [])
        }
        return blocks
    }

    /// The regions between `// snippet: KEY` and `// end snippet`, keyed by KEY.
    ///
    /// - Throws: ``MarkerError`` for a region that never ends, an end without
    ///   a start, a region inside another, or a key used twice.
    static func regions(inSwift source: String) throws -> [String: String] {
        var regions: [String: String] = [:]
        // One region may stand for blocks in several files, its keys separated by commas.
        var open: (keys: [String], lines: [Substring])?
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("// snippet:") {
                if let open { throw MarkerError(description: "region \(open.keys[0]) contains another region") }
                let keys = trimmed.dropFirst("// snippet:".count).split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                for key in keys where regions[key] != nil || keys.filter({ $0 == key }).count > 1 {
                    throw MarkerError(description: "region \(key) appears twice")
                }
                open = (keys, [])
            } else if trimmed == "// end snippet" {
                guard let current = open else { throw MarkerError(description: "// end snippet without a start") }
                for key in current.keys { regions[key] = current.lines.joined(separator: "\n") }
                open = nil
            } else if open != nil {
                open!.lines.append(line)
            }
        }
        if let open { throw MarkerError(description: "region \(open.keys[0]) never ends") }
        return regions
    }

    /// The text without trailing whitespace on any line, without leading and
    /// trailing blank lines, and without the indentation all its lines share.
    static func normalized(_ text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            String(line.reversed().drop(while: \.isWhitespace).reversed())
        }
        while lines.first?.isEmpty == true { lines.removeFirst() }
        while lines.last?.isEmpty == true { lines.removeLast() }
        let indentation =
            lines.filter { !$0.isEmpty }
            .map { $0.prefix(while: { $0 == " " || $0 == "\t" }).count }
            .min() ?? 0
        return lines.map { String($0.dropFirst(min(indentation, $0.count))) }.joined(separator: "\n")
    }

    /// Where two texts first differ, for failure messages.
    static func firstDifference(_ actual: String, _ expected: String) -> String {
        let actualLines = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let expectedLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
        for index in 0..<max(actualLines.count, expectedLines.count) {
            let a = index < actualLines.count ? String(actualLines[index]) : "<end of block>"
            let e = index < expectedLines.count ? String(expectedLines[index]) : "<end of region>"
            if a != e {
                return "line \(index + 1) of the block is \"\(a)\", the compiled code has \"\(e)\""
            }
        }
        return "no difference"
    }
}
