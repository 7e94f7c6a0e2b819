/// The command line: how many runs, how large the payloads are, and how to report.
struct BenchmarkOptions: Sendable {
    /// Timed runs per scenario, when given (default 5, or 3 with `--download`).
    var runsOption: Int?
    /// Size of the large payload, in MiB, when given (default 256, or 1024 with `--download` or `--tls`).
    var sizeMiBOption: Int?
    /// Number of concurrent small uploads when given (default 200, or 1000 with `--discard`).
    var smallCountOption: Int?
    /// Size of each small upload, in KiB.
    var smallSizeKiB = 64
    /// Print JSON instead of a table.
    var json = false
    /// Benchmark against the built-in emulator in discard mode instead of fake-gcs-server.
    var discard = false
    /// Benchmark downloads (`writeAsync(toFile:)`) from the built-in emulator's directory backing instead.
    var download = false
    /// With `--discard` or `--download`: `native`, `urlsession` or `both`, when given
    /// (default both, or native with `--download`).
    var transportOption: String?
    /// With `--discard`: size of the putData payload, in MiB.
    var dataMiB = 256
    /// With `--discard`: timed runs of each URLSession scenario (it is 3-5× slower than native).
    var urlSessionRuns = 2
    /// With `--discard`: run only scenarios whose names start with one of these (the sendfile baseline always runs).
    var only: [String] = []
    /// With `--discard`: skip the curl baseline even when curl is on PATH.
    var noCurl = false
    /// With `--discard`: the servers to run against, in this order (default: all, see ``BenchmarkServerKind``).
    var servers = BenchmarkServerKind.defaults
    /// With `--discard`: skip the Python google-cloud-storage client (and its install).
    var noPython = false
    /// With `--discard`: timed runs of each baseline and native scenario on the memory-backed emulator and
    /// fake-gcs-server: fewer than on the discard emulator, so that three servers fit the time budget.
    var serverRuns = 3
    /// With `--discard`: timed runs of each URLSession scenario on the memory-backed emulator and
    /// fake-gcs-server (a URLSession putFile to fake-gcs-server takes 10 s and more at 256 MiB).
    var serverURLSessionRuns = 1
    /// With `--discard`: run the memory-scaling check instead of the throughput table.
    var scale = false
    /// With `--scale`: the large file's size in MiB (compared with `--size-mib`).
    var scaleMiB = 4096
    /// Print the help text and exit.
    var help = false
    /// Whether `--servers` was given (it works only with `--discard`).
    var serversGiven = false
    /// With `--discard` or `--download`: every row over https to an emulator serving the test certificate.
    var tls = false
    /// With `--tls`: why URLSession cannot trust the test CA in this process (its rows are then skipped).
    var urlSessionTLSUnavailable: String?

    var runs: Int { runsOption ?? (download ? 3 : 5) }
    var transport: String { transportOption ?? (download ? "native" : "both") }
    /// Whether URLSession rows are planned (with `--tls` they need the test CA trusted, see ``BenchmarkTLS``).
    var plansURLSession: Bool { (discard && !scale || download) && transport != "native" }
    var sizeMiB: Int { sizeMiBOption ?? (download || tls ? 1024 : 256) }
    var smallCount: Int { smallCountOption ?? (discard ? 1000 : 200) }
    var largeSize: Int64 { Int64(sizeMiB) * 1024 * 1024 }
    var dataSize: Int64 { Int64(dataMiB) * 1024 * 1024 }
    var smallSize: Int64 { Int64(smallSizeKiB) * 1024 }

