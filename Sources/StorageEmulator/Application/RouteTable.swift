import HTTP1

/// The emulator's routes, grouped by the protocol they serve, and the one place where a request
/// is matched to one.
///
/// A request belongs to the first group that claims it (or else to the table's last group),
/// which fixes its error format and whether fault plans act on it. Within the group, the match
/// is the first route whose pattern fits the path, whose condition holds and which serves the
/// method. A path that a route of the group fits (its condition holding) but none with that
/// method is answered 405; any other path, 404. Neither answer has an `Allow` field.
struct RouteTable: Sendable {
    /// The routes of one protocol.
    struct Group: Sendable {
        /// Which requests a group serves.
        enum Claim: Sendable {
            /// Paths that start with this.
            case pathPrefix(String)
            /// Requests with a V4 signature in the query, whatever their path.
            case signedQuery
            /// Requests whose query names an XML API multipart upload (`uploads` or `uploadId`),
            /// whatever their path: no JSON API request has either parameter.
            case multipartQuery
            /// The paths its routes' patterns fit.
            case routePaths
        }

        let claim: Claim
        /// The error format of its answers.
        let flavor: EmulatorApplication.Flavor
        /// Whether fault plans act on its requests: not on the control endpoint that installs them.
        let injectsFaults: Bool
        let routes: [Route]

        init(
            _ claim: Claim, flavor: EmulatorApplication.Flavor, injectsFaults: Bool = true, _ routes: [Route]
        ) {
            self.claim = claim
            self.flavor = flavor
            self.injectsFaults = injectsFaults
            self.routes = routes
        }

        func claims(_ request: any ServerRequest, _ parts: [Substring]) -> Bool {
            switch claim {
            case .pathPrefix(let prefix): request.path.hasPrefix(prefix)
            case .signedQuery: V4SignatureVerifier.isSigned(request.queryItems)
            case .multipartQuery: request.query("uploads") != nil || request.query("uploadId") != nil
            case .routePaths: routes.contains { $0.pattern.fits(parts) }
            }
        }
    }

    /// Where a request went: its group, and its route or the answer that it has none.
    struct Match {
        let group: Group
        /// The route and the path's parameters; or the error to answer (404, 405, or 400 for a
        /// path segment whose percent-encoding is broken), thrown once faults have had their turn.
        let outcome: Result<(route: Route, parameters: RoutedRequest.Parameters), any Error>

        /// The matched route, if there is one.
        var route: Route? { try? outcome.get().route }

        /// The JSON API method of the request (`storage.objects.get`), if its route serves one.
        var apiMethod: String? {
            guard let (route, parameters) = try? outcome.get() else { return nil }
            return route.apiMethodName(parameters)
        }
    }

    let groups: [Group]
    /// The group of a request that no other group claims.
    let otherwise: Group

    /// Every JSON API method name the table's routes declare: what a retry test may list.
    var apiMethodNames: Set<String> {
        Set((groups + [otherwise]).flatMap { $0.routes.flatMap(\.apiMethodNames) })
    }

    /// Matches a request; never throws, so that a fault plan acts before a 404 as before any answer.
    ///
    /// - Parameter servesAuthentication: Whether ``Route/Condition/authenticationService`` holds.
    func match(_ request: any ServerRequest, servesAuthentication: Bool) -> Match {
        let parts = RoutePattern.parts(of: request.path)
        let group = groups.first { $0.claims(request, parts) } ?? otherwise
        var pathKnown = false
        do {
            for route in group.routes where route.pattern.fits(parts) {
                guard Self.holds(route.condition, request, servesAuthentication) else { continue }
                pathKnown = true
                guard route.serves(request.method), let parameters = try route.pattern.parameters(parts) else {
                    continue
                }
                return Match(group: group, outcome: .success((route, parameters)))
            }
        } catch {
            return Match(group: group, outcome: .failure(error))
        }
        let failure = pathKnown ? EmulatorApplication.methodNotAllowed : HTTPError(404, "Not Found")
        return Match(group: group, outcome: .failure(failure))
    }

    private static func holds(
        _ condition: Route.Condition?, _ request: any ServerRequest, _ servesAuthentication: Bool
    ) -> Bool {
        switch condition {
        case nil: true
        case .uploadID?: request.query("upload_id") != nil
        case .noUploadID?: request.query("upload_id") == nil
        case .authenticationService?: servesAuthentication
        case .multipartUploads?: request.query("uploads") != nil
        case .multipartUploadID?: request.query("uploadId") != nil
        }
    }
}
