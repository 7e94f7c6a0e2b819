import Foundation
import Synchronization

/// The XML API multipart uploads in progress: what each initiate fixed (bucket, object, the
/// final object's metadata) and the parts stored so far, until Complete or Abort removes it.
///
/// Parts are staged where the store stages objects (a file of the bucket's directory, memory, or
/// only a count), never in the emulator's own memory. Each upload has one shared staging
/// writer in which part *n* is written at (*n* − 1) × the upload's stride, the length of the
/// first part begun: clients send equal parts but the last, so a Complete of parts 1…*k* finds
/// the object already assembled and commits the shared writer as it lies, without copying
/// it. A part that cannot go there (a length unknown or above the stride, its place held by a
/// stored part or by another attempt) is staged on its own, and a Complete that names such a
/// part, or parts out of that layout, appends every part to a fresh writer instead. Either
/// way the bytes are the parts', in the order named.
///
/// A part's staged bytes go when nothing holds the part any more: replaced, completed or aborted.
final class MultipartUploadTable: Sendable {
    /// One stored part.
    struct Part: Sendable {
        /// Holds the part's bytes: the upload's shared writer, or one of the part's own.
        let writer: any StagingWriter
        /// Where the bytes start in ``writer``: 0 in a writer of the part's own.
        let offset: Int64
        /// The part's length in bytes.
        let size: Int64
        /// Whether the part lies in the upload's shared writer at its place.
        let isPlaced: Bool
        /// The part's entity tag as the server hands it out, quoted: `"<md5 hex>"`.
        let etag: String
        let crc32c: UInt32
        let lastModified: Date

        /// The part's bytes in ``writer``.
        var range: Range<Int64> { offset..<offset + size }
    }

    /// One upload in progress.
    struct Upload: Sendable {
        let id: String
        let bucket: String
        let name: String
        let attributes: ObjectAttributes
        let initiated: Date
        var parts: [Int: Part] = [:]
        /// The writer parts are placed in, part *n* at (*n* − 1) × ``stride``.
        let shared: any StagingWriter
        /// The length of the first part begun; nil before it.
        var stride: Int64?
        /// The parts being written into ``shared`` now, by number.
        var writing: Set<Int> = []
        /// A Complete is under way: no other Complete or Abort may act on the upload, and no
        /// part claims a place in ``shared`` (see ``MultipartUploadTable/beginCompletion(_:)``).
        var completing = false

        /// Ends the claim of the attempt writing part `number` into ``shared``; the writer lets go
        /// of its descriptor once no attempt writes into it.
        mutating func endClaim(_ number: Int) {
            writing.remove(number)
            if writing.isEmpty { shared.relinquish() }
        }

        /// Whether `numbers` are 1…*k*, each stored at its place, all but the last exactly
        /// ``stride`` long: then ``shared`` holds their bytes, in order, from offset 0.
        func liesAssembled(_ numbers: [Int]) -> Bool {
            guard let stride else { return false }
            for (index, number) in numbers.enumerated() {
                guard number == index + 1, let part = parts[number], part.isPlaced else { return false }
                if index < numbers.count - 1, part.size != stride { return false }
            }
            return true
        }
    }

    private let uploads = Mutex<[String: Upload]>([:])
    private let copied = Atomic<Int64>(0)

    /// Part bytes Complete had to copy into a fresh writer, over all uploads (for tests).
    var bytesCopied: Int64 { copied.load(ordering: .relaxed) }

    /// Adds to ``bytesCopied``.
    func countCopied(_ count: Int64) {
        copied.add(count, ordering: .relaxed)
    }

    /// Records a new upload, whose parts will be placed in `shared`, and returns it.
    func initiate(
        bucket: String, name: String, attributes: ObjectAttributes, shared: any StagingWriter, now: Date
    ) -> Upload {
        let upload = Upload(
            id: SessionTable.newID(), bucket: bucket, name: name, attributes: attributes, initiated: now,
            shared: shared)
        uploads.withLock { $0[upload.id] = upload }
        return upload
    }

