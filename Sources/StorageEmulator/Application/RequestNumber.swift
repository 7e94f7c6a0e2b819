/// Numbers taken from requests (headers, query parameters), checked before any arithmetic.
///
/// Hostile clients send values such as `9223372036854775807` to make `offset + length`
/// trap. Every byte count or offset a request carries is parsed here: plain decimal
/// digits only (no sign, no spaces, no hex), and at most ``maxObjectSize`` — the
/// largest object Cloud Storage accepts — so that sums and differences of two such
/// values always fit in an `Int64`. Anything else is a `400` naming the field.
enum RequestNumber {
    /// 5 TiB, Cloud Storage's largest object.
    static let maxObjectSize: Int64 = 5 * 1024 * 1024 * 1024 * 1024

    /// Parses a byte count or offset, at most ``maxObjectSize``.
    ///
    /// - Parameters:
    ///   - text: The value as sent.
    ///   - field: The header or parameter name, for the error message.
    /// - Throws: ``HTTPError`` (400) naming `field` when the value is not digits or is too large.
    static func byteCount(_ text: some StringProtocol, field: String) throws -> Int64 {
        guard let value = digits(text) else {
            throw HTTPError.badRequest("Invalid \(field): '\(text)' is not a non-negative decimal number.")
        }
        guard value <= maxObjectSize else {
            throw HTTPError.badRequest(
                "Invalid \(field): \(text) exceeds the largest object size (\(maxObjectSize) bytes).")
        }
        return value
    }

    /// Parses a non-negative number such as a generation, up to `Int64.max`.
    ///
    /// - Throws: ``HTTPError`` (400) naming `field` when the value is not digits or does not fit.
    static func nonNegative(_ text: some StringProtocol, field: String) throws -> Int64 {
        guard let value = digits(text), value < Int64.max else {
            throw HTTPError.badRequest("Invalid \(field): '\(text)'.")
        }
        return value
    }

    /// The value of 1–19 ASCII digits, saturated at `Int64.max` when it does not fit; nil for anything else.
    static func digits(_ text: some StringProtocol) -> Int64? {
        let bytes = text.utf8
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? Int64.max : sum
        }
        return value
    }
}
