/// Media types for common file name extensions, for uploads whose metadata
/// sets no content type.
///
/// A built-in table rather than the platform's type database, so an object
/// gets the same type on Linux and Apple platforms. Types are bare (no
/// `charset` parameter): Cloud Storage stores and serves exactly what is sent,
/// and a charset guess could be wrong. Where IANA registers a type it is the
/// one used (`text/javascript`, `application/yaml`, `video/matroska`);
/// otherwise the widely used unregistered one (`application/x-tar`).
/// Extensions without an entry give nil: the caller's default applies
/// (`application/octet-stream` is deliberately not in the table).
package enum ContentTypes {
    /// The media type for an extension, matched case-insensitively.
    ///
    /// - Parameter ext: An extension without the dot, such as `jpg` or `JPG`.
    /// - Returns: The media type, such as `image/jpeg`, or nil when unknown.
    package static func forPathExtension(_ ext: String) -> String? {
        table[ext.lowercased()]
    }

    /// The media type for the extension of a path's last segment.
    ///
    /// Only the text after the last dot counts (`archive.tar.gz` is gzip). A
    /// segment without a dot, a dotfile such as `.bashrc`, and a name ending
    /// in a dot have no extension and give nil.
    ///
    /// - Parameter path: A path or file name, such as `images/space.jpg`.
    /// - Returns: The media type, or nil when there is no known extension.
    package static func forPath(_ path: String) -> String? {
        let lastSegment = path.split(separator: "/", omittingEmptySubsequences: true).last ?? ""
        guard let dot = lastSegment.lastIndex(of: "."), dot != lastSegment.startIndex else { return nil }
        let ext = lastSegment[lastSegment.index(after: dot)...]
        guard !ext.isEmpty else { return nil }
        return forPathExtension(String(ext))
    }

    private static let table: [String: String] = [
        // Images
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
        "webp": "image/webp", "heic": "image/heic", "heif": "image/heif", "avif": "image/avif",
        "svg": "image/svg+xml", "bmp": "image/bmp", "tiff": "image/tiff", "tif": "image/tiff",
        "ico": "image/vnd.microsoft.icon",
        // Video
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
        "mkv": "video/matroska", "avi": "video/vnd.avi", "mpeg": "video/mpeg", "mpg": "video/mpeg",
        "3gp": "video/3gpp",
        // Audio
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav",
        "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/ogg", "flac": "audio/flac",
        "mid": "audio/midi", "midi": "audio/midi",
        // Text
        "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "tsv": "text/tab-separated-values", "md": "text/markdown",
        "xml": "application/xml", "js": "text/javascript", "mjs": "text/javascript",
        "json": "application/json", "yaml": "application/yaml", "yml": "application/yaml",
        "ics": "text/calendar", "vtt": "text/vtt",
        // Documents
        "pdf": "application/pdf", "rtf": "application/rtf", "doc": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text",
        "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "epub": "application/epub+zip",
        // Archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
        "tar": "application/x-tar", "bz2": "application/x-bzip2", "xz": "application/x-xz",
        "7z": "application/x-7z-compressed", "rar": "application/vnd.rar", "zst": "application/zstd",
        // Fonts
        "ttf": "font/ttf", "otf": "font/otf", "woff": "font/woff", "woff2": "font/woff2",
        // Other
        "wasm": "application/wasm",
    ]
}