    /// The upload `id` names, in whichever bucket.
    func upload(_ id: String) -> Upload? {
        uploads.withLock { $0[id] }
    }

    /// The upload `id` names, if it names one for this object.
    func upload(_ id: String, bucket: String, name: String) -> Upload? {
        uploads.withLock { table in
            guard let upload = table[id], upload.bucket == bucket, upload.name == name else { return nil }
            return upload
        }
    }

    /// Claims part `number`'s place in the upload's shared writer for an attempt of `length`
    /// bytes: its offset there, or nil when the attempt must be staged on its own (length
    /// unknown, empty or above the stride; the place held by a stored part or another attempt;
    /// the upload gone). A claim ends with ``store(_:number:in:)`` or ``release(_:in:)``.
    func claimPlace(for number: Int, length: Int64?, in id: String) -> Int64? {
        uploads.withLock { table in
            guard var upload = table[id], !upload.completing, let length, length > 0 else { return nil }
            let stride = upload.stride ?? length
            guard length <= stride, !upload.writing.contains(number), upload.parts[number]?.isPlaced != true
            else { return nil }
            upload.stride = stride
            upload.writing.insert(number)
            table[id] = upload
            return Int64(number - 1) * stride
        }
    }

    /// Ends a claim whose attempt failed: the place is free again (what it wrote there is
    /// nobody's).
    func release(_ number: Int, in id: String) {
        uploads.withLock { table in
            table[id]?.endClaim(number)
        }
    }

    /// Stores (or replaces) a part, ending its attempt's claim if it was placed; false when the
    /// upload is gone meanwhile.
    func store(_ part: Part, number: Int, in id: String) -> Bool {
        uploads.withLock { table in
            guard table[id] != nil else { return false }
            table[id]?.parts[number] = part
            if part.isPlaced { table[id]?.endClaim(number) }
            return true
        }
    }

    /// Marks the upload as being completed and returns it as it stands, or nil when it is gone
    /// or another Complete is under way: one Complete at a time, and an Abort meanwhile finds
    /// no upload. The Complete ends with ``remove(_:)`` (or ``remove(_:if:)``) when it succeeds,
    /// ``endCompletion(_:)`` when it fails.
    func beginCompletion(_ id: String) -> Upload? {
        uploads.withLock { table in
            guard var upload = table[id], !upload.completing else { return nil }
            upload.completing = true
            table[id] = upload
            return upload
        }
    }

    /// Ends a Complete that failed: the upload takes parts, Completes and Aborts again.
    func endCompletion(_ id: String) {
        uploads.withLock { table in table[id]?.completing = false }
    }

    /// Removes an upload and its parts; the removed upload, or nil if there was none.
    @discardableResult
    func remove(_ id: String) -> Upload? {
        uploads.withLock { $0.removeValue(forKey: id) }
    }

    /// Removes an upload an Abort names, unless a Complete is under way (the Complete wins):
    /// the removed upload, or nil.
    func abort(_ id: String) -> Upload? {
        uploads.withLock { table in
            guard table[id]?.completing == false else { return nil }
            return table.removeValue(forKey: id)
        }
    }

    /// Removes the upload if, as it stands, no part is being written into its shared writer and
    /// `isReady` accepts it: the upload, now the caller's alone, or nil (nothing changed).
    func remove(_ id: String, if isReady: (Upload) -> Bool) -> Upload? {
        uploads.withLock { table in
            guard let upload = table[id], upload.writing.isEmpty, isReady(upload) else { return nil }
            return table.removeValue(forKey: id)
        }
    }

    /// The uploads in progress in a bucket, by object name then initiation.
    func uploads(in bucket: String) -> [Upload] {
        uploads.withLock { table in
            table.values.filter { $0.bucket == bucket }.sorted {
                ($0.name, $0.initiated, $0.id) < ($1.name, $1.initiated, $1.id)
            }
        }
    }

    /// How many uploads are in progress, in every bucket.
    var count: Int { uploads.withLock { $0.count } }
}
