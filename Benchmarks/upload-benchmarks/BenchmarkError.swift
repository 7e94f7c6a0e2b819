/// A failure that ends the benchmark with a non-zero exit status.
struct BenchmarkError: Error, CustomStringConvertible {
    /// What went wrong, for the person running the benchmark.
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
