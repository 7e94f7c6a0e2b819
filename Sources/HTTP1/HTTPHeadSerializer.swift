/// Writes request and response heads.
///
/// Every field is checked before it is written, so that a value taken from
/// user input can never add a line (response splitting) or break framing.
///
/// ```swift
/// var wire: [UInt8] = []
/// try HTTPHeadSerializer.append(HTTPResponseHead(status: 200, headers: ["Content-Length": "0"]), to: &wire)
/// ```
package enum HTTPHeadSerializer {
    /// Appends `method target version`, the fields and the empty line.
    ///
    /// - Throws: ``HTTP1Error/invalidStartLine`` for a method that is not a token or a target with
    ///   spaces or controls; a field error for a field that cannot be sent.
    package static func append(_ head: HTTPRequestHead, to buffer: inout [UInt8]) throws(HTTP1Error) {
        guard !head.method.isEmpty, head.method.utf8.allSatisfy(ASCII.isTokenChar),
            !head.target.isEmpty, head.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .invalidStartLine }
        buffer += head.method.utf8
        buffer.append(ASCII.space)
        buffer += head.target.utf8
        buffer.append(ASCII.space)
        buffer += head.version.description.utf8
        buffer += [ASCII.cr, ASCII.lf]
        try appendFields(head.headers, to: &buffer)
        buffer += [ASCII.cr, ASCII.lf]
    }

    /// Appends `version status reason`, the fields and the empty line.
    ///
    /// - Throws: ``HTTP1Error/invalidStatus`` for a status outside 100...999, a field error for a
    ///   field that cannot be sent.
    package static func append(_ head: HTTPResponseHead, to buffer: inout [UInt8]) throws(HTTP1Error) {
        guard (100...999).contains(head.status) else { throw .invalidStatus }
        guard head.reason.utf8.allSatisfy(ASCII.isFieldValueChar) else { throw .invalidStartLine }
        buffer += head.version.description.utf8
        buffer.append(ASCII.space)
        buffer += String(head.status).utf8
        buffer.append(ASCII.space)
        buffer += head.reason.utf8
        buffer += [ASCII.cr, ASCII.lf]
        try appendFields(head.headers, to: &buffer)
        buffer += [ASCII.cr, ASCII.lf]
    }

    /// Appends `name: value\r\n` for every field.
    ///
    /// - Throws: ``HTTP1Error/invalidFieldName`` or ``HTTP1Error/invalidFieldValue``.
    package static func appendFields(_ headers: HTTPHeaders, to buffer: inout [UInt8]) throws(HTTP1Error) {
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(ASCII.isTokenChar) else { throw .invalidFieldName }
            guard value.utf8.allSatisfy(ASCII.isFieldValueChar) else { throw .invalidFieldValue }
            buffer += name.utf8
            buffer += [UInt8(ascii: ":"), ASCII.space]
            buffer += value.utf8
            buffer += [ASCII.cr, ASCII.lf]
        }
    }
}
