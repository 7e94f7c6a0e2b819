/// The bytes of an object a download asks for: from `start`, to `end` inclusive
/// or to the object's end.
package struct ByteRange: Sendable, Equatable {
    package var start: Int64
    /// The last byte wanted (inclusive), or nil for every byte to the end.
    package var end: Int64?

    /// The bytes from `start` to `end` inclusive, or to the object's end when `end` is nil.
    package init(start: Int64, end: Int64?) {
        self.start = start
        self.end = end
    }

    /// A range from public range expressions; nil for one that means the whole object.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` for an empty range or a negative bound.
    package init?(_ expression: some RangeExpression<Int64>) throws(StorageError) {
        let start: Int64
        let end: Int64?
        switch expression {
        case let closed as ClosedRange<Int64>:
            (start, end) = (closed.lowerBound, closed.upperBound)
        case let through as PartialRangeThrough<Int64>:
            (start, end) = (0, through.upperBound)
        case let from as PartialRangeFrom<Int64>:
            (start, end) = (from.lowerBound, nil)
        case let halfOpen as Range<Int64>:
            guard !halfOpen.isEmpty else {
                throw .invalidArgument("The range \(halfOpen) is empty; ask for at least one byte.")
            }
            (start, end) = (halfOpen.lowerBound, halfOpen.upperBound - 1)
        case let upTo as PartialRangeUpTo<Int64>:
            guard upTo.upperBound > 0 else {
                throw .invalidArgument("The range ..<\(upTo.upperBound) is empty; ask for at least one byte.")
            }
            (start, end) = (0, upTo.upperBound - 1)
        default:
            // Half-open shapes (`a..<b`, `..<b`): relative to every offset an object can have.
            let bounds = expression.relative(to: 0..<Int64.max)
            guard !bounds.isEmpty else {
                throw .invalidArgument("The range \(bounds) is empty; ask for at least one byte.")
            }
            (start, end) = (bounds.lowerBound, bounds.upperBound - 1)
        }
        guard start >= 0, end.map({ $0 >= 0 }) ?? true else {
            throw .invalidArgument("A byte range cannot have a negative bound (\(expression)).")
        }
        // No object reaches Int64.max bytes: such an end means "to the end", and keeps `end + 1` finite.
        let open = end == nil || end == Int64.max
        if start == 0 && open { return nil }
        self.start = start
        self.end = open ? nil : end
    }
}
