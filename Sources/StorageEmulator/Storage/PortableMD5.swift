import Foundation

/// MD5 (RFC 1321) in Swift: what ``MD5`` computes with when OpenSSL 3 cannot be loaded.
///
/// Written here because Foundation on Linux has no CryptoKit. The emulator hashes every byte
/// it receives, so this is on the hot path of every upload without OpenSSL: the 64 steps are
/// unrolled with their constants inline, words are loaded straight from the caller's buffer,
/// and the partial block waits in a fixed 64-byte tuple (no heap allocation per block or per call).
package struct PortableMD5: Sendable {
    private var a: UInt32 = 0x6745_2301
    private var b: UInt32 = 0xefcd_ab89
    private var c: UInt32 = 0x98ba_dcfe
    private var d: UInt32 = 0x1032_5476
    /// The bytes of an incomplete block, `length % 64` of them.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var length: UInt64 = 0

    package init() {}

    /// Feeds bytes.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let pendingCount = Int(length % 64)
        length &+= UInt64(bytes.count)
        var index = 0
        if pendingCount > 0 {
            let take = min(64 - pendingCount, bytes.count)
            withUnsafeMutableBytes(of: &pending) { block in
                block.baseAddress!.advanced(by: pendingCount).copyMemory(from: base, byteCount: take)
            }
            index = take
            guard pendingCount + take == 64 else { return }
            let block = pending
            withUnsafeBytes(of: block) { compress($0.baseAddress!) }
        }
        while bytes.count - index >= 64 {
            compress(base.advanced(by: index))
            index += 64
        }
        if index < bytes.count {
            withUnsafeMutableBytes(of: &pending) { block in
                block.baseAddress!.copyMemory(from: base.advanced(by: index), byteCount: bytes.count - index)
            }
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
        // 0x80, zeros up to 56 mod 64, then the bit length, little-endian.
        let padding = 1 + (119 - Int(length % 64)) % 64
        var tail = [UInt8](repeating: 0, count: padding + 8)
        tail[0] = 0x80
        for index in 0..<8 {
            tail[padding + index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * index))
        }
        copy.update(tail)
        var digest = [UInt8](repeating: 0, count: 16)
        for (wordIndex, word) in [copy.a, copy.b, copy.c, copy.d].enumerated() {
            for byte in 0..<4 {
                digest[wordIndex * 4 + byte] = UInt8(truncatingIfNeeded: word >> UInt32(8 * byte))
            }
        }
        return digest
    }

    /// One 64-byte block (RFC 1321, section 3.4): four rounds of sixteen steps, then the sums.
    private mutating func compress(_ block: UnsafeRawPointer) {
        let x = Words(block: block)
        var a = self.a
        var b = self.b
        var c = self.c
        var d = self.d
        Self.round1(&a, &b, &c, &d, x)
        Self.round2(&a, &b, &c, &d, x)
        Self.round3(&a, &b, &c, &d, x)
        Self.round4(&a, &b, &c, &d, x)
        self.a &+= a
        self.b &+= b
        self.c &+= c
        self.d &+= d
    }

    /// The sixteen little-endian words of a block, read where the block lies.
    private struct Words {
        let block: UnsafeRawPointer

        @inline(__always) subscript(index: Int) -> UInt32 {
            UInt32(littleEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
        }
    }

    // Each round's steps in RFC 1321's order, as its `[abcd k s i]` lines read, with
    // T[i] = floor(abs(sin(i)) * 2^32) written out.

    @inline(__always) private static func round1(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: Words
    ) {
        f(&a, b, c, d, x[0], 7, 0xd76a_a478)
        f(&d, a, b, c, x[1], 12, 0xe8c7_b756)
        f(&c, d, a, b, x[2], 17, 0x2420_70db)
        f(&b, c, d, a, x[3], 22, 0xc1bd_ceee)
        f(&a, b, c, d, x[4], 7, 0xf57c_0faf)
        f(&d, a, b, c, x[5], 12, 0x4787_c62a)
        f(&c, d, a, b, x[6], 17, 0xa830_4613)
        f(&b, c, d, a, x[7], 22, 0xfd46_9501)
        f(&a, b, c, d, x[8], 7, 0x6980_98d8)
        f(&d, a, b, c, x[9], 12, 0x8b44_f7af)
        f(&c, d, a, b, x[10], 17, 0xffff_5bb1)
        f(&b, c, d, a, x[11], 22, 0x895c_d7be)
        f(&a, b, c, d, x[12], 7, 0x6b90_1122)
        f(&d, a, b, c, x[13], 12, 0xfd98_7193)
        f(&c, d, a, b, x[14], 17, 0xa679_438e)
        f(&b, c, d, a, x[15], 22, 0x49b4_0821)
    }

    @inline(__always) private static func round2(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: Words
    ) {
        g(&a, b, c, d, x[1], 5, 0xf61e_2562)
        g(&d, a, b, c, x[6], 9, 0xc040_b340)
        g(&c, d, a, b, x[11], 14, 0x265e_5a51)
        g(&b, c, d, a, x[0], 20, 0xe9b6_c7aa)
        g(&a, b, c, d, x[5], 5, 0xd62f_105d)
        g(&d, a, b, c, x[10], 9, 0x0244_1453)
        g(&c, d, a, b, x[15], 14, 0xd8a1_e681)
        g(&b, c, d, a, x[4], 20, 0xe7d3_fbc8)
        g(&a, b, c, d, x[9], 5, 0x21e1_cde6)
        g(&d, a, b, c, x[14], 9, 0xc337_07d6)
        g(&c, d, a, b, x[3], 14, 0xf4d5_0d87)
        g(&b, c, d, a, x[8], 20, 0x455a_14ed)
        g(&a, b, c, d, x[13], 5, 0xa9e3_e905)
        g(&d, a, b, c, x[2], 9, 0xfcef_a3f8)
        g(&c, d, a, b, x[7], 14, 0x676f_02d9)
        g(&b, c, d, a, x[12], 20, 0x8d2a_4c8a)
    }

    @inline(__always) private static func round3(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: Words
    ) {
        h(&a, b, c, d, x[5], 4, 0xfffa_3942)
        h(&d, a, b, c, x[8], 11, 0x8771_f681)
        h(&c, d, a, b, x[11], 16, 0x6d9d_6122)
        h(&b, c, d, a, x[14], 23, 0xfde5_380c)
        h(&a, b, c, d, x[1], 4, 0xa4be_ea44)
        h(&d, a, b, c, x[4], 11, 0x4bde_cfa9)
        h(&c, d, a, b, x[7], 16, 0xf6bb_4b60)
        h(&b, c, d, a, x[10], 23, 0xbebf_bc70)
        h(&a, b, c, d, x[13], 4, 0x289b_7ec6)
        h(&d, a, b, c, x[0], 11, 0xeaa1_27fa)
        h(&c, d, a, b, x[3], 16, 0xd4ef_3085)
        h(&b, c, d, a, x[6], 23, 0x0488_1d05)
        h(&a, b, c, d, x[9], 4, 0xd9d4_d039)
        h(&d, a, b, c, x[12], 11, 0xe6db_99e5)
        h(&c, d, a, b, x[15], 16, 0x1fa2_7cf8)
        h(&b, c, d, a, x[2], 23, 0xc4ac_5665)
    }

    @inline(__always) private static func round4(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: Words
    ) {
        i(&a, b, c, d, x[0], 6, 0xf429_2244)
        i(&d, a, b, c, x[7], 10, 0x432a_ff97)
        i(&c, d, a, b, x[14], 15, 0xab94_23a7)
        i(&b, c, d, a, x[5], 21, 0xfc93_a039)
        i(&a, b, c, d, x[12], 6, 0x655b_59c3)
        i(&d, a, b, c, x[3], 10, 0x8f0c_cc92)
        i(&c, d, a, b, x[10], 15, 0xffef_f47d)
        i(&b, c, d, a, x[1], 21, 0x8584_5dd1)
        i(&a, b, c, d, x[8], 6, 0x6fa8_7e4f)
        i(&d, a, b, c, x[15], 10, 0xfe2c_e6e0)
        i(&c, d, a, b, x[6], 15, 0xa301_4314)
        i(&b, c, d, a, x[13], 21, 0x4e08_11a1)
        i(&a, b, c, d, x[4], 6, 0xf753_7e82)
        i(&d, a, b, c, x[11], 10, 0xbd3a_f235)
        i(&c, d, a, b, x[2], 15, 0x2ad7_d2bb)
        i(&b, c, d, a, x[9], 21, 0xeb86_d391)
    }

    // One step of each round: a = b + ((a + F(b, c, d) + x + t) <<< s), F being the round's function.

    @inline(__always) private static func rotate(_ value: UInt32, _ shift: UInt32) -> UInt32 {
        (value << shift) | (value >> (32 - shift))
    }

    @inline(__always) private static func f(
        _ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32
    ) {
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ x &+ t, s)
    }

    @inline(__always) private static func g(
        _ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32
    ) {
        a = b &+ rotate(a &+ ((b & d) | (c & ~d)) &+ x &+ t, s)
    }

    @inline(__always) private static func h(
        _ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32
    ) {
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ x &+ t, s)
    }

    @inline(__always) private static func i(
        _ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32, _ t: UInt32
    ) {
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ x &+ t, s)
    }
}
