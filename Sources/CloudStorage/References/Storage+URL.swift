public import Foundation
import V4Signing

extension Storage {
    /// A reference to the object a `gs://` or `http(s)://` URL names.
    ///
    /// Accepted forms, where `BUCKET` must be this handle's ``bucket``:
    ///
    /// | Form | Example |
    /// | --- | --- |
    /// | `gs://BUCKET/PATH`, `gs://BUCKET` | `gs://my-bucket/images/stars.jpg` |
    /// | Firebase download URL, any host | `https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars.jpg?alt=media&token=…` |
    /// | JSON API object URL, any host | `https://storage.googleapis.com/storage/v1/b/my-bucket/o/images%2Fstars.jpg` |
    /// | JSON API download URL, any host | `https://storage.googleapis.com/download/storage/v1/b/my-bucket/o/images%2Fstars.jpg?alt=media` |
    /// | Path style | `https://storage.googleapis.com/my-bucket/images/stars.jpg` (also `storage.cloud.google.com`) |
    /// | Virtual-host style | `https://my-bucket.storage.googleapis.com/images/stars.jpg` |
    ///
    /// A URL names one object exactly, as ``Storage/reference(objectName:)``
    /// does: nothing is normalized, so `gs://my-bucket/a//b` is the object
    /// `a//b` and `gs://my-bucket/photos/` the object `photos/` (a folder
    /// placeholder), the way `gcloud storage` and `gsutil` read them; to list
    /// the folder `photos/`, list `reference(withPath: "photos")`. This is
    /// also the form ``StorageReference/description`` prints, so a reference
    /// survives the round trip. A URL without an object path (`gs://my-bucket`,
    /// `gs://my-bucket/`) gives the root.
    ///
    /// The path of a `gs://` URL is taken literally, character for character:
    /// `gs://my-bucket/a%20b` names the object `a%20b`. In `http(s)` URLs the
    /// object path is percent-decoded exactly once (`%2F` becomes `/`, `%20` a
    /// space, `%25` a percent sign) and `+` stays a plus sign; the query
    /// (`alt=media&token=…`) and fragment are ignored. The Firebase, JSON API
    /// and path-style forms without an object (`/v0/b/BUCKET`,
    /// `/v0/b/BUCKET/o`, `https://storage.googleapis.com/BUCKET`) give the
    /// root reference. The bucket is compared with ``bucket`` exactly; one read
    /// from a host name is lowercased first, as host names are
    /// case-insensitive.
    ///
    /// A URL can name a generation of the object (see ``StorageReference/atGeneration(_:)``),
    /// and the reference is then pinned to it:
    /// - `gs://BUCKET/PATH#GENERATION`: a `#` followed by one or more ASCII digits at the end
    ///   of a non-empty path is a generation, as `gcloud storage` reads it, and as
    ///   ``StorageReference/description`` prints a pinned reference. Any other `#` is part of
    ///   the name: `gs://my-bucket/notes#draft` and `gs://my-bucket/#12` name the objects
    ///   `notes#draft` and `#12`. An object whose name itself ends in `#` and digits cannot be
    ///   named by a `gs://` URL (nor in gcloud); use ``Storage/reference(objectName:)``.
    /// - `generation=GENERATION` in the query of a JSON API, path-style or virtual-host style
    ///   URL (`…/o/notes.txt?generation=1712345678901234&alt=media`, the object resource's
    ///   `mediaLink`); Firebase download URLs name no generation.
    ///
    /// A generation must be a positive decimal number that fits in `Int64`, given once;
    /// anything else is a ``StorageErrorCode/pathError``.
    ///
    /// The path is checked against the name rules only when an operation uses
    /// it. Error messages never repeat a URL's query, which may hold a download
    /// token.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "my-bucket")
    /// let starsRef = try storage.reference(forURL: "gs://my-bucket/images/stars.jpg")
    /// let sameRef = try storage.reference(
    ///     forURL: "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars.jpg?alt=media"
    /// )
    /// assert(starsRef == sameRef)
    /// ```
    ///
    /// - Parameter url: The URL's text.
    /// - Returns: The reference to the path the URL names.
    /// - Throws: ``StorageErrorCode/bucketMismatch`` when the URL names another
    ///   bucket; ``StorageErrorCode/pathError`` when the text is not one of the
    ///   forms above (no or unknown scheme, unknown host for the path style,
    ///   empty or malformed bucket, malformed percent escapes, escapes that
    ///   are not UTF-8, or a malformed generation).
    public func reference(forURL url: String) throws(StorageError) -> StorageReference {
        let location = try StorageURLParser.parse(url)
        guard location.bucket == bucket else {
            throw StorageError(
                .bucketMismatch,
                "The URL names the bucket \"\(location.bucket)\", but this Storage is for the bucket \"\(bucket)\"."
            )
        }
        return StorageReference(storage: self, path: location.path, generation: location.generation)
    }

