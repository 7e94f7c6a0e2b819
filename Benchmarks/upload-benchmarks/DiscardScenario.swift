import CloudStorage

/// One thing `--discard` times: a baseline, or an SDK upload with one transport and one setting of
/// checksums and chunking.
struct DiscardScenario: Sendable {
    enum Kind: Sendable, Equatable {
        /// Raw POST + PUT head + `sendfile(2)` in this process, no SDK: the reference for every ratio.
        case sendfileBaseline
        /// `curl -T`, one PUT.
        case curlBaseline
        /// `putFile` of the large file.
        case putFile
        /// `putData` of the data payload (already in memory).
        case putData
        /// Many concurrent small `putData` uploads.
        case smallPutData
    }

    let kind: Kind
    /// `native` or `urlsession`; nil for baselines.
    let transport: String?
    let checksums: Bool
    /// `StorageConfiguration.chunkSize`, or nil for one streaming request.
    let chunkSize: Int64?
    /// Timed runs.
    let runs: Int

    var isBaseline: Bool { kind == .sendfileBaseline || kind == .curlBaseline }
    var countsUploads: Bool { kind == .smallPutData }

    /// A short stable name, the JSON key: such as `putFile/native/crc/chunk8MiB`.
    var name: String {
        switch kind {
        case .sendfileBaseline: return "sendfile-baseline"
        case .curlBaseline: return "curl-baseline"
        case .putFile, .putData, .smallPutData:
            let base = kind == .putFile ? "putFile" : kind == .putData ? "putData" : "small-putData"
            var parts = [base, transport ?? "?", checksums ? "crc" : "nocrc"]
            if let chunkSize { parts.append("chunk\(chunkSize >> 20)MiB") }
            return parts.joined(separator: "/")
        }
    }

    var choice: StorageTransportChoice { transport == "urlsession" ? .urlSession : .native }

    /// The scenarios of one `--discard` run, in the order each round runs them.
    static func all(_ options: BenchmarkOptions, curl: Bool) -> [DiscardScenario] {
        var scenarios = [
            DiscardScenario(
                kind: .sendfileBaseline, transport: nil, checksums: false, chunkSize: nil, runs: options.runs)
        ]
        if curl {
            // A second opinion on the wire; it agrees with sendfile within noise, so it gets the shorter count.
            scenarios.append(
                DiscardScenario(
                    kind: .curlBaseline, transport: nil, checksums: false, chunkSize: nil, runs: options.urlSessionRuns)
            )
        }
        let transports = options.transport == "both" ? ["native", "urlsession"] : [options.transport]
        let eight: Int64 = 8 * 1024 * 1024
        for kind in [Kind.putFile, .putData, .smallPutData] {
            for transport in transports {
                let runs = transport == "urlsession" ? options.urlSessionRuns : options.runs
                // CRC32C on and off with default streaming; 8 MiB chunks with CRC32C on (the default).
                // A small object is one multipart request whatever the chunk size.
                var variants: [(Bool, Int64?)] = [(true, nil), (false, nil)]
                if kind != .smallPutData { variants.append((true, eight)) }
                for (checksums, chunk) in variants {
                    scenarios.append(
                        DiscardScenario(
                            kind: kind, transport: transport, checksums: checksums, chunkSize: chunk, runs: runs))
                }
            }
        }
        guard !options.only.isEmpty else { return scenarios }
        // The sendfile baseline always runs: every ratio is to it.
        return scenarios.filter { scenario in
            scenario.kind == .sendfileBaseline || options.only.contains { scenario.name.hasPrefix($0) }
        }
    }
}
