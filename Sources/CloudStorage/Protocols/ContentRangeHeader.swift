/// `Content-Range: bytes a-b/N` (or `/*`) of a 206 answer.
struct ContentRangeHeader: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64?

    init(first: Int64, last: Int64, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    init?(_ header: String?) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, first <= last
        else {
            return nil
        }
        self.first = first
        self.last = last
        total = parts[1] == "*" ? nil : Int64(parts[1])
        if parts[1] != "*" && total == nil { return nil }
        // The range lies inside the object: `last < total` (which also keeps `last + 1` from overflowing).
        if let total, last >= total { return nil }
    }
}
