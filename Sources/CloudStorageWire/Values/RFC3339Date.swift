package import Foundation

/// Reads and writes RFC 3339 timestamps, the form of every date in the GCS JSON API.
///
/// A small hand-written parser rather than a Foundation formatter: it accepts
/// exactly the RFC 3339 grammar (with or without fractional seconds, `Z` or a
/// numeric offset) the same way on every platform, allocates nothing, and is
/// `Sendable` without locks.
package enum RFC3339Date {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    ///
    /// `t`, `z` and a space in place of `T` are accepted, as RFC 3339 allows.
    /// A leap second (`:60`) is read as the first second of the next minute.
    ///
    /// - Parameter text: The timestamp.
    /// - Returns: The date, or nil when the text is not an RFC 3339 timestamp.
    package static func parse(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.take("-"),
            let month = scanner.digits(2), scanner.take("-"),
            let day = scanner.digits(2),
            scanner.take("T") || scanner.take("t") || scanner.take(" "),
            let hour = scanner.digits(2), scanner.take(":"),
            let minute = scanner.digits(2), scanner.take(":"),
            let second = scanner.digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysInMonth(month, year: year)).contains(day),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }

        var fraction = 0.0
        if scanner.take(".") {
            var scale = 0.1
            var count = 0
            while let digit = scanner.digits(1) {
                fraction += Double(digit) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }

        let offsetSeconds: Int
        if scanner.take("Z") || scanner.take("z") {
            offsetSeconds = 0
        } else {
            let sign: Int
            if scanner.take("+") {
                sign = 1
            } else if scanner.take("-") {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHour = scanner.digits(2), scanner.take(":"), let offsetMinute = scanner.digits(2),
                (0...23).contains(offsetHour), (0...59).contains(offsetMinute)
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        }
        guard scanner.isAtEnd else { return nil }

        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Writes `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC, rounded to the millisecond, the precision the
    /// JSON API keeps; `parse` reads it back to the same millisecond.
    ///
    /// - Parameter date: A date from year 0 to 9999.
    /// - Returns: The timestamp.
    package static func format(_ date: Date) -> String {
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded())
        let (days, millisecondOfDay) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (dayNumber, dayMilliseconds) =
            millisecondOfDay < 0 ? (days - 1, millisecondOfDay + 86_400_000) : (days, millisecondOfDay)
        let (year, month, day) = civilDate(daysSinceEpoch: dayNumber)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let seconds = dayMilliseconds / 1000
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T\(padded(seconds / 3600, 2)):"
            + "\(padded(seconds / 60 % 60, 2)):\(padded(seconds % 60, 2)).\(padded(dayMilliseconds % 1000, 3))Z"
    }

    /// The date of the proleptic Gregorian calendar `days` after 1970-01-01 (the inverse of
    /// ``daysSinceEpoch(year:month:day:)``).
    private static func civilDate(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        // Count years from March, so the leap day is the last day of the year.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// A cursor over ASCII bytes.
    private struct Scanner {
        package let bytes: [UInt8]
        package var index = 0

        package init(_ bytes: [UInt8]) { self.bytes = bytes }

        package var isAtEnd: Bool { index == bytes.count }

        /// Consumes `character` if it is next.
        package mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        /// Consumes exactly `count` decimal digits and returns their value.
        package mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - index >= count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = bytes[index + offset]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
    }
}