    /// A reference to the object a `gs://` or `http(s)://` URL names.
    ///
    /// The same as ``reference(forURL:)-(String)`` applied to the URL's
    /// `absoluteString`, which keeps its percent escapes as written.
    ///
    /// ```swift
    /// let url = URL(string: "gs://my-bucket/images/stars.jpg")!
    /// let starsRef = try storage.reference(forURL: url)
    /// ```
    ///
    /// - Parameter url: The URL.
    /// - Returns: The reference to the path the URL names.
    /// - Throws: ``StorageErrorCode/bucketMismatch`` when the URL names another
    ///   bucket; ``StorageErrorCode/pathError`` when it is not an accepted form.
    public func reference(forURL url: URL) throws(StorageError) -> StorageReference {
        try reference(forURL: url.absoluteString)
    }

    /// A reference to the object a `gs://` or `http(s)://` URL names — the
    /// Firebase SDK's spelling of ``reference(forURL:)-(URL)``.
    ///
    /// ```swift
    /// let starsRef = try storage.reference(for: URL(string: "gs://my-bucket/images/stars.jpg")!)
    /// ```
    ///
    /// - Parameter url: The URL.
    /// - Returns: The reference to the path the URL names.
    /// - Throws: ``StorageErrorCode/bucketMismatch`` when the URL names another
    ///   bucket; ``StorageErrorCode/pathError`` when it is not an accepted form.
    public func reference(for url: URL) throws(StorageError) -> StorageReference {
        try reference(forURL: url.absoluteString)
    }
}

/// Reads the bucket and object path out of the URL forms
/// ``Storage/reference(forURL:)-(String)`` accepts.
///
/// Works on the raw text rather than `URL`/`URLComponents.path`, which decode
/// `%2F` into `/` before the path can be split, and which differ between
/// platforms in what they accept.
enum StorageURLParser {
    /// What a URL names: a bucket, the exact path in it (the root when the URL has none), and
    /// the generation it names, if any.
    struct Location: Hashable, Sendable {
        var bucket: String
        var path: StoragePath
        var generation: Int64? = nil
    }

    /// Hosts that serve buckets path-style: `https://HOST/BUCKET/PATH`.
    static let pathStyleHosts: Set<String> = ["storage.googleapis.com", "storage.cloud.google.com"]
    /// The suffix of virtual-host style hosts: `https://BUCKET.storage.googleapis.com/PATH`.
    static let virtualHostSuffix = ".storage.googleapis.com"

