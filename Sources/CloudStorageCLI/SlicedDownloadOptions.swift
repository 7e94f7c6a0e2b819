import CloudStorage

/// `cp`'s options for downloading one large object on several connections
/// (``StorageConfiguration/Downloads``): `--slices N` (1 for one connection) and
/// `--slice-threshold SIZE`. Each is checked as it is read; unset options keep the SDK's
/// defaults.
struct SlicedDownloadOptions: Sendable {
    static let valued: Set<String> = ["--slices", "--slice-threshold"]

    static let usage = """
          --slices N          download a large object on N connections at once (default 16, 1 for one)
          --slice-threshold SIZE
                              slice downloads of objects of at least SIZE (default 150M)
        """

    var threshold: Int64?
    var sliceCount: Int?

    init(_ arguments: CommandLineArguments) throws(UsageError) {
        if let text = arguments.value("--slice-threshold") {
            guard let size = CopyCommand.byteCount(text), size >= 0 else {
                throw UsageError("--slice-threshold: not a size: \(text)")
            }
            threshold = size
        }
        if let text = arguments.value("--slices") {
            var scratch = StorageConfiguration.Downloads()
            guard let count = Int(text), (try? scratch.setSliceCount(count)) != nil else {
                throw UsageError(
                    "--slices: \(text) is not a number from 1 to \(StorageConfiguration.Downloads.maxSliceCount)")
            }
            sliceCount = count
        }
    }

    /// Sets what was given (already checked).
    func apply(to downloads: inout StorageConfiguration.Downloads) throws(StorageError) {
        if let threshold { downloads.slicingThreshold = threshold }
        if let sliceCount { try downloads.setSliceCount(sliceCount) }
    }
}
