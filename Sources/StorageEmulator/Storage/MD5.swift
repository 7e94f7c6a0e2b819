import Foundation

/// A streaming MD5 (RFC 1321), for the `md5Hash` of stored objects.
///
/// Written here because Foundation on Linux has no CryptoKit. MD5 is only a
/// content fingerprint in the storage APIs, never a security measure. A value
/// type, so a session can snapshot the state before a request and restore it
/// if the request is rolled back.
package struct MD5: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    package init() {
        pending.reserveCapacity(64)
    }

    /// Feeds bytes.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var index = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            index = take
            if pending.count == 64 {
                pending.withUnsafeBytes { compress(blocks: UnsafeRawBufferPointer(rebasing: $0[0..<64])) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        let whole = (bytes.count - index) / 64 * 64
        if whole > 0 {
            compress(blocks: UnsafeRawBufferPointer(rebasing: bytes[index..<index + whole]))
            index += whole
        }
        if index < bytes.count {
            pending.append(contentsOf: bytes[index..<bytes.count])
        }
    }

    /// Feeds bytes.
    package mutating func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The 16-byte digest of everything fed so far (the state is left untouched).
    package func finalize() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        var tail: [UInt8] = [0x80]
        let padded = (Int(length % 64) + 1) % 64
        let zeros = padded <= 56 ? 56 - padded : 120 - padded
        tail.append(contentsOf: repeatElement(0, count: zeros))
        for shift in stride(from: 0, to: 64, by: 8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        let savedLength = copy.length
        copy.update(tail)
        copy.length = savedLength
        var digest: [UInt8] = []
        for word in [copy.state.0, copy.state.1, copy.state.2, copy.state.3] {
            for shift in stride(from: 0, to: 32, by: 8) {
                digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift)))
            }
        }
        return digest
    }

    /// The digest of `bytes`.
    package static func digest<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }

    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    /// floor(abs(sin(i + 1)) * 2^32), as RFC 1321 defines the table.
    private static let constants: [UInt32] = (0..<64).map { index in
        UInt32(truncatingIfNeeded: Int64((abs(sin(Double(index + 1))) * 4_294_967_296.0).rounded(.down)))
    }

    /// Runs the compression function over `blocks`, a whole number of 64-byte blocks.
    ///
    /// The tables are read through buffer pointers and the message words from
    /// one scratch buffer on the stack, with no array per block and no range
    /// patterns: in debug builds, where tests run the emulator, each of those
    /// costs an allocation, a retain and release, or a generic call per round,
    /// and together they made MD5 most of the CPU time of the fault-injection
    /// suites (3–4 times what it takes now).
    private mutating func compress(blocks: UnsafeRawBufferPointer) {
        var (a0, b0, c0, d0) = state
        Self.constants.withUnsafeBufferPointer { constants in
            Self.shifts.withUnsafeBufferPointer { shifts in
                // The block's 16 little-endian words, copied in once per block.
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { words in
                    var offset = 0
                    while offset < blocks.count {
                        UnsafeMutableRawBufferPointer(words).copyMemory(
                            from: UnsafeRawBufferPointer(rebasing: blocks[offset..<offset + 64]))
                        var (a, b, c, d) = (a0, b0, c0, d0)
                        for round in 0..<64 {
                            var f: UInt32
                            let g: Int
                            if round < 16 {
                                f = (b & c) | (~b & d)
                                g = round
                            } else if round < 32 {
                                f = (d & b) | (~d & c)
                                g = (5 * round + 1) & 15
                            } else if round < 48 {
                                f = b ^ c ^ d
                                g = (3 * round + 5) & 15
                            } else {
                                f = c ^ (b | ~d)
                                g = (7 * round) & 15
                            }
                            f = f &+ a &+ constants[round] &+ UInt32(littleEndian: words[g])
                            a = d
                            d = c
                            c = b
                            let shift = shifts[round]
                            b = b &+ ((f << shift) | (f >> (32 - shift)))
                        }
                        (a0, b0, c0, d0) = (a0 &+ a, b0 &+ b, c0 &+ c, d0 &+ d)
                        offset += 64
                    }
                }
            }
        }
        state = (a0, b0, c0, d0)
    }
}
