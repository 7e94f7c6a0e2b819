/// A V4 request timestamp, `YYYYMMDD'T'HHMMSS'Z'` in UTC, as whole seconds since 1970.
///
/// Calendar arithmetic of its own (days from the civil date, proleptic Gregorian) rather than
/// Foundation's formatters: the text must be the same on every platform and locale, and the
/// verifier parses text a stranger sent.
package struct V4Timestamp: Hashable, Sendable, Comparable {
    /// Seconds since 1970-01-01T00:00:00Z.
    package let secondsSince1970: Int64

    /// The years the text form can hold (four digits).
    private static let years: ClosedRange<Int64> = 1...9999

    /// - Parameter secondsSince1970: Whole seconds since 1970; must fall in the years 1–9999
    ///   (nil otherwise).
    package init?(secondsSince1970: Int64) {
        // -62135596800 is 0001-01-01T00:00:00Z, 253402300799 is 9999-12-31T23:59:59Z.
        guard (-62_135_596_800...253_402_300_799).contains(secondsSince1970) else { return nil }
        self.secondsSince1970 = secondsSince1970
    }

    /// Parses `20190201T090000Z`; nil for anything else (other lengths, signs, an impossible date).
    package init?(text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
            let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15),
            Self.years.contains(year), (1...12).contains(month), hour < 24, minute < 60, second < 60,
            (1...Self.daysIn(month: month, year: year)).contains(day)
        else { return nil }
        let days = Self.daysSince1970(year: year, month: month, day: day)
        self.init(secondsSince1970: days * 86_400 + hour * 3600 + minute * 60 + second)
    }

    /// `20190201T090000Z`.
    package var text: String {
        let days = floorDivide(secondsSince1970, 86_400)
        let seconds = secondsSince1970 - days * 86_400
        let (year, month, day) = Self.civil(daysSince1970: days)
        return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(seconds / 3600, 2)
            + pad(seconds / 60 % 60, 2) + pad(seconds % 60, 2) + "Z"
    }

    /// `20190201`: the date of the credential scope.
    package var dateStamp: String { String(text.prefix(8)) }

    package static func < (lhs: V4Timestamp, rhs: V4Timestamp) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }

    private func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a civil date (the era-based algorithm: 400-year cycles of 146097 days).
    private static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthFromMarch = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``daysSince1970(year:month:day:)``.
    private static func civil(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