    /// Parses a URL's text.
    ///
    /// - Parameter text: The URL.
    /// - Returns: The bucket and path it names.
    /// - Throws: ``StorageErrorCode/pathError`` when it is not an accepted form.
    static func parse(_ text: String) throws(StorageError) -> Location {
        guard let schemeEnd = text.range(of: "://") else {
            throw .pathError("\"\(redacted(text))\" is not a storage URL: it has no scheme (gs://, https://).")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        let rest = text[schemeEnd.upperBound...]
        switch scheme {
        case "gs":
            return try parseGS(rest, original: text)
        case "http", "https":
            return try parseHTTP(rest, original: text)
        default:
            throw .pathError(
                "\"\(redacted(text))\" is not a storage URL: the scheme must be gs, http or https."
            )
        }
    }

    /// `gs://BUCKET[/PATH]`, with the path taken literally.
    private static func parseGS(_ rest: Substring, original: String) throws(StorageError) -> Location {
        let bucket: Substring
        let rawPath: Substring
        if let slash = rest.firstIndex(of: "/") {
            bucket = rest[..<slash]
            rawPath = rest[rest.index(after: slash)...]
        } else {
            bucket = rest
            rawPath = ""
        }
        var name = rawPath
        var generation: Int64?
        // gcloud's rule: a name of at least one character, `#`, and digits to the end.
        if let hash = rawPath.lastIndex(of: "#"), hash > rawPath.startIndex {
            let digits = rawPath[rawPath.index(after: hash)...]
            if !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                generation = try parsedGeneration(digits, original: original)
                name = rawPath[..<hash]
            }
        }
        return Location(
            bucket: try validatedBucket(bucket, original: original), path: exactPath(String(name)),
            generation: generation)
    }

    /// A generation's digits: a positive number that fits in `Int64`.
    private static func parsedGeneration(_ digits: Substring, original: String) throws(StorageError) -> Int64 {
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(digits),
            value > 0
        else {
            throw .pathError(
                "\"\(redacted(original))\" names the generation \"\(digits)\"; a generation is a positive decimal number below 2^63."
            )
        }
        return value
    }

