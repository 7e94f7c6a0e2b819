import Foundation
import HTTPClient

/// A `multipart/related` body of two parts, metadata JSON and then the
/// object's bytes: the single-request upload of both wire protocols.
///
/// The media part is the caller's body segments, unchanged, so file regions
/// are still sent straight from the file.
struct MultipartRelatedBody {
    /// The value of the request's `Content-Type` header.
    let contentType: String
    /// The whole body.
    let body: HTTPRequestBody

    /// - Parameters:
    ///   - metadataJSON: The first part.
    ///   - jsonContentType: The first part's `Content-Type`.
    ///   - mediaContentType: The second part's `Content-Type`.
    ///   - media: The object's bytes.
    ///   - closingLineBreak: Whether a CRLF follows the closing delimiter
    ///     (optional in RFC 2046; each protocol matches its reference client).
    init(
        metadataJSON: Data,
        jsonContentType: String,
        mediaContentType: String,
        media: HTTPRequestBody,
        closingLineBreak: Bool
    ) {
        // A UUID cannot occur by chance in the metadata or the media.
        let boundary = "cloudstorage-" + UUID().uuidString
        var head = Data("--\(boundary)\r\nContent-Type: \(jsonContentType)\r\n\r\n".utf8)
        head.append(metadataJSON)
        head.append(Data("\r\n--\(boundary)\r\nContent-Type: \(mediaContentType)\r\n\r\n".utf8))
        let tail = Data(("\r\n--\(boundary)--" + (closingLineBreak ? "\r\n" : "")).utf8)
        contentType = "multipart/related; boundary=\(boundary)"
        body = HTTPRequestBody(segments: [.data(head)] + media.segments + [.data(tail)])
    }
}
