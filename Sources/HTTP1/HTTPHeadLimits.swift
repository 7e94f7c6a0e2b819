/// Bounds on a message head, so that a peer cannot make a parser buffer without limit.
package struct HTTPHeadLimits: Hashable, Sendable {
    /// The most bytes the start line, the field lines and the final empty line may take together.
    package var maxHeadBytes: Int
    /// The most header field lines.
    package var maxFields: Int

    package init(maxHeadBytes: Int = 64 * 1024, maxFields: Int = 100) {
        self.maxHeadBytes = maxHeadBytes
        self.maxFields = maxFields
    }
}
