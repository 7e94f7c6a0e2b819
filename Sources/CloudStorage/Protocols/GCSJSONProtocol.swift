import Foundation
import HTTPClient

/// The Google Cloud Storage JSON API's upload protocol: `uploadType=multipart`
/// for small objects and `uploadType=resumable` sessions for the rest.
///
/// Which requests may reach the server twice (``HTTPRequest/isIdempotent``,
/// so a transport may resend one whose kept-alive connection proved dead):
/// - A single-request upload creates an object: not idempotent (a second
///   copy could overwrite a newer object; with `ifGenerationMatch`, a copy
///   arriving after the first succeeded would be refused with 412 although
///   the object is stored).
/// - Starting a session opens a new one each time: not idempotent.
/// - A session `PUT` with `Content-Range` (bytes, a status query or a
///   finalizing `bytes */N`) is idempotent by the protocol's offset rules:
///   the server ignores bytes below what it committed, and a finished
///   session answers any later request with the object again.
/// - Cancelling (`DELETE` on the session), the object metadata read and the
///   delete of one named generation leave the same state however often they
///   arrive: idempotent.
struct GCSJSONProtocol: UploadWireProtocol {
    let baseURL: URL
    /// What every request carries besides its arguments (see ``StorageRequestOptions``).
    var options = StorageRequestOptions()

    /// Statuses 308 (incomplete), 200/201 (complete) and 404/410 (the
    /// session is gone).
    let sessionAnswerStatuses: Set<Int> = [200, 201, 308, 404, 410]
    /// `X-Goog-Hash: crc32c=…` on the final request.
    let checksFinalChecksum = true

    func singleRequestUpload(_ upload: UploadDescription, body: HTTPRequestBody) -> HTTPRequest {
        let multipart = MultipartRelatedBody(
            metadataJSON: newObject(upload.metadata).resourceJSON(name: upload.objectName, crc32c: upload.crc32c),
            jsonContentType: "application/json; charset=UTF-8",
            mediaContentType: upload.contentType,
            media: body,
            closingLineBreak: true
        )
        var request = HTTPRequest(
            method: "POST",
            url: uploadURL(
                bucket: upload.bucket,
                query: [("uploadType", "multipart")] + upload.preconditions.queryItems + newObjectItems(.upload)),
            body: multipart.body,
            isIdempotent: false
        )
        request.headers.add("Content-Type", multipart.contentType)
        addEncryption(options.encryptionKey, to: &request)
        return request
    }

    func startSession(_ upload: UploadDescription) -> HTTPRequest {
        var request = HTTPRequest(
            method: "POST",
            url: uploadURL(
                bucket: upload.bucket,
                // The session keeps the start's preconditions and checks them again when it finalizes.
                query: [("uploadType", "resumable"), ("name", upload.objectName)] + upload.preconditions.queryItems
                    + newObjectItems(.upload)
            ),
            body: .data(newObject(upload.metadata).resourceJSON(name: upload.objectName, crc32c: upload.crc32c)),
            isIdempotent: false
        )
        request.headers.add("Content-Type", "application/json; charset=UTF-8")
        addEncryption(options.encryptionKey, to: &request)
        request.headers.add("X-Upload-Content-Type", upload.contentType)
        if upload.declaresSize {
            request.headers.add("X-Upload-Content-Length", String(upload.size))
        }
        return request
    }

    func sessionURL(from response: HTTPResponse) throws(StorageError) -> URL {
        guard let location = response.headers["Location"], let url = URL(string: location),
            url.scheme == "http" || url.scheme == "https"
        else {
            throw .protocolViolation("The server opened an upload session but sent no usable Location for it.")
        }
        return try sessionURLKeepingTLS(url, base: baseURL)
    }

    func send(
        session: URL,
        offset: Int64,
        body: HTTPRequestBody,
        isFinal: Bool,
        totalSize: Int64,
        crc32c: UInt32?
    ) -> HTTPRequest {
        let length = body.length
        let total = isFinal ? String(totalSize) : "*"
        let range = length == 0 ? "bytes */\(total)" : "bytes \(offset)-\(offset + length - 1)/\(total)"
        var request = HTTPRequest(method: "PUT", url: session, body: body, isIdempotent: true)
        request.headers.add("Content-Range", range)
        // Cloud Storage needs the key with every request that carries bytes of a CSEK upload.
        addEncryption(options.encryptionKey, to: &request)
        if isFinal, let crc32c {
            request.headers.add("X-Goog-Hash", "crc32c=" + CRC32CEncoding.base64(crc32c))
        }
        return request
    }

