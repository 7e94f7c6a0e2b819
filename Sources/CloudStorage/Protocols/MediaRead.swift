/// One request for an object's bytes, as a download decides it
/// (``RangedDownloadStateMachine``): the wire protocol turns it into a request
/// (``ObjectWireProtocol/media(bucket:name:_:preconditions:)``) and reads the answer to it
/// (``ObjectWireProtocol/mediaHead(status:headers:answering:)``).
struct MediaRead: Sendable, Equatable {
    /// The generation the reference names, asked for by number; nil for the live object.
    var generation: Int64?
    /// The first byte wanted: where the range starts, plus what earlier answers delivered.
    var offset: Int64
    /// The last byte wanted (inclusive), or nil for every byte to the object's end.
    var last: Int64?
    /// The generation earlier answers of the download came from, which the server must
    /// serve or refuse with `412` (so a resumption never mixes the bytes of two generations);
    /// only given to a protocol that ``ObjectWireProtocol/pinsGenerations``.
    var expectedGeneration: Int64?
    /// Whether to ask for the whole object, without a `Range`, although `offset` is past its
    /// start: the body arrives decoded (decompressive transcoding), which a `Range` over the
    /// stored bytes cannot continue; the download skips the `offset` bytes it already has.
    var wholeObject = false

    /// The `Range` header value that asks for these bytes, or nil for the whole object.
    var rangeHeader: String? {
        if wholeObject { return nil }
        if let last { return "bytes=\(offset)-\(last)" }
        return offset > 0 ? "bytes=\(offset)-" : nil
    }
}
