import HTTP1

/// One entry of the emulator's route table (``EmulatorApplication/routes``): the methods and
/// path it serves, what a request must carry to reach its handler, and that handler.
///
/// The router (``RouteTable``) picks the route; ``EmulatorApplication/authorize(_:_:)``
/// checks what the route's ``Action`` asks for; only then does the handler run. A handler
/// never checks credentials itself, and one that serves an upload session only ever gets a
/// session through that step.
struct Route: Sendable, CustomStringConvertible {
    /// What a request needs before a plain handler runs.
    enum Access: Sendable {
        /// Nothing: Google's authentication servers, which check their callers in their own way.
        case open
        /// The emulator's own controls (`/_emulator/…`): when the emulator requires credentials,
        /// the storage API's (the configured token in either scheme, a live issued token when
        /// those are required), so nobody without them fills the emulator's tables; App Check is
        /// not asked for.
        case control
        /// The JSON API's credentials: `Bearer` with the configured token (or `owner` when
        /// allowed), or a live issued token whose scopes allow the method.
        case gcs
        /// Firebase's credentials: as ``gcs``, in the `Firebase` scheme as well.
        case firebase
        /// A Firebase read: a `token` query parameter stands in for credentials, and the
        /// handler checks it against the object's download tokens; without one, ``firebase``.
        case firebaseOrDownloadToken
    }

    /// The handler, with what reaching it takes.
    enum Action: Sendable {
        /// The route's ``Access``, then the handler.
        case request(Access, @Sendable (EmulatorApplication, RoutedRequest) throws -> Reply)
        /// The upload session `upload_id` names, authorized as its start was (see
        /// ``UploadSession/Access``), whichever URL reached it; `unknown` answers an id that
        /// names no session.
        case session(unknown: HTTPError, @Sendable (EmulatorApplication, RoutedRequest, UploadSession) throws -> Reply)
        /// A valid V4 signature in the query; the handler gets the body hash it covers, if any.
        case signed(@Sendable (EmulatorApplication, RoutedRequest, _ payloadHash: String?) throws -> Reply)
    }

    /// A request property, besides method and path, that a route needs.
    enum Condition: Sendable {
        /// The query names an upload session (`upload_id`): implied by every ``Action/session`` route.
        case uploadID
        /// The query names no upload session.
        case noUploadID
        /// The query has `uploads`: an XML API multipart upload's initiate, or a listing of them.
        case multipartUploads
        /// The query names an XML API multipart upload (`uploadId`).
        case multipartUploadID
        /// The emulator serves Google's token endpoint (see ``StorageEmulator/Configuration/authentication``).
        case authenticationService
    }

    /// Which GETs of the route send an object's bytes (a reset or stall fault then acts on them).
    enum Media: Sendable {
        case never, always, withAltMedia
    }

    /// The Cloud Storage JSON API method a route serves, named as Google's retry conformance
    /// tests and storage-testbench name it (`storage.objects.get`): a retry test lists its
    /// instructions under these names (see ``RetryTest``).
    enum APIMethod: Sendable, ExpressibleByStringLiteral {
        /// The one method every request of the route is.
        case named(String)
        /// The `{operation...}` route: the operation its path names decides (`storage.objects.copy`,
        /// `.rewrite`, `.compose`, `.move`).
        case objectOperation

        init(stringLiteral name: String) {
            self = .named(name)
        }
    }

    /// The methods served; nil serves every method (a server with answers of its own for the rest).
    let methods: Set<String>?
    let pattern: RoutePattern
    let condition: Condition?
    let media: Media
    /// The JSON API method of the route's requests; nil for routes that are none (the control
    /// endpoint, Google's authentication servers, Firebase v0, XML API multipart uploads).
    let apiMethod: APIMethod?
    let action: Action

    /// A route to a plain handler.
    ///
    /// - Parameters:
    ///   - methods: The methods served, separated by spaces; `*` for every method.
    ///   - pattern: The path (see ``RoutePattern``).
    ///   - api: The JSON API method the route serves, if it serves one.
    init(
        _ methods: String, _ pattern: String, _ access: Access, when condition: Condition? = nil,
        media: Media = .never, api: APIMethod? = nil,
        _ handler: @escaping @Sendable (EmulatorApplication, RoutedRequest) throws -> Reply
    ) {
        self.init(methods, pattern, condition, media, api, .request(access, handler))
    }

    private init(
        _ methods: String, _ pattern: String, _ condition: Condition?, _ media: Media, _ api: APIMethod?,
        _ action: Action
    ) {
        self.methods = methods == "*" ? nil : Set(methods.split(separator: " ").map(String.init))
        self.pattern = RoutePattern(pattern)
        self.condition = condition
        self.media = media
        self.apiMethod = api
        self.action = action
    }

    /// A route to an upload session: the request's `upload_id` names it.
    static func session(
        _ methods: String, _ pattern: String, unknown: HTTPError, api: APIMethod? = nil,
        _ handler: @escaping @Sendable (EmulatorApplication, RoutedRequest, UploadSession) throws -> Reply
    ) -> Route {
        Route(methods, pattern, .uploadID, .never, api, .session(unknown: unknown, handler))
    }

    /// A route whose authority is a V4 signature in the query.
    static func signed(
        _ methods: String, _ pattern: String, when condition: Condition? = nil, api: APIMethod? = nil,
        _ handler: @escaping @Sendable (EmulatorApplication, RoutedRequest, _ payloadHash: String?) throws -> Reply
    ) -> Route {
        Route(methods, pattern, condition, .never, api, .signed(handler))
    }

    /// The JSON API method name of a request this route matched with `parameters`.
    func apiMethodName(_ parameters: RoutedRequest.Parameters) -> String? {
        switch apiMethod {
        case .named(let name)?:
            return name
        case .objectOperation?:
            switch parameters.operation {
            case .copy?: return "storage.objects.copy"
            case .rewrite?: return "storage.objects.rewrite"
            case .compose?: return "storage.objects.compose"
            case .move?: return "storage.objects.move"
            case nil: return nil
            }
        case nil:
            return nil
        }
    }

    /// Every JSON API method name a request of this route can have.
    var apiMethodNames: [String] {
        switch apiMethod {
        case .named(let name)?: [name]
        case .objectOperation?: ["copy", "rewrite", "compose", "move"].map { "storage.objects." + $0 }
        case nil: []
        }
    }

    /// Methods, pattern and condition, as the table writes them: `PUT POST DELETE /upload/… (uploadID)`.
    var description: String {
        let methods = methods.map { $0.sorted().joined(separator: " ") } ?? "*"
        return "\(methods) \(pattern)" + (condition.map { " (\($0))" } ?? "")
    }

    /// Whether the route serves this method.
    func serves(_ method: String) -> Bool {
        methods?.contains(method) ?? true
    }

    /// Whether a GET of the route sends an object's bytes.
    func sendsMedia(_ request: any ServerRequest) -> Bool {
        guard request.method == "GET" else { return false }
        switch media {
        case .never: return false
        case .always: return true
        case .withAltMedia: return request.query("alt") == "media"
        }
    }
}
