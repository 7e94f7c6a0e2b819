import Foundation
import HTTP1
import HTTPClient

/// Operations on stored objects in one wire protocol — metadata, deletion,
/// listing, media downloads, download URLs, and server-side copies, composes
/// and moves — as requests to build and answers to read. Like ``UploadWireProtocol`` it performs no I/O: the
/// caller sends the requests through ``CallExecutor`` and retries them.
///
/// An implementation must guarantee:
/// - Every request targets the endpoint's base URL with each path segment and
///   query value percent-encoded, and never puts a credential in a URL.
/// - Readers throw ``StorageErrorCode/protocolViolation`` for an answer that
///   breaks the protocol, never crash on one.
/// - A `generation` addresses that generation of the object (live or noncurrent); nil the
///   live object. Callers check generations first
///   (``StoragePath/validatedObject(generation:on:)``), so a protocol without
///   generations is only ever given nil.
protocol ObjectWireProtocol: Sendable {
    /// Reads an object's metadata.
    func getMetadata(bucket: String, name: String, generation: Int64?) -> HTTPRequest

    /// Changes only the fields `update` names, if `preconditions` hold; the
    /// answer is the object's new metadata.
    ///
    /// `preconditions` were validated for the endpoint (``StoragePreconditions/validate(for:)``):
    /// a protocol without conditions is only ever given none.
    func updateMetadata(
        bucket: String, name: String, generation: Int64?, _ update: StorageMetadataUpdate,
        preconditions: StoragePreconditions
    ) -> HTTPRequest

    /// Deletes the live object, or the generation named, if `preconditions` hold.
    func delete(bucket: String, name: String, generation: Int64?, preconditions: StoragePreconditions) -> HTTPRequest

    /// Lists one page of what `query` selects, from the page `pageToken` names (the first when
    /// nil). `query` was validated for the endpoint (``StorageObjectQuery/validate(for:)``): a
    /// protocol is only given options it has.
    func list(bucket: String, _ query: StorageObjectQuery, pageToken: String?) -> HTTPRequest

    /// Reads an answer to ``list(bucket:_:pageToken:)``.
    func listPage(from response: HTTPResponse) throws(StorageError) -> ObjectListPage

    /// Whether ``media(bucket:name:_:preconditions:)`` can hold the server to
    /// ``MediaRead/expectedGeneration`` (it refuses another generation with `412`). A download
    /// resumed through a protocol that cannot relies on comparing what the answers say instead.
    var pinsGenerations: Bool { get }

    /// The bytes `read` asks for, if `preconditions` hold: from ``MediaRead/offset`` (a `Range`
    /// request, answered with 206, unless it starts at 0 and has no end) through
    /// ``MediaRead/last``, of the generation ``MediaRead/generation`` names, refused when the
    /// object is no longer ``MediaRead/expectedGeneration``.
    func media(bucket: String, name: String, _ read: MediaRead, preconditions: StoragePreconditions) -> HTTPRequest

    /// The HTTP statuses of media answers whose head ``mediaHead(status:headers:answering:)``
    /// reads and whose body is the object's bytes; any other status is an error, retried or
    /// reported by the engine.
    var mediaAnswerStatuses: Set<Int> { get }

    /// Reads the head of an answer to ``media(bucket:name:_:preconditions:)`` whose status is in
    /// ``mediaAnswerStatuses``, before its body.
    ///
    /// - Parameters:
    ///   - status: The answer's status.
    ///   - headers: Its headers.
    ///   - read: What the request asked for.
    /// - Returns: Where the body lies in the object, and what the answer says of the object.
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the answer breaks the protocol or
    ///   does not answer `read` (another generation than the one named, bytes from elsewhere
    ///   than the offset asked, lengths that disagree).
    func mediaHead(status: Int, headers: HTTPHeaders, answering read: MediaRead) throws(StorageError) -> MediaHead

    /// The URL anyone holding it can download the object (of `generation`, when not nil) from,
    /// given its metadata; nil when the protocol needs a download token and the
    /// metadata has none (see ``addDownloadToken(bucket:name:token:)``).
    func downloadURL(bucket: String, name: String, generation: Int64?, metadata: StorageMetadata) -> URL?

    /// A request that gives the object a download token, or nil when the
    /// protocol's download URLs need none.
    func addDownloadToken(bucket: String, name: String, token: String) -> HTTPRequest?

