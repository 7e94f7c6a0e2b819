import Foundation
import HTTPClient

/// Server-side copies in the Google Cloud Storage JSON API: `rewriteTo` (called again with its
/// `rewriteToken` until done), `compose` and the atomic `moveTo`.
///
/// None is marked idempotent, so a transport never resends one on its own; the caller's retries
/// repeat a rewrite call with the same token, and a compose under the destination's
/// `ifGenerationMatch`, which can succeed only once.
extension GCSJSONProtocol {
    func rewrite(_ copy: ServerSideCopy, rewriteToken: String?) -> HTTPRequest? {
        var query: [(String, String)] = []
        if let rewriteToken { query.append(("rewriteToken", rewriteToken)) }
        if let generation = copy.sourceGeneration { query.append(("sourceGeneration", String(generation))) }
        query += copy.preconditions.queryItems + copy.sourcePreconditions.sourceQueryItems
        if let limit = copy.maxBytesRewrittenPerCall { query.append(("maxBytesRewrittenPerCall", String(limit))) }
        query +=
            newObjectItems(
                .rewrite(kmsKeyName: copy.destinationKMSKeyName, predefinedACL: copy.destinationPredefinedACL))
            + (copy.userProject.map { [("userProject", $0)] } ?? [])
        let path =
            "/storage/v1/b/\(WireURL.pathSegment(copy.sourceBucket))/o/\(WireURL.pathSegment(copy.sourceName))"
            + "/rewriteTo/b/\(WireURL.pathSegment(copy.destinationBucket))/o/\(WireURL.pathSegment(copy.destinationName))"
        // `{}` when no metadata is given: the copy keeps the source's.
        let body = JSONText.Value.object(copy.metadata?.resourceFields ?? [])
        var request = jsonPOST(url: WireURL.make(base: baseURL, path: path, query: query), body: body)
        addEncryption(copy.sourceEncryptionKey, copySource: true, to: &request)
        addEncryption(copy.destinationEncryptionKey, to: &request)
        return request
    }

    func compose(
        bucket: String, name: String, sources: [ComposeSource], metadata: StorageMetadata,
        preconditions: StoragePreconditions
    ) -> HTTPRequest? {
        let sourceObjects = sources.map { source in
            JSONText.Value.object(
                [("name", .string(source.name))] + (source.generation.map { [("generation", .string(String($0)))] } ?? []))
        }
        let body = JSONText.Value.object([
            ("destination", .object(newObject(metadata).resourceFields)), ("sourceObjects", .array(sourceObjects)),
        ])
        let url = WireURL.make(
            base: baseURL,
            path: "/storage/v1/b/\(WireURL.pathSegment(bucket))/o/\(WireURL.pathSegment(name))/compose",
            query: preconditions.queryItems + newObjectItems(.compose) + billingItems)
        var request = jsonPOST(url: url, body: body)
        addEncryption(options.encryptionKey, to: &request)
        return request
    }

    func move(
        bucket: String, from source: String, to destination: String, preconditions: StoragePreconditions,
        sourcePreconditions: StoragePreconditions
    ) -> HTTPRequest? {
        let url = WireURL.make(
            base: baseURL,
            path: "/storage/v1/b/\(WireURL.pathSegment(bucket))/o/\(WireURL.pathSegment(source))"
                + "/moveTo/o/\(WireURL.pathSegment(destination))",
            query: preconditions.queryItems + sourcePreconditions.sourceQueryItems + billingItems)
        return HTTPRequest(method: "POST", url: url, isIdempotent: false)
    }

    private func jsonPOST(url: URL, body: JSONText.Value) -> HTTPRequest {
        var request = HTTPRequest(
            method: "POST", url: url, body: .data(Data(JSONText.serialize(body).utf8)), isIdempotent: false)
        request.headers.add("Content-Type", "application/json; charset=UTF-8")
        return request
    }
}
