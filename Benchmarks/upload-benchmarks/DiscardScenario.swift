import CloudStorage

/// One thing `--discard` times: a baseline, an SDK upload with one transport and one setting of
/// checksums and chunking, or the Python client; each against one server.
struct DiscardScenario: Sendable {
    enum Kind: Sendable, Equatable {
        /// Raw POST + PUT head + `sendfile(2)` in this process, no SDK: the reference for every ratio.
        case sendfileBaseline
        /// `curl -T`, one PUT.
        case curlBaseline
        /// `putFile` of the large file.
        case putFile
        /// `putStream` of the large file's bytes as ``DiscardScenario/streamElementBytes`` `Data`
        /// elements (``FileBlocks``), with its size given or nil.
        case putStream(sizeKnown: Bool)
        /// `putData` of the data payload (already in memory).
        case putData
        /// Many concurrent small `putData` uploads.
        case smallPutData
        /// The Python google-cloud-storage client's `upload_from_filename` of the large file.
        case pythonClient
    }

    let kind: Kind
    /// `native` or `urlsession`; nil for baselines and the Python client.
    let transport: String?
    let checksums: Bool
    /// `StorageConfiguration.uploads.chunkSize` (or the Python client's `chunk_size`), or nil for one streaming
    /// request (the Python client's default: 100 MiB chunks).
    let chunkSize: Int64?
    /// Timed runs.
    let runs: Int
    /// The server it uploads to.
    var server: BenchmarkServerKind = .discard

    /// The size of a putStream scenario's elements: what a server's request body typically
    /// arrives in, small enough that the SDK's buffer, not the elements, decides the memory.
    static let streamElementBytes = 64 * 1024

    var isBaseline: Bool { kind == .sendfileBaseline || kind == .curlBaseline }
    var countsUploads: Bool { kind == .smallPutData }

    /// A short stable name, the JSON key: such as `putFile/native/crc/chunk8MiB`, with `@memory` or
    /// `@fake-gcs` appended for those servers (none for the discard emulator, as before there were others).
    var name: String {
        let suffix = server == .discard ? "" : "@\(server.rawValue)"
        switch kind {
        case .sendfileBaseline: return "sendfile-baseline" + suffix
        case .curlBaseline: return "curl-baseline" + suffix
        case .pythonClient:
            return "python-gcs/\(checksums ? "crc" : "nocrc")/"
                + (chunkSize.map { "chunk\($0 >> 20)MiB" } ?? "default") + suffix
        case .putStream(let sizeKnown):
            var parts = ["putStream", transport ?? "?", checksums ? "crc" : "nocrc"]
            if let chunkSize { parts.append("chunk\(chunkSize >> 20)MiB") }
            parts.append("block\(Self.streamElementBytes >> 10)KiB")
            if !sizeKnown { parts.append("unknownSize") }
            return parts.joined(separator: "/") + suffix
        case .putFile, .putData, .smallPutData:
            let base = kind == .putFile ? "putFile" : kind == .putData ? "putData" : "small-putData"
            var parts = [base, transport ?? "?", checksums ? "crc" : "nocrc"]
            if let chunkSize { parts.append("chunk\(chunkSize >> 20)MiB") }
            return parts.joined(separator: "/") + suffix
        }
    }

    var choice: StorageTransportChoice { transport == "urlsession" ? .urlSession : .native }

    /// The scenarios of one `--discard` run, grouped by server in the order of `options.servers`, each
    /// group in the order its rounds run them.
    ///
    /// The discard emulator gets every flavour (putStream only natively, with CRC32C on and default
    /// chunking, its size given and not: the memory check of a streamed upload); the memory-backed emulator and fake-gcs-server a subset
    /// that keeps the run short: their own sendfile baseline, then putFile, putData and the small
    /// uploads per transport with CRC32C on and default streaming.
    ///
    /// - Parameters:
    ///   - options: Servers, transports, runs and the `--only` filter.
    ///   - curl: Whether to add the curl baseline (discard emulator only).
    ///   - python: Whether to add the Python client (discard emulator only): 8 MiB chunks, and the
    ///     library's default chunking.
    /// - Returns: The scenarios; the ratio baseline (sendfile, or curl with `--tls`) of every server that has
    ///   any is among them, whatever `--only` says.
    static func all(_ options: BenchmarkOptions, curl: Bool, python: Bool) -> [DiscardScenario] {
        let scenarios =
            options.tls ? overTLS(options, curl: curl, python: python) : plain(options, curl: curl, python: python)
        guard !options.only.isEmpty else { return scenarios }
        let chosen = scenarios.filter { scenario in options.only.contains { scenario.name.hasPrefix($0) } }
        // A server's ratio baseline (sendfile, or curl over TLS) runs whenever anything else on that
        // server does: its ratios are to it. A server with nothing chosen is left out.
        let baseline: Kind = options.tls ? .curlBaseline : .sendfileBaseline
        return scenarios.filter { scenario in
            chosen.contains { $0.name == scenario.name }
                || (scenario.kind == baseline && chosen.contains { $0.server == scenario.server })
        }
    }