    func query(session: URL) -> HTTPRequest {
        var request = HTTPRequest(method: "PUT", url: session, isIdempotent: true)
        request.headers.add("Content-Range", "bytes */*")
        // So that a finished session's answer shows a CSEK object's hashes, which the engine checks.
        addEncryption(options.encryptionKey, to: &request)
        return request
    }

    func cancel(session: URL) -> HTTPRequest {
        HTTPRequest(method: "DELETE", url: session, isIdempotent: true)
    }

    func objectMetadata(bucket: String, name: String) -> HTTPRequest {
        getMetadata(bucket: bucket, name: name)
    }

    func deleteObject(bucket: String, name: String, generation: Int64) -> HTTPRequest {
        HTTPRequest(
            method: "DELETE",
            url: objectURL(bucket: bucket, name: name, query: [("generation", String(generation))] + billingItems),
            isIdempotent: true
        )
    }

    func sessionState(
        from response: HTTPResponse, after step: UploadSessionStep
    ) throws(StorageError)
        -> UploadSessionState
    {
        if response.status == 404 || response.status == 410 { return .gone }
        if response.status == 308 {
            // "Range: bytes=0-K" means K+1 bytes are stored; no Range means none.
            guard let range = response.headers["Range"] else { return .active(committedBytes: 0) }
            guard range.hasPrefix("bytes=0-"), let last = Int64(range.dropFirst("bytes=0-".count)), last >= 0,
                last < Int64.max
            else {
                throw .protocolViolation("The server reported an unreadable committed range (\(range)).")
            }
            return .active(committedBytes: last + 1)
        }
        // A finished session answers with the object resource; a gateway that
        // drops the body leaves the engine to read it.
        if response.body.isEmpty { return .completeWithoutMetadata }
        do throws(StorageError) {
            return .complete(try StorageMetadata(objectResource: response.body))
        } catch {
            return .completeUnreadable(error)
        }
    }

    // MARK: URLs

    private func uploadURL(bucket: String, query: [(String, String)]) -> URL {
        WireURL.make(
            base: baseURL, path: "/upload/storage/v1/b/\(WireURL.pathSegment(bucket))/o", query: query + billingItems)
    }

    // MARK: Options

    /// `userProject`, for every request to the API (not for session URLs, which carry what the
    /// start sent, nor for download URLs, which anyone may use).
    var billingItems: [(String, String)] {
        options.userProject.map { [("userProject", $0)] } ?? []
    }

    /// How a request that creates an object names its KMS key and ACL.
    enum NewObjectRequest {
        /// `kmsKeyName` and `predefinedAcl`.
        case upload
        /// `kmsKeyName` and `destinationPredefinedAcl`.
        case compose
        /// `destinationKmsKeyName` and `destinationPredefinedAcl`: a copy runs on the source's
        /// options, so the destination's come with it (``ServerSideCopy``).
        case rewrite(kmsKeyName: String?, predefinedACL: StoragePredefinedACL?)
    }

    /// The query parameters of a request that creates an object: its KMS key and ACL.
    func newObjectItems(_ kind: NewObjectRequest) -> [(String, String)] {
        var kms = options.kmsKeyName
        var acl = options.predefinedACL
        if case .rewrite(let kmsKeyName, let predefinedACL) = kind { (kms, acl) = (kmsKeyName, predefinedACL) }
        var items: [(String, String)] = []
        if let kms {
            if case .rewrite = kind {
                items.append(("destinationKmsKeyName", kms))
            } else {
                items.append(("kmsKeyName", kms))
            }
        }
        if let acl {
            if case .upload = kind {
                items.append(("predefinedAcl", acl.rawValue))
            } else {
                items.append(("destinationPredefinedAcl", acl.rawValue))
            }
        }
        return items
    }

    /// `metadata` with the options' storage class unless it names one.
    func newObject(_ metadata: StorageMetadata) -> StorageMetadata {
        var metadata = metadata
        if metadata.storageClass == nil { metadata.storageClass = options.storageClass }
        return metadata
    }

    /// The `x-goog-encryption-*` headers of `key` (or with `copySource`, the
    /// `x-goog-copy-source-encryption-*` ones), when there is a key.
    func addEncryption(_ key: StorageEncryptionKey?, copySource: Bool = false, to request: inout HTTPRequest) {
        guard let key else { return }
        let prefix = copySource ? "x-goog-copy-source-encryption-" : "x-goog-encryption-"
        request.headers.set(prefix + "algorithm", "AES256")
        request.headers.set(prefix + "key", key.base64)
        request.headers.set(prefix + "key-sha256", key.sha256)
    }
}