    static let helpText = """
        USAGE: upload-benchmarks [--runs N] [--size-mib M] [--small-count C] [--small-kib K] [--json]
               upload-benchmarks --discard [--servers discard,memory,fake-gcs] [--transport native|urlsession|both]
                                 [--runs N] [--urlsession-runs U] [--server-runs R] [--server-urlsession-runs V]
                                 [--size-mib M] [--data-mib D] [--small-count C] [--small-kib K] [--only P,Q]
                                 [--no-curl] [--no-python] [--json]
               upload-benchmarks --discard --scale [--size-mib M] [--scale-mib S] [--runs N] [--json]
               upload-benchmarks --download [--transport native|urlsession|both] [--runs N] [--size-mib M]
                                 [--scale [--scale-mib S]] [--no-curl] [--json]
               upload-benchmarks --tls --discard [--scale] ... | --tls --download ...   (the same over https)

        Measures CloudStorage upload throughput, CPU time and memory against a
        fake-gcs-server (memory backend) that the program starts on 127.0.0.1,
        side by side with a baseline: a raw GCS resumable upload done by curl
        (POST to open the session, then the whole file in one PUT).

        Scenarios, each timed N times (interleaved round by round):
          curl-baseline         curl -T <file>, one PUT (skipped when curl is not on PATH)
          putFile               StorageReference.putFile, default configuration
          putData               putData of the same bytes from memory
          putFile-chunk8MiB     putFile with StorageConfiguration.uploads.setChunkSize(8 MiB)
          putFile-noChecksums   putFile with verifiesChecksums = false
          small-putData         C concurrent putData uploads of K KiB each

        Every upload is checked: size, md5Hash and crc32c reported to the SDK must
        match a reference upload of the same bytes (made by curl, which sends no
        checksums, or by the SDK with checksums on when curl is missing), and once
        per scenario the server's own object resource must agree.

        OPTIONS:
          --runs N          timed runs per scenario, 1...20 (default 5)
          --size-mib M      large payload size in MiB, 1...4096 (default 256; at most 1024 without --discard)
          --small-count C   concurrent small uploads, 1...1000 (default 200; 1000 with --discard)
          --small-kib K     size of each small upload in KiB, 1...8192 (default 64)
          --json            print machine-readable JSON on stdout instead of a table
          --discard         instead: against up to three servers, one after another, each with its own
                            sendfile baseline measured in its own block (ratios are per server):
                              discard   the built-in emulator in discard mode, in this process (it checks size
                                        and checksums and stores nothing): every scenario below
                              memory    the built-in emulator with memory backing, in this process: names end
                                        in @memory; objects are deleted after each run (outside the timing)
                              fake-gcs  fake-gcs-server (memory backend, own process; installed into .build/ by
                                        pip on first use, skipped with a note when that fails): names end in
                                        @fake-gcs; objects deleted after each run; its CPU shown separately
                            Scenarios on the discard emulator, side by side in one run:
                              sendfile-baseline  raw POST + PUT head + sendfile(2) of the file, plain blocking
                                                 socket on a dedicated thread, no SDK (ratios are to this)
                              curl-baseline      curl -T, one PUT (skipped when curl is missing or --no-curl)
                              putFile / putData / small-putData per transport: CRC32C on and off with default
                              streaming, and chunkSize = 8 MiB with CRC32C on (small objects: multipart, no chunks)
                              putStream/native/crc/block64KiB  putStream of the putFile payload as 64 KiB Data
                                                 elements, each read off the cooperative pool when the SDK asks
                                                 for it, size given (native, CRC32C on, default chunking: 8 MiB
                                                 requests); .../unknownSize the same with size nil; dRSS against
                                                 the 8 MiB stream buffer + 16 MiB, MB/s against putFile's; the
                                                 targets also show the most element bytes alive at once (each
                                                 counted from its read until its buffer is freed)
                              python-gcs/crc/chunk8MiB  the Python google-cloud-storage client (pinned, pip-installed
                                                 into .build/python-gcs/venv on first use; skipped with a note when
                                                 python3, pip or the network is missing, or with --no-python):
                                                 upload_from_filename of the putFile payload, chunk_size = 8 MiB,
                                                 checksum crc32c; the comparison point for URLSession with 8 MiB chunks
                              python-gcs/crc/default    the same with the library's default (100 MiB chunks)
                            On memory and fake-gcs: sendfile-baseline, then putFile, putData and small-putData per
                            transport with CRC32C on and default streaming.
                            Plus the CRC32C pre-pass cost on its own (hardware vs portable, GB/s).
                            Defaults there: --size-mib 256 (1024 does not fit the time budget on a shared 2-core
                            machine; run --servers discard --size-mib 1024 --transport native --runs 3 for the
                            1 GiB figure), --small-count 1000.
          --servers S,T     with --discard: which servers, in order: discard, memory, fake-gcs (default all three)
          --transport T     with --discard: native, urlsession or both (default both)
          --urlsession-runs U  with --discard: timed runs of each URLSession scenario, of curl and of the Python
                            client, 1...20 (default 2)
          --server-runs R   with --discard: timed runs of each baseline and native scenario on memory and
                            fake-gcs, 1...20 (default 3)
          --server-urlsession-runs V  with --discard: timed runs of each URLSession scenario on memory and
                            fake-gcs, 1...20 (default 1)
          --only P,Q        with --discard: only scenarios whose names start with P or Q (e.g. small-putData/native,
                            python-gcs); a server's sendfile baseline runs whenever anything else on it does
          --data-mib D      with --discard: putData payload in MiB, 1...1024 (default 256)
          --no-curl         with --discard: skip the curl baseline
          --no-python       with --discard: skip the Python client (and its install)
          --scale           with --discard: memory check instead: putFile (native, CRC32C on) of a
                            --size-mib file and a --scale-mib file (default 4096), VmHWM reset before
                            each, reporting peak RSS above the idle RSS measured just before the upload
          --scale-mib S     with --scale: the larger file's size in MiB, 1...16384 (default 4096)
          --download        instead: download benchmark against the built-in emulator with a .directory
                            backing in a temporary directory (objects on disk, not in this process's RSS).
                            One --size-mib object (default 1024) is uploaded once with putFile, then each
                            round times, interleaved:
                              curl-baseline      curl -s -o <file> <media URL> (skipped without curl or with --no-curl)
                              writeAsync/native  StorageReference.writeAsync(toFile:), native transport
                              writeAsync/urlsession  the same with URLSession (only with --transport both|urlsession)
                            Every downloaded file's size and CRC32C are checked against the source file.
                            VmHWM is reset before each run; peak RSS is reported above the VmRSS just before.
                            With --scale, a --scale-mib object (default 4096) is added, downloaded natively
                            max(1, N/2) times, to show that peak RSS does not grow with the object.
                            Defaults there: --runs 3, --size-mib 1024, --transport native.
          --tls             with --discard (and --scale) or --download: everything over https:// against the
                            built-in emulator serving Tests/TLSTestCertificates/localhost.pem (discard server only),
                            every client verifying it against test-ca.pem: curl --cacert, the Python client with
                            REQUESTS_CA_BUNDLE, the native transport (.native, additionalTrustRoots). There is no
                            sendfile baseline (it cannot speak TLS): ratios are to curl-baseline ("x curl"), which
                            then gets --runs runs. --size-mib defaults to 1024 here. Scenarios: curl-baseline, putFile/putData/small-putData native
                            with CRC32C on and off, URLSession with CRC32C on, python-gcs (8 MiB and default chunks).
                            URLSession on Linux trusts only libcurl's bundle (swift-corelibs-foundation reads
                            URLSessionCertificateAuthorityInfoFile on Android only), so when URLSession rows are
                            planned the program re-executes itself under `unshare --mount` with
                            /etc/ssl/certs/ca-certificates.crt bind-mounted, in that namespace only, to the system
                            bundle plus test-ca.pem; where that is not permitted its rows are skipped with a note.
                            With --download: curl --cacert -o against writeAsync over https.
          -h, --help        show this help

        Progress goes to stderr. MB/s means 10^6 bytes per second. The exit status
        is non-zero when anything fails, including a verification mismatch.
        """