    /// The `generation` parameter of an http(s) URL's query, if it has one.
    private static func queryGeneration(_ rest: Substring, original: String) throws(StorageError) -> Int64? {
        guard let question = rest.firstIndex(of: "?") else { return nil }
        let query = rest[rest.index(after: question)...].prefix(while: { $0 != "#" })
        var found: Int64?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == "generation" else { continue }
            guard found == nil else {
                throw .pathError("\"\(redacted(original))\" names a generation more than once.")
            }
            found = try parsedGeneration(parts.count == 2 ? parts[1] : "", original: original)
        }
        return found
    }

    /// `http(s)://HOST/…` in the Firebase, JSON API, path and virtual-host forms.
    private static func parseHTTP(_ rest: Substring, original: String) throws(StorageError) -> Location {
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let host = hostName(fromAuthority: rest[..<authorityEnd])
        if host.isEmpty {
            throw .pathError("\"\(redacted(original))\" is not a storage URL: it has no host.")
        }
        // The percent-encoded path, without query or fragment.
        let afterAuthority = rest[authorityEnd...]
        let pathEnd = afterAuthority.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? afterAuthority.endIndex
        let encodedPath = afterAuthority[..<pathEnd]
        // Keep empty segments: `/o/` and `/o` both mean the root, and raw
        // slashes inside an object path must survive until decoding.
        let segments = encodedPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()

        // The JSON and XML APIs take `generation` in the query; Firebase's v0 has none.
        let generation = { () throws(StorageError) -> Int64? in try queryGeneration(afterAuthority, original: original)
        }
        if host.hasSuffix(virtualHostSuffix) && host.count > virtualHostSuffix.count {
            let bucket = host.dropLast(virtualHostSuffix.count)
            return Location(
                bucket: try validatedBucket(bucket, original: original),
                path: try decodedPath(segments[...], original: original),
                generation: try generation()
            )
        }
        if let location = try apiLocation(segments, prefix: ["v0"], original: original) {
            return location
        }
        for prefix in [["storage", "v1"], ["download", "storage", "v1"]] {
            if var location = try apiLocation(segments, prefix: prefix, original: original) {
                location.generation = try generation()
                return location
            }
        }
        if pathStyleHosts.contains(host) {
            guard let first = segments.first else {
                throw .pathError("\"\(redacted(original))\" names no bucket.")
            }
            let bucket = try percentDecoded(first, original: original)
            return Location(
                bucket: try validatedBucket(Substring(bucket), original: original),
                path: try decodedPath(segments.dropFirst(), original: original),
                generation: try generation()
            )
        }
        throw .pathError(
            "\"\(redacted(original))\" is not a storage URL: expected gs://BUCKET/PATH, a Firebase download URL "
                + "(/v0/b/BUCKET/o/PATH), a JSON API URL (/storage/v1/b/BUCKET/o/PATH), "
                + "or https://storage.googleapis.com/BUCKET/PATH."
        )
    }

    /// Matches `PREFIX/b/BUCKET[/o[/ENCODED]]`; nil when the path does not
    /// start with `PREFIX/b/`.
    private static func apiLocation(
        _ segments: ArraySlice<Substring>,
        prefix: [String],
        original: String
    ) throws(StorageError) -> Location? {
        let marker = prefix + ["b"]
        guard segments.count > marker.count, segments.prefix(marker.count).elementsEqual(marker, by: { $0 == $1 })
        else { return nil }
        var rest = segments.dropFirst(marker.count)
        let bucket = try validatedBucket(rest.removeFirst(), original: original)
        // `/b/BUCKET` and `/b/BUCKET/` are the root; otherwise `o` must follow.
        if let next = rest.first, !(next.isEmpty && rest.count == 1) {
            guard next == "o" else {
                throw .pathError(
                    "\"\(redacted(original))\" is not an object URL: expected /o after the bucket name."
                )
            }
            rest.removeFirst()
        } else {
            rest = []
        }
        return Location(bucket: bucket, path: try decodedPath(rest, original: original))
    }

    /// Joins the raw segments with `/` and percent-decodes the result once.
    private static func decodedPath(
        _ segments: ArraySlice<Substring>,
        original: String
    ) throws(StorageError) -> StoragePath {
        let joined = segments.joined(separator: "/")
        return exactPath(try percentDecoded(Substring(joined), original: original))
    }

    /// The object named exactly `name`; the root when there is no name.
    private static func exactPath(_ name: String) -> StoragePath {
        name.isEmpty ? .root : StoragePath(exact: name)
    }

    /// The host of an authority: without user information, port, or the
    /// brackets of an IPv6 literal; lowercased.
    private static func hostName(fromAuthority authority: Substring) -> String {
        var hostAndPort = authority
        if let at = hostAndPort.lastIndex(of: "@") {
            hostAndPort = hostAndPort[hostAndPort.index(after: at)...]
        }
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            return String(hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close]).lowercased()
        }
        if let colon = hostAndPort.firstIndex(of: ":") {
            hostAndPort = hostAndPort[..<colon]
        }
        return hostAndPort.lowercased()
    }

    /// Checks a bucket name: non-empty, letters, digits, `-`, `_` and `.` only.
    private static func validatedBucket(_ bucket: Substring, original: String) throws(StorageError) -> String {
        if bucket.isEmpty {
            throw .pathError("\"\(redacted(original))\" names no bucket.")
        }
        let allowed = bucket.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".": true
            default: false
            }
        }
        guard allowed else {
            throw .pathError(
                "\"\(redacted(original))\" names the bucket \"\(bucket)\", which is not a valid bucket name."
            )
        }
        return String(bucket)
    }

    /// Decodes `%XX` escapes once; `+` and every other character stay as they are.
    ///
    /// - Throws: ``StorageErrorCode/pathError`` when a `%` is not followed by
    ///   two hex digits or the decoded bytes are not UTF-8.
    static func percentDecoded(_ text: Substring, original: String) throws(StorageError) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        guard let decoded = V4PercentEncoding.decode(text) else {
            throw .pathError(
                "\"\(redacted(original))\" has a malformed percent escape (% must be followed by two hex digits) or escapes that do not decode to UTF-8 text."
            )
        }
        return decoded
    }

    /// The URL without user information, query and fragment, which may
    /// carry a password or a download token that must never appear in an error.
    static func redacted(_ text: String) -> String {
        if text.lowercased().hasPrefix("gs://") { return text }
        var result = text[...]
        var suffix = ""
        if let cut = result.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            result = result[..<cut]
            suffix = "?…"
        }
        guard let schemeEnd = result.range(of: "://") else { return String(result) + suffix }
        let authority = result[schemeEnd.upperBound...].prefix(while: { $0 != "/" })
        guard let at = authority.lastIndex(of: "@") else { return String(result) + suffix }
        return String(result[..<schemeEnd.upperBound]) + "…@" + String(result[authority.index(after: at)...])
            + suffix
    }
}
