import Foundation
import HTTP1

/// The GCS JSON API's bucket calls that Google's clients make: insert, get, list, patch
/// (versioning, requester pays), delete, and the storage layout gcloud reads before `mv` and `rm -r`.
extension EmulatorApplication {
    /// `buckets.get`.
    func gcsGetBucket(_ request: any ServerRequest, bucket name: String) throws -> Reply {
        let preconditions = try BucketPreconditions(request)
        guard let bucket = store.bucket(name) else { throw noSuchBucket }
        try preconditions.check(bucket)
        return Reply.json(200, bucketResource(bucket, base: base(request)))
    }

    /// `buckets.patch` (PATCH) and `buckets.update` (PUT): versioning and requester pays
    /// (`billing.requesterPays`) are the writable settings.
    func gcsUpdateBucket(_ request: any ServerRequest, _ body: BodyReader, bucket name: String) throws -> Reply {
        let preconditions = try BucketPreconditions(request)
        let patch = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        let versioning = try Self.flag(in: patch, "versioning", "enabled")
        let requesterPays = try Self.flag(in: patch, "billing", "requesterPays")
        settings.beforeStoreWrite?()
        let updated = try store.updateBucket(name) { bucket in
            try preconditions.check(bucket)
            // `update` replaces every writable setting: versioning is off unless the body says otherwise.
            if let versioning {
                bucket.versioning = versioning
            } else if request.method == "PUT" {
                bucket.versioning = false
            }
            if let requesterPays {
                bucket.requesterPays = requesterPays
            } else if request.method == "PUT" {
                bucket.requesterPays = false
            }
            bucket.metageneration += 1
            bucket.updated = Date()
        }
        guard let updated else { throw noSuchBucket }
        return Reply.json(200, bucketResource(updated, base: base(request)))
    }

    /// `buckets.delete`: only an empty bucket.
    func gcsDeleteBucket(_ request: any ServerRequest, bucket name: String) throws -> Reply {
        let preconditions = try BucketPreconditions(request)
        settings.beforeStoreWrite?()
        let deleted: Bool
        do {
            deleted = try store.deleteBucket(name, if: preconditions.holds)
        } catch {
            throw httpError(error)
        }
        guard deleted else { throw noSuchBucket }
        return Reply(status: 204)
    }

    /// `GET /storage/v1/b/{bucket}/storageLayout` or `…/managedFolders`.
    func gcsBucketListing(_ name: String, _ listing: GCSBucketListing) throws -> Reply {
        guard let bucket = store.bucket(name) else { throw noSuchBucket }
        switch listing {
        case .storageLayout:
            // A flat namespace, where the bucket is.
            return Reply.json(
                200,
                [
                    "kind": "storage#storageLayout", "bucket": bucket.name, "location": "US",
                    "locationType": "multi-region", "hierarchicalNamespace": ["enabled": false],
                ])
        case .managedFolders:
            // The emulator has no IAM, so no managed folders; gcloud lists them before `rm -r`.
            return Reply.json(200, ["kind": "storage#managedFolders"])
        }
    }

    private var noSuchBucket: HTTPError { HTTPError(404, "The specified bucket does not exist.") }

    /// `buckets.insert`.
    func gcsCreateBucket(_ request: any ServerRequest, _ body: BodyReader) throws -> Reply {
        let json = try JSON.decodeObject(try body.readAll(limit: 1024 * 1024))
        guard let name = json["name"] as? String else { throw HTTPError(400, "Required", reason: "required") }
        let versioning = try Self.flag(in: json, "versioning", "enabled")
        let requesterPays = try Self.flag(in: json, "billing", "requesterPays")
        let created: Bool
        do {
            created = try store.createBucket(name)
        } catch {
            throw httpError(error)
        }
        guard created else {
            throw HTTPError(409, "Your previous request to create the named bucket succeeded and you already own it.")
        }
        var bucket = store.bucket(name)
        if versioning == true || requesterPays == true {
            bucket = try store.updateBucket(name) { bucket in
                bucket.versioning = versioning == true
                bucket.requesterPays = requesterPays == true
            }
        }
        guard let bucket else { throw noSuchBucket }
        return Reply.json(200, bucketResource(bucket, base: base(request)))
    }

