import Foundation

/// Builds one page of a GCS listing from the records a scan visits in name order (see
/// ``EmulatorApplication/list(bucket:prefix:delimiter:maxResults:pageToken:filter:)``): each
/// record is taken as an item, collapsed into a common prefix, or passed over, and the answer
/// tells the scan where to go on.
struct ListPageBuilder {
    let prefixKey: ObjectKey
    let endKey: ObjectKey?
    let delimiterBytes: [UInt8]
    let maxResults: Int
    let filter: EmulatorApplication.ListFilter
    private(set) var page = EmulatorApplication.ListPage()
    /// Records considered so far.
    private(set) var visited = 0
    private var lastKey: (isPrefix: Bool, key: ObjectKey, generation: Int64)?

    init(
        prefixKey: ObjectKey, endKey: ObjectKey?, delimiterBytes: [UInt8], maxResults: Int,
        filter: EmulatorApplication.ListFilter
    ) {
        self.prefixKey = prefixKey
        self.endKey = endKey
        self.delimiterBytes = delimiterBytes
        self.maxResults = maxResults
        self.filter = filter
    }

    /// Takes the next record of the scan; where the scan goes next.
    mutating func consider(_ record: ObjectRecord) -> ScanStep {
        visited += 1
        let name = ObjectKey(record.name)
        // The names under the prefix are contiguous in name order: the first other one ends the listing.
        guard name.bytes.starts(with: prefixKey.bytes) else { return .stop }
        if let endKey, !(name < endKey) { return .stop }
        if let glob = filter.glob, !glob.matches(record.name) { return .next }
        var entry: (isPrefix: Bool, key: ObjectKey, generation: Int64) = (false, name, record.generation)
        if !delimiterBytes.isEmpty,
            let end = Self.endOfFirstMatch(of: delimiterBytes, in: name.bytes, from: prefixKey.bytes.count)
        {
            // UTF-8 is self-synchronising: a match of valid UTF-8 ends on a character boundary.
            entry = (true, ObjectKey(bytes: Array(name.bytes[..<end])), 0)
        }
        // A name that ends with its first delimiter is listed as an item and as its prefix
        // (`includeTrailingDelimiter`): the pair counts as two and is never split across
        // pages, so it starts a new page rather than overfill this one (a page of one holds it).
        let count = filter.includeTrailingDelimiter && entry.isPrefix && entry.key == name ? 2 : 1
        let used = page.items.count + page.prefixes.count
        if used + count > maxResults, used > 0 {
            if let lastKey {
                let tag = lastKey.isPrefix ? "p:" : filter.versions ? "v:\(lastKey.generation):" : "i:"
                page.nextPageToken = Data(Array(tag.utf8) + lastKey.key.bytes).base64EncodedString()
            }
            return .stop
        }
        lastKey = entry
        guard entry.isPrefix else {
            page.items.append(record)
            return .next
        }
        page.prefixes.append(String(decoding: entry.key.bytes, as: UTF8.self))
        // A name that ends with its first delimiter is its own prefix's only member of that name.
        if filter.includeTrailingDelimiter, entry.key == name { page.items.append(record) }
        // Every other name under this prefix collapses into it: skip them all at once.
        return entry.key.prefixEnd.map { .seek($0) } ?? .stop
    }

    /// The index just past the first occurrence of `needle` in `bytes` at or after `start`.
    static func endOfFirstMatch(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count)
        where bytes[index..<index + needle.count].elementsEqual(needle) {
            return index + needle.count
        }
        return nil
    }
}
