public import Foundation
import V4Signing

extension StorageReference {
    /// A V4 signed URL for this object: anyone holding it may perform `method` on the object,
    /// with no credentials of their own, until it expires.
    ///
    /// The URL speaks Cloud Storage's XML API (`https://storage.googleapis.com/<bucket>/<object>`),
    /// whichever protocol the ``Storage`` uses; with an emulator endpoint it points at the
    /// emulator's host and port. Nothing is sent to the storage server: signing happens here
    /// with a private key, or through one call to IAM (``SignedURLSigner/iamSignBlob(email:)``).
    ///
    /// The request made with the URL must use `method` and carry every header in `headers`
    /// with exactly that value (a signed `POST` also carries `x-goog-resumable: start`, which
    /// is signed for it unless `headers` says otherwise). A header `x-goog-content-sha256`
    /// makes the signature cover a body with that SHA-256 (lower-case hex); otherwise the
    /// body is not signed.
    ///
    /// ```swift
    /// let signer = try SignedURLSigner.privateKey(email: clientEmail, pem: privateKeyPEM)
    /// let ref = storage.reference(withPath: "reports/2026.pdf")
    /// let download = try await ref.signedURL(expiresIn: .seconds(15 * 60), signer: signer)
    /// let upload = try await ref.signedURL(
    ///     method: .put,
    ///     expiresIn: .seconds(3600),
    ///     headers: ["Content-Type": "application/pdf"],
    ///     signer: signer
    /// )
    /// // curl -X PUT -H 'Content-Type: application/pdf' --data-binary @2026.pdf "$upload"
    /// ```
    ///
    /// - Parameters:
    ///   - method: What the URL allows; ``SignedURLMethod/get`` by default. The bucket's
    ///     root reference signs the bucket itself (`GET` lists it). A reference pinned to a
    ///     generation (``atGeneration(_:)``) signs `generation=N` into the URL, so that a `GET`
    ///     or `DELETE` acts on that generation; `PUT` and `POST` write a new generation and are
    ///     refused for it.
    ///   - expiresIn: How long the URL stays valid from now: whole seconds, from 1 second to
    ///     7 days.
    ///   - headers: Headers the request must carry, signed; names are case-insensitive
    ///     (`host` is always signed, from the URL, and may not be given).
    ///   - queryParameters: Further query parameters the URL carries, signed (such as
    ///     `response-content-disposition`); the `X-Goog-` names of the signature itself are refused.
    ///   - style: Path style (the default), virtual-hosted, or a bucket-bound host name.
    ///   - signer: Who signs. Nil signs with the ``Storage``'s own credentials when they can:
    ///     a service account key file's key, or the metadata server's account through IAM
    ///     `signBlob` (Application Default Credentials find either).
    /// - Returns: The signed URL.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for an expiry outside 1 s … 7 days, a
    ///   header or parameter that cannot be signed, a style the endpoint cannot serve, or
    ///   no signer; ``StorageErrorCode/pathError`` for an invalid object name; a `signBlob`
    ///   call's errors (see ``SignedURLSigner/iamSignBlob(email:)``).
    public func signedURL(
        method: SignedURLMethod = .get,
        expiresIn: Duration,
        headers: [String: String] = [:],
        queryParameters: [String: String] = [:],
        style: SignedURLStyle = .pathStyle,
        signer: SignedURLSigner? = nil
    ) async throws(StorageError) -> URL {
        try await signedURL(
            method: method, expiresIn: expiresIn, headers: headers, queryParameters: queryParameters, style: style,
            signer: signer, at: Date())
    }

    /// ``signedURL(method:expiresIn:headers:queryParameters:style:signer:)`` signed as of
    /// `timestamp`, for tests (Google's conformance cases fix the time).
    func signedURL(
        method: SignedURLMethod, expiresIn: Duration, headers: [String: String],
        queryParameters: [String: String], style: SignedURLStyle, signer: SignedURLSigner?, at timestamp: Date
    ) async throws(StorageError) -> URL {
        let signer = try await Self.orDefault(signer, storage)
        let request = try signingRequest(
            method: method, expiresIn: expiresIn, headers: headers, queryParameters: queryParameters, style: style,
            email: signer.email, at: timestamp)
        let signature = try await signer.sign(Array(request.stringToSign.utf8), for: storage)
        return try request.url(signature: signature)
    }

    private static func orDefault(
        _ signer: SignedURLSigner?, _ storage: Storage
    ) async throws(StorageError) -> SignedURLSigner {
        if let signer { return signer }
        return try await storage.defaultURLSigner()
    }

