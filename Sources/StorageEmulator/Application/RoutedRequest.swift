import HTTP1

/// A request the route table matched, as its handler gets it: the request, its body, and the
/// route's path parameters.
struct RoutedRequest {
    /// What a route's pattern takes from the path (see ``RoutePattern``).
    struct Parameters {
        /// `{bucket}`; empty when the pattern has none.
        var bucket = ""
        /// `{name...}`; empty when the pattern has none.
        var name = ""
        /// `{operation...}`; nil when the pattern has none.
        var operation: GCSObjectOperation?
        /// `{id}` (a retry test's); empty when the pattern has none.
        var id = ""
    }

    let request: any ServerRequest
    let body: BodyReader
    let parameters: Parameters

    var bucket: String { parameters.bucket }
    var name: String { parameters.name }

    /// The operation of an `{operation...}` route, which matches only paths that name one.
    func operation() throws -> GCSObjectOperation {
        guard let operation = parameters.operation else { throw HTTPError(404, "Not Found") }
        return operation
    }
}