    /// Parses the arguments after the program name.
    ///
    /// - Parameter arguments: Such as `["--runs", "3", "--json"]`; `--name=value` works too.
    /// - Returns: The options.
    /// - Throws: ``BenchmarkError`` naming the bad argument.
    static func parse(_ arguments: [String]) throws(BenchmarkError) -> BenchmarkOptions {
        var options = BenchmarkOptions()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            func value() throws(BenchmarkError) -> String {
                if let inlineValue { return inlineValue }
                guard let next = remaining.popFirst() else { throw BenchmarkError("\(name) needs a value") }
                return next
            }
            func integer(in range: ClosedRange<Int>) throws(BenchmarkError) -> Int {
                let text = try value()
                guard let number = Int(text), range.contains(number) else {
                    throw BenchmarkError(
                        "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
                }
                return number
            }
            switch name {
            case "--runs": options.runsOption = try integer(in: 1...20)
            case "--size-mib": options.sizeMiBOption = try integer(in: 1...4096)
            case "--small-count": options.smallCountOption = try integer(in: 1...1000)
            case "--data-mib": options.dataMiB = try integer(in: 1...1024)
            case "--urlsession-runs": options.urlSessionRuns = try integer(in: 1...20)
            case "--server-runs": options.serverRuns = try integer(in: 1...20)
            case "--server-urlsession-runs": options.serverURLSessionRuns = try integer(in: 1...20)
            case "--scale-mib": options.scaleMiB = try integer(in: 1...16384)
            case "--scale": options.scale = true
            case "--no-curl": options.noCurl = true
            case "--no-python": options.noPython = true
            case "--servers":
                let text = try value()
                var servers: [BenchmarkServerKind] = []
                for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let server = BenchmarkServerKind(rawValue: String(part)) else {
                        throw BenchmarkError(
                            "--servers takes a comma-separated list of discard, memory and fake-gcs, not '\(text)'")
                    }
                    if !servers.contains(server) { servers.append(server) }
                }
                options.servers = servers
                options.serversGiven = true
            case "--only": options.only = try value().split(separator: ",").map(String.init)
            case "--small-kib": options.smallSizeKiB = try integer(in: 1...8192)
            case "--json": options.json = true
            case "--discard": options.discard = true
            case "--download": options.download = true
            case "--tls": options.tls = true
            case "--transport":
                let text = try value()
                guard ["native", "urlsession", "both"].contains(text) else {
                    throw BenchmarkError("--transport must be native, urlsession or both, not '\(text)'")
                }
                options.transportOption = text
            case "-h", "--help": options.help = true
            default: throw BenchmarkError("unknown argument '\(argument)' (see --help)")
            }
        }
        if options.download && options.discard {
            throw BenchmarkError("--download and --discard are separate modes; give one")
        }
        if !options.discard && !options.download, let size = options.sizeMiBOption, size > 1024 {
            // fake-gcs-server keeps every object in RAM.
            throw BenchmarkError("--size-mib must be at most 1024 without --discard, not '\(size)'")
        }
        if options.serversGiven && (!options.discard || options.scale) {
            throw BenchmarkError("--servers works only with --discard (and not with --scale)")
        }
        if options.tls && !options.discard && !options.download {
            throw BenchmarkError("--tls works only with --discard or --download")
        }
        if options.tls && options.discard {
            // Only the discard emulator serves TLS here (fake-gcs-server has no test certificate).
            guard options.servers == [.discard] || !options.serversGiven else {
                throw BenchmarkError("--tls runs against the discard emulator only: leave out --servers")
            }
            options.servers = [.discard]
        }
        if options.scale && !options.discard && !options.download {
            throw BenchmarkError("--scale works only with --discard or --download")
        }
        return options
    }
}