    /// One call of a server-side copy, continuing the one `rewriteToken` names when not nil; its
    /// answer is read by ``RewriteStatus/init(json:)``. Nil when the protocol has no server-side copy.
    ///
    /// `copy`'s preconditions were validated for the endpoint.
    func rewrite(_ copy: ServerSideCopy, rewriteToken: String?) -> HTTPRequest?

    /// Concatenates `sources`, objects of `bucket`, into the object `name` with `metadata`, if
    /// `preconditions` hold; the answer is the new object's metadata. Nil when the protocol has
    /// no compose.
    ///
    /// `preconditions` hold at most `ifGenerationMatch` and `ifMetagenerationMatch`, the only
    /// conditions a compose takes.
    func compose(
        bucket: String, name: String, sources: [ComposeSource], metadata: StorageMetadata,
        preconditions: StoragePreconditions
    ) -> HTTPRequest?

    /// Renames the object `source` of `bucket` to `destination` in one atomic step, if the
    /// conditions hold; the answer is the destination's metadata. Nil when the protocol has no
    /// such method (a server may still lack it: see
    /// ``StorageReference/move(to:preconditions:sourcePreconditions:)``).
    func move(
        bucket: String, from source: String, to destination: String, preconditions: StoragePreconditions,
        sourcePreconditions: StoragePreconditions
    ) -> HTTPRequest?
}

/// One page of a listing: names, and each object's metadata when the answer carried it.
struct ObjectListPage: Sendable, Equatable {
    /// Object names.
    var items: [String]
    /// Common prefixes, each ending with the delimiter (`photos/2024/`).
    var prefixes: [String]
    /// The token for the next page; nil on the last page.
    var nextPageToken: String?
    /// Each item's metadata, in the order of ``items`` (nil for an item whose
    /// resource was not sent or could not be read); empty when no item had any.
    var metadata: [StorageMetadata?] = []
}

extension ObjectListPage {
    /// Decodes the listing JSON both protocols share: `items` (objects with a
    /// `name`), `prefixes` and `nextPageToken`, each optional.
    ///
    /// An item without a string `name` fails the page, as a listing that
    /// cannot name its objects is no listing. With `readingResources`, each
    /// item is also read as an object resource; one that is not a full or
    /// well-formed resource gets nil metadata but keeps its place, so one odd
    /// item costs only a metadata request later, not the page.
    ///
    /// - Parameters:
    ///   - body: The response body.
    ///   - readingResources: Whether items carry object resources (GCS JSON API);
    ///     Firebase v0 items carry only `name` and `bucket`.
    init(listJSON body: Data, readingResources: Bool = false) throws(StorageError) {
        struct Item: Decodable {
            var name: String
            var metadata: StorageMetadata?

            init(from decoder: any Decoder) throws {
                name = try decoder.container(keyedBy: NameKey.self).decode(String.self, forKey: .name)
            }

            private enum NameKey: String, CodingKey { case name }
        }
        /// An item that is also read as an object resource.
        struct ResourceItem: Decodable {
            var item: Item

            init(from decoder: any Decoder) throws {
                item = try Item(from: decoder)
                item.metadata = StorageMetadata.listedResource(from: decoder)
            }
        }
        struct Page<Entry: Decodable>: Decodable {
            var items: [Entry]?
            var prefixes: [String]?
            var nextPageToken: String?
        }
        let page: Page<Item>
        do {
            if readingResources {
                let resources = try JSONDecoder().decode(Page<ResourceItem>.self, from: body)
                page = Page(
                    items: resources.items?.map(\.item), prefixes: resources.prefixes,
                    nextPageToken: resources.nextPageToken)
            } else {
                page = try JSONDecoder().decode(Page<Item>.self, from: body)
            }
        } catch {
            throw .protocolViolation(
                "The server's answer is not a listing: it could not be decoded.", underlyingError: error)
        }
        let metadata = page.items?.map(\.metadata) ?? []
        self.init(
            items: page.items?.map(\.name) ?? [],
            prefixes: page.prefixes ?? [],
            nextPageToken: page.nextPageToken.flatMap { $0.isEmpty ? nil : $0 },
            // Empty rather than all nil when no item carried a resource, so that
            // a page of names compares equal however it was read.
            metadata: metadata.contains { $0 != nil } ? metadata : []
        )
    }
}

extension StorageMetadataUpdate {
    /// The PATCH body as UTF-8 JSON.
    var patchBody: Data { Data(JSONText.serialize(patchJSON()).utf8) }
}
