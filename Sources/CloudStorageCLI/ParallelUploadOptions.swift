import CloudStorage

/// `cp`'s options for sending one large file in parts on several connections
/// (``StorageConfiguration/Uploads/Parallel``): `--parallel-threshold SIZE` (`off` for one
/// stream), `--part-size SIZE`, `--connections N`. Unset options keep the SDK's defaults.
struct ParallelUploadOptions: Sendable {
    static let valued: Set<String> = ["--parallel-threshold", "--part-size", "--connections"]

    static let usage = """
          --parallel-threshold SIZE  send files of at least SIZE in parts on several
                              connections (default 128M; off: always one stream)
          --part-size SIZE    the size of those parts (default 32M)
          --connections N     how many parts go at once (default 16, at most 64)
        """

    var threshold: Int64?
    var partSize: Int64?
    var connections: Int?

    init(_ arguments: CommandLineArguments) throws(UsageError) {
        if let text = arguments.value("--parallel-threshold") {
            if text == "off" {
                threshold = .max
            } else {
                guard let size = CopyCommand.byteCount(text), size >= 0 else {
                    throw UsageError("--parallel-threshold: not a size: \(text)")
                }
                threshold = size
            }
        }
        if let text = arguments.value("--part-size") {
            guard let size = CopyCommand.byteCount(text) else { throw UsageError("--part-size: not a size: \(text)") }
            partSize = size
        }
        if let text = arguments.value("--connections") {
            guard let count = Int(text) else { throw UsageError("--connections: not a number: \(text)") }
            connections = count
        }
    }

    /// Sets what was given; the SDK refuses sizes and counts out of range.
    func apply(to parallel: inout StorageConfiguration.Uploads.Parallel) throws(StorageError) {
        if let threshold { parallel.threshold = threshold }
        if let partSize { try parallel.setPartSize(partSize) }
        if let connections { try parallel.setConnections(connections) }
    }
}