    /// The canonical request and string to sign, before any signature.
    func signingRequest(
        method: SignedURLMethod, expiresIn: Duration, headers: [String: String],
        queryParameters: [String: String], style: SignedURLStyle, email: String, at timestamp: Date
    ) throws(StorageError) -> V4SignedURLRequest {
        // The root names the bucket itself; anything else must be a valid object name.
        var queryParameters = queryParameters
        let object: String?
        if path.isRoot {
            guard generation == nil else {
                throw .invalidArgument("The root reference names no object, so it cannot be pinned to a generation.")
            }
            object = nil
        } else if method == .put || method == .post {
            object = try validatedWriteTarget("A signed \(method.rawValue) URL")
        } else {
            let (name, generation) = try validatedObject()
            object = name
            if let generation {
                // The XML API reads `generation` as the JSON API does; the signature covers it.
                if queryParameters.keys.contains(where: { $0.lowercased() == "generation" }) {
                    throw .invalidArgument(
                        "\(self) is pinned to a generation, which the URL carries; do not pass generation again.")
                }
                queryParameters["generation"] = String(generation)
            }
        }
        return try V4SignedURLRequest(
            method: method.rawValue, target: try signedURLTarget(object: object, style: style), email: email,
            timestamp: timestamp, expiresIn: expiresIn, headers: headers, queryParameters: queryParameters)
    }

    /// The scheme, authority and path a signed URL for `object` (nil: the bucket) has.
    func signedURLTarget(object: String?, style: SignedURLStyle) throws(StorageError) -> V4SignedURLRequest.Target {
        let objectPath = object.map { "/" + V4CanonicalRequest.encodedPath($0) } ?? ""
        let bucket = storage.bucket
        switch style {
        case .pathStyle:
            let base = try Self.parts(of: storage.endpoint.xmlBaseURL, what: "The endpoint")
            return .init(
                scheme: base.scheme, authority: base.authority,
                encodedPath: base.pathPrefix + "/" + V4PercentEncoding.encode(bucket) + objectPath)
        case .virtualHosted:
            let base = try Self.parts(of: storage.endpoint.xmlBaseURL, what: "The endpoint")
            guard !base.isIPAddress else {
                throw .invalidArgument(
                    "A virtual-hosted signed URL puts the bucket in the host name; the endpoint's host \(base.authority) is an IP address."
                )
            }
            guard !bucket.isEmpty, bucket.utf8.allSatisfy({ Self.isHostNameByte($0) }) else {
                throw .invalidArgument("The bucket name \"\(bucket)\" cannot be part of a host name.")
            }
            return .init(
                scheme: base.scheme, authority: "\(bucket.lowercased()).\(base.authority)",
                encodedPath: base.pathPrefix + (objectPath.isEmpty ? "/" : objectPath))
        case .bucketBoundHostname(let url):
            let base = try Self.parts(of: url, what: "The bucket-bound host name")
            return .init(
                scheme: base.scheme, authority: base.authority,
                encodedPath: base.pathPrefix + (objectPath.isEmpty ? "/" : objectPath))
        }
    }

    private struct URLParts {
        var scheme: String
        var authority: String
        var pathPrefix: String
        var isIPAddress: Bool
    }

    private static func parts(of url: URL, what: String) throws(StorageError) -> URLParts {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil
        else {
            throw .invalidArgument("\(what) \(url.absoluteString) is not an http or https URL with a host.")
        }
        // Foundation drops the brackets of an IPv6 literal; the URL needs them back.
        let isIPv6 = host.contains(":")
        let bracketed = isIPv6 && !host.hasPrefix("[") ? "[\(host)]" : host
        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        return URLParts(
            scheme: scheme, authority: bracketed + (components.port.map { ":\($0)" } ?? ""), pathPrefix: prefix,
            isIPAddress: isIPv6 || host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") })
    }

    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
    }
}

extension StorageEndpoint {
    /// Where Cloud Storage's XML API, which signed URLs use, is served for this endpoint:
    /// `storage.googleapis.com` for Firebase's production host (which serves only the v0 API),
    /// the base URL itself for everything else (GCS, an emulator, a gateway).
    var xmlBaseURL: URL {
        if wireProtocol == .firebaseV0, baseURL.host?.lowercased() == "firebasestorage.googleapis.com" {
            return StorageEndpoint.googleCloudStorage.baseURL
        }
        return baseURL
    }
}
