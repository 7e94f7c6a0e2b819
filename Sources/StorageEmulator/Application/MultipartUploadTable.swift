import Foundation
import Synchronization

/// The XML API multipart uploads in progress: what each initiate fixed (bucket, object, the
/// final object's metadata) and the parts stored so far, until Complete or Abort removes it.
///
/// Each part is staged where the store stages objects (a file of the bucket's directory, memory,
/// or only a count), so parts cost the store's backing, not the emulator's memory; Complete
/// appends them to a fresh staging writer and commits it like any object. A part's staged
/// bytes go when nothing holds the part any more: replaced, completed or aborted.
final class MultipartUploadTable: Sendable {
    /// One stored part.
    struct Part: Sendable {
        let staged: any StagingWriter
        /// The part's length in bytes.
        var size: Int64 { staged.size }
        /// The part's entity tag as the server hands it out, quoted: `"<md5 hex>"`.
        let etag: String
        let crc32c: UInt32
        let lastModified: Date
    }

    /// One upload in progress.
    struct Upload: Sendable {
        let id: String
        let bucket: String
        let name: String
        let attributes: ObjectAttributes
        let initiated: Date
        var parts: [Int: Part] = [:]
    }

    private let uploads = Mutex<[String: Upload]>([:])

    /// Records a new upload and returns it.
    func initiate(bucket: String, name: String, attributes: ObjectAttributes, now: Date) -> Upload {
        let upload = Upload(
            id: SessionTable.newID(), bucket: bucket, name: name, attributes: attributes, initiated: now)
        uploads.withLock { $0[upload.id] = upload }
        return upload
    }

    /// The upload `id` names, if it names one for this object.
    func upload(_ id: String, bucket: String, name: String) -> Upload? {
        uploads.withLock { table in
            guard let upload = table[id], upload.bucket == bucket, upload.name == name else { return nil }
            return upload
        }
    }

    /// Stores (or replaces) a part; false when the upload is gone meanwhile.
    func store(_ part: Part, number: Int, in id: String) -> Bool {
        uploads.withLock { table in
            guard table[id] != nil else { return false }
            table[id]?.parts[number] = part
            return true
        }
    }

    /// Removes an upload and its parts; the removed upload, or nil if there was none.
    @discardableResult
    func remove(_ id: String) -> Upload? {
        uploads.withLock { $0.removeValue(forKey: id) }
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