    /// `--tls`: the discard emulator over https. No sendfile baseline (it cannot speak TLS): curl,
    /// the ratio baseline, gets the full run count; native with CRC32C on and off (default
    /// streaming); URLSession with CRC32C on; the Python client with 8 MiB and default chunks.
    private static func overTLS(_ options: BenchmarkOptions, curl: Bool, python: Bool) -> [DiscardScenario] {
        let transports = options.transport == "both" ? ["native", "urlsession"] : [options.transport]
        var scenarios: [DiscardScenario] = []
        if curl {
            scenarios.append(
                DiscardScenario(
                    kind: .curlBaseline, transport: nil, checksums: false, chunkSize: nil, runs: options.runs))
        }
        for kind in [Kind.putFile, .putData, .smallPutData] {
            for transport in transports {
                let native = transport == "native"
                for checksums in native ? [true, false] : [true] {
                    scenarios.append(
                        DiscardScenario(
                            kind: kind, transport: transport, checksums: checksums, chunkSize: nil,
                            runs: native ? options.runs : options.urlSessionRuns))
                }
            }
        }
        if python {
            for chunk in [Int64(8 * 1024 * 1024), nil] {
                scenarios.append(
                    DiscardScenario(
                        kind: .pythonClient, transport: nil, checksums: true, chunkSize: chunk,
                        runs: options.urlSessionRuns))
            }
        }
        return scenarios
    }

    private static func plain(_ options: BenchmarkOptions, curl: Bool, python: Bool) -> [DiscardScenario] {
        let transports = options.transport == "both" ? ["native", "urlsession"] : [options.transport]
        let eight: Int64 = 8 * 1024 * 1024
        var scenarios: [DiscardScenario] = []
        for server in options.servers {
            let runs = server == .discard ? options.runs : options.serverRuns
            let urlSessionRuns = server == .discard ? options.urlSessionRuns : options.serverURLSessionRuns
            var group = [
                DiscardScenario(
                    kind: .sendfileBaseline, transport: nil, checksums: false, chunkSize: nil, runs: runs,
                    server: server)
            ]
            if server == .discard && curl {
                // A second opinion on the wire; it agrees with sendfile within noise, so it gets the shorter count.
                group.append(
                    DiscardScenario(
                        kind: .curlBaseline, transport: nil, checksums: false, chunkSize: nil,
                        runs: options.urlSessionRuns))
            }
            for kind in [Kind.putFile, .putData, .smallPutData] {
                for transport in transports {
                    let transportRuns = transport == "urlsession" ? urlSessionRuns : runs
                    // CRC32C on and off with default streaming; 8 MiB chunks with CRC32C on (the default).
                    // A small object is one multipart request whatever the chunk size.
                    var variants: [(Bool, Int64?)] = [(true, nil)]
                    if server == .discard {
                        variants.append((false, nil))
                        if kind != .smallPutData { variants.append((true, eight)) }
                    }
                    for (checksums, chunk) in variants {
                        group.append(
                            DiscardScenario(
                                kind: kind, transport: transport, checksums: checksums, chunkSize: chunk,
                                runs: transportRuns, server: server))
                    }
                }
                // Right after putFile, so that each round runs them back to back on the same file.
                if kind == .putFile && server == .discard && transports.contains("native") {
                    for sizeKnown in [true, false] {
                        group.append(
                            DiscardScenario(
                                kind: .putStream(sizeKnown: sizeKnown), transport: "native", checksums: true,
                                chunkSize: nil, runs: runs, server: server))
                    }
                }
            }
            if server == .discard && python {
                // The comparison point for URLSession: as many runs as its scenarios get.
                for chunk in [eight, nil] {
                    group.append(
                        DiscardScenario(
                            kind: .pythonClient, transport: nil, checksums: true, chunkSize: chunk,
                            runs: options.urlSessionRuns))
                }
            }
            scenarios += group
        }
        return scenarios
    }
}
