import Foundation

/// Operations on stored objects in one wire protocol — metadata, deletion,
/// listing, media downloads and download URLs — as requests to build and
/// answers to read. Like ``UploadWireProtocol`` it performs no I/O: the
/// caller sends the requests through ``RequestRunner`` and retries them.
///
/// An implementation must guarantee:
/// - Every request targets the endpoint's base URL with each path segment and
///   query value percent-encoded, and never puts a credential in a URL.
/// - Readers throw ``StorageErrorCode/protocolViolation`` for an answer that
///   breaks the protocol, never crash on one.
protocol ObjectWireProtocol: Sendable {
    /// Reads an object's metadata.
    func getMetadata(bucket: String, name: String) -> HTTPRequest

    /// Changes only the fields `update` names, if `preconditions` hold; the
    /// answer is the object's new metadata.
    ///
    /// `preconditions` were validated for the endpoint (``StoragePreconditions/validate(for:)``):
    /// a protocol without conditions is only ever given none.
    func updateMetadata(
        bucket: String, name: String, _ update: StorageMetadataUpdate, preconditions: StoragePreconditions
    ) -> HTTPRequest

    /// Deletes the live object, if `preconditions` hold.
    func delete(bucket: String, name: String, preconditions: StoragePreconditions) -> HTTPRequest

    /// Lists one page of the objects and `/`-delimited prefixes under `prefix`.
    func list(bucket: String, prefix: String, maxResults: Int, pageToken: String?) -> HTTPRequest

    /// Reads an answer to ``list(bucket:prefix:maxResults:pageToken:)``.
    func listPage(from response: HTTPResponse) throws(StorageError) -> ObjectListPage

    /// The bytes of an object, from `offset` on when it is above 0 (a `Range`
    /// request whose answer is 206), if `preconditions` hold.
    func media(bucket: String, name: String, offset: Int64, preconditions: StoragePreconditions) -> HTTPRequest

    /// The URL anyone holding it can download the object from, given its
    /// metadata; nil when the protocol needs a download token and the
    /// metadata has none (see ``addDownloadToken(bucket:name:token:)``).
    func downloadURL(bucket: String, name: String, metadata: StorageMetadata) -> URL?

    /// A request that gives the object a download token, or nil when the
    /// protocol's download URLs need none.
    func addDownloadToken(bucket: String, name: String, token: String) -> HTTPRequest?
}

/// One page of a listing, as names.
struct ObjectListPage: Sendable, Equatable {
    /// Object names.
    var items: [String]
    /// Common prefixes, each ending with the delimiter (`photos/2024/`).
    var prefixes: [String]
    /// The token for the next page; nil on the last page.
    var nextPageToken: String?
}

extension ObjectListPage {
    /// Decodes the listing JSON both protocols share: `items` (objects with a
    /// `name`), `prefixes` and `nextPageToken`, each optional.
    init(listJSON body: Data) throws(StorageError) {
        struct Item: Decodable { var name: String }
        struct Page: Decodable {
            var items: [Item]?
            var prefixes: [String]?
            var nextPageToken: String?
        }
        let page: Page
        do {
            page = try JSONDecoder().decode(Page.self, from: body)
        } catch {
            throw .protocolViolation(
                "The server's answer is not a listing: it could not be decoded.", underlyingError: error)
        }
        self.init(
            items: page.items?.map(\.name) ?? [],
            prefixes: page.prefixes ?? [],
            nextPageToken: page.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
        )
    }
}

extension StorageMetadataUpdate {
    /// The PATCH body as UTF-8 JSON.
    var patchBody: Data { Data(JSONText.serialize(patchJSON()).utf8) }
}