    /// `buckets.list`: buckets in name order, `prefix`, `maxResults` and `pageToken` (the last name returned).
    func gcsListBuckets(_ request: any ServerRequest) throws -> Reply {
        let prefix = Array((request.query("prefix") ?? "").utf8)
        let maxResults = try maxResults(request)
        var after: [UInt8]?
        if let token = request.query("pageToken"), !token.isEmpty {
            guard let data = Data(base64Encoded: token) else { throw HTTPError.badRequest("Invalid page token.") }
            after = Array(data)
        }
        var items: [BucketRecord] = []
        var nextPageToken: String?
        for bucket in store.buckets() {
            let name = Array(bucket.name.utf8)
            guard name.starts(with: prefix) else { continue }
            if let after, !after.lexicographicallyPrecedes(name) { continue }
            if items.count == maxResults {
                nextPageToken = items.last.map { Data($0.name.utf8).base64EncodedString() }
                break
            }
            items.append(bucket)
        }
        let base = base(request)
        var json: [String: Any] = ["kind": "storage#buckets"]
        if !items.isEmpty { json["items"] = items.map { bucketResource($0, base: base) } }
        if let nextPageToken { json["nextPageToken"] = nextPageToken }
        return Reply.json(200, json)
    }

    /// The bucket resource.
    private func bucketResource(_ bucket: BucketRecord, base: String) -> [String: Any] {
        var json: [String: Any] = [
            "kind": "storage#bucket", "id": bucket.name, "name": bucket.name,
            "selfLink": "\(base)/storage/v1/b/\(URLText.encodeComponent(bucket.name))", "location": "US",
            "locationType": "multi-region", "storageClass": "STANDARD", "projectNumber": "0",
            "timeCreated": Timestamp.format(bucket.timeCreated), "updated": Timestamp.format(bucket.updated),
            "metageneration": String(bucket.metageneration),
            "etag": Data("\(bucket.name):\(bucket.metageneration)".utf8).base64EncodedString(),
        ]
        if bucket.versioning { json["versioning"] = ["enabled": true] }
        if bucket.requesterPays { json["billing"] = ["requesterPays": true] }
        return json
    }

    /// A flag of a bucket resource, such as `versioning.enabled`: nil when the body does not set it.
    private static func flag(in json: [String: Any], _ object: String, _ field: String) throws -> Bool? {
        guard let value = json[object], !(value is NSNull) else { return nil }
        guard let settings = value as? [String: Any] else {
            throw HTTPError.badRequest("Invalid value for field '\(object)'.")
        }
        guard let setting = settings[field], !(setting is NSNull) else { return nil }
        guard let flag = setting as? Bool else {
            throw HTTPError.badRequest("Invalid value for field '\(object).\(field)'.")
        }
        return flag
    }
}

/// What `GET /storage/v1/b/{bucket}/<listing>` reads about a bucket.
enum GCSBucketListing: String {
    case storageLayout, managedFolders
}

/// A bucket request's `ifMetagenerationMatch` / `ifMetagenerationNotMatch`, as Cloud Storage checks them.
struct BucketPreconditions {
    var ifMetagenerationMatch: Int64?
    var ifMetagenerationNotMatch: Int64?

    /// - Throws: ``HTTPError`` (400) naming the parameter when one is not a non-negative number.
    init(_ request: any ServerRequest) throws {
        ifMetagenerationMatch = try request.query("ifMetagenerationMatch").map {
            try RequestNumber.nonNegative($0, field: "ifMetagenerationMatch")
        }
        ifMetagenerationNotMatch = try request.query("ifMetagenerationNotMatch").map {
            try RequestNumber.nonNegative($0, field: "ifMetagenerationNotMatch")
        }
    }

    /// - Throws: ``HTTPError`` 412 when a condition does not hold.
    func check(_ bucket: BucketRecord) throws {
        if let ifMetagenerationMatch, bucket.metageneration != ifMetagenerationMatch {
            throw HTTPError(412, "At least one of the pre-conditions you specified did not hold.")
        }
        if let ifMetagenerationNotMatch, bucket.metageneration == ifMetagenerationNotMatch {
            throw HTTPError(412, "At least one of the pre-conditions you specified did not hold.")
        }
    }

    /// Whether the conditions hold: what the store asks under its lock.
    func holds(_ bucket: BucketRecord) -> Bool {
        (try? check(bucket)) != nil
    }
}
