/// One thing the benchmark times: the curl baseline or an SDK upload flavour.
struct Scenario: Sendable {
    enum Kind: Sendable, Equatable {
        /// `curl -T`: one POST and one PUT of the whole file, no SDK.
        case curlBaseline
        /// `putFile` with the default configuration (one request, checksums on).
        case putFile
        /// `putData` of the same bytes, already in memory.
        case putData
        /// `putFile` with `chunkSize` set to this many bytes.
        case putFileChunked(Int64)
        /// `putFile` with `verifiesChecksums = false` (no CRC32C pass over the file).
        case putFileWithoutChecksums
        /// `putStream` of the file read in 1 MiB blocks, without a size (8 MiB requests and buffer).
        case putStream
        /// Many concurrent `putData` uploads of a small payload.
        case smallPutData(count: Int)
    }

    /// A short stable name, used in the table and as the JSON key.
    let name: String
    /// What the scenario does, for the notes under the table.
    let summary: String
    let kind: Kind

    var isBaseline: Bool { kind == .curlBaseline }

    /// Whether ``ScenarioResult/uploadsPerSecond`` means something here.
    var countsUploads: Bool {
        if case .smallPutData = kind { return true }
        return false
    }

    /// The scenarios of one run, in the order each round runs them.
    ///
    /// - Parameters:
    ///   - options: Sizes and counts.
    ///   - withBaseline: Whether curl is available.
    /// - Returns: The scenarios.
    static func all(_ options: BenchmarkOptions, withBaseline: Bool) -> [Scenario] {
        let size = "\(options.sizeMiB) MiB"
        var scenarios: [Scenario] = []
        if withBaseline {
            scenarios.append(
                Scenario(
                    name: "curl-baseline",
                    summary: "raw resumable upload of the \(size) file by curl: POST, then one PUT (no SDK)",
                    kind: .curlBaseline
                )
            )
        }
        scenarios += [
            Scenario(
                name: "putFile",
                summary: "putFile of the \(size) file, default configuration (CRC32C pass, then one PUT)",
                kind: .putFile
            ),
            Scenario(
                name: "putData",
                summary: "putData of the same \(size) from memory",
                kind: .putData
            ),
            Scenario(
                name: "putFile-chunk8MiB",
                summary: "putFile with chunkSize = 8 MiB (one PUT per 8 MiB)",
                kind: .putFileChunked(8 * 1024 * 1024)
            ),
            Scenario(
                name: "putFile-noChecksums",
                summary: "putFile with verifiesChecksums = false",
                kind: .putFileWithoutChecksums
            ),
            Scenario(
                name: "putStream",
                summary: "putStream of the \(size) file in 1 MiB blocks, size unknown (8 MiB buffer and requests)",
                kind: .putStream
            ),
            Scenario(
                name: "small-putData",
                summary: "\(options.smallCount) concurrent putData of \(options.smallSizeKiB) KiB each (multipart)",
                kind: .smallPutData(count: options.smallCount)
            ),
        ]
        return scenarios
    }
}
