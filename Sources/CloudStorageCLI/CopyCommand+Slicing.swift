import CloudStorage

extension CopyCommand {
    /// The options that set how a file download is sliced (``StorageConfiguration/Downloads``).
    static let slicingValued: Set<String> = ["--slices", "--slice-threshold"]

    /// The usage lines of the slicing options.
    static let slicingUsage = """
          --slices N          download a large object on N connections at once (default 16, 1 for one)
          --slice-threshold SIZE
                              slice downloads of objects of at least SIZE (default 150M)
        """

    /// `--slices` and `--slice-threshold`: the SDK's download slicing, its defaults where not given.
    static func downloads(_ arguments: CommandLineArguments) throws(UsageError) -> StorageConfiguration.Downloads {
        var downloads = StorageConfiguration.Downloads()
        if let text = arguments.value("--slice-threshold") {
            guard let size = byteCount(text), size >= 0 else {
                throw UsageError("--slice-threshold: not a size: \(text)")
            }
            downloads.slicingThreshold = size
        }
        if let text = arguments.value("--slices") {
            guard let count = Int(text), (try? downloads.setSliceCount(count)) != nil else {
                throw UsageError(
                    "--slices: \(text) is not a number from 1 to \(StorageConfiguration.Downloads.maxSliceCount)")
            }
        }
        return downloads
    }
}
