import CAESGCM
import COpenSSLLoader
import Testing

@testable import NativeTLS

/// CAESGCM's AES-GCM: the published test vectors, any split of a message, forgeries refused,
/// and TLS records it seals opened by OpenSSL's own AES-GCM and the other way round.
// Serialized: the provider-context count the record tests check is the process's.
@Suite(.serialized, .enabled(if: cs_gcm_is_accelerated() == 1, "the CPU has no VAES or VPCLMULQDQ"))
struct AESGCMTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    /// Seals `text` in the pieces `splits` gives (each a length), returning ciphertext and tag.
    static func seal(
        key: [UInt8], iv: [UInt8], aad: [UInt8], text: [UInt8], splits: [Int]? = nil, encrypt: Bool = true
    ) -> (output: [UInt8], tag: [UInt8]) {
        var expanded = cs_gcm_key()
        var state = cs_gcm_state()
        #expect(cs_gcm_set_key(&expanded, key, key.count) == 1)
        cs_gcm_start(&state, &expanded, iv)
        #expect(cs_gcm_add_aad(&state, &expanded, aad, aad.count) == 1)
        var output = [UInt8](repeating: 0, count: text.count)
        var offset = 0
        for length in (splits ?? [text.count]) + [text.count] {
            let count = min(length, text.count - offset)
            text.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { out in
                    #expect(
                        cs_gcm_crypt(
                            &state, &expanded, input.baseAddress! + offset, out.baseAddress! + offset, count,
                            encrypt ? 1 : 0) == 1)
                }
            }
            offset += count
        }
        var tag = [UInt8](repeating: 0, count: 16)
        cs_gcm_finish(&state, &expanded, &tag)
        return (output, tag)
    }

    /// The GCM specification's test cases 2, 3, 4, 14 and 16 (McGrew and Viega), and two
    /// 1,000-byte messages whose tags OpenSSL computed: those run the sixteen- and eight-block turns.
    @Test func knownAnswers() {
        let text = Self.bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255")
        let key128 = Self.bytes("feffe9928665731c6d6a8f9467308308")
        let iv = Self.bytes("cafebabefacedbaddecaf888")
        let aad = Self.bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let cases: [(key: [UInt8], iv: [UInt8], aad: [UInt8], text: [UInt8], output: String, tag: String)] = [
            (
                [UInt8](repeating: 0, count: 16), [UInt8](repeating: 0, count: 12), [],
                [UInt8](repeating: 0, count: 16),
                "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"
            ),
            (
                key128, iv, [], text,
                "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                    + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
                "4d5c2af327cd64a62cf35abd2ba6fab4"
            ),
            (
                key128, iv, aad, Array(text.prefix(60)),
                "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                    + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
                "5bc94fbc3221a5db94fae95ae7121a47"
            ),
            (
                [UInt8](repeating: 0, count: 32), [UInt8](repeating: 0, count: 12), [],
                [UInt8](repeating: 0, count: 16),
                "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"
            ),
            (
                key128 + key128, iv, aad, Array(text.prefix(60)),
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                    + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
                "76fc6ece0f4e1768cddf8853bb2d551b"
            ),
        ]
        for known in cases {
            let sealed = Self.seal(key: known.key, iv: known.iv, aad: known.aad, text: known.text)
            #expect(sealed.output == Self.bytes(known.output))
            #expect(sealed.tag == Self.bytes(known.tag))
        }
        let long = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let longTags = [(16, "617af42de4764de06b86cc0f2c529cd7"), (32, "fd4d30bb8dbfc6817b711c7e1a811980")]
        for (length, tag) in longTags {
            let key = (0..<length).map { UInt8($0) }
            let sealed = Self.seal(
                key: key, iv: (0..<12).map { UInt8($0) }, aad: (0..<13).map { UInt8($0) }, text: long)
            #expect(sealed.tag == Self.bytes(tag))
        }
    }

    /// However a message is cut into calls, the ciphertext and tag are the same, and decrypting
    /// in any cut gives the text back with the same tag.
    @Test(arguments: [16, 32])
    func anySplitGivesTheSameResult(keyLength: Int) {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<40 {
            let key = (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let iv = (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let aad = (0..<Int.random(in: 0...40)).map { _ in UInt8.random(in: 0...255) }
            let text = (0..<Int.random(in: 0...3000)).map { _ in UInt8.random(in: 0...255) }
            let whole = Self.seal(key: key, iv: iv, aad: aad, text: text)
            let splits = (0..<8).map { _ in Int.random(in: 0...300) }
            #expect(Self.seal(key: key, iv: iv, aad: aad, text: text, splits: splits) == whole)
            let opened = Self.seal(key: key, iv: iv, aad: aad, text: whole.output, splits: splits, encrypt: false)
            #expect(opened.output == text)
            #expect(opened.tag == whole.tag)
            // A changed ciphertext or AAD bit gives another tag (what decryption checks).
            var forged = whole.output
            if !forged.isEmpty {
                forged[Int.random(in: 0..<forged.count)] ^= 1
                #expect(Self.seal(key: key, iv: iv, aad: aad, text: forged, encrypt: false).tag != whole.tag)
            }
            let otherAAD = aad + [0]
            #expect(Self.seal(key: key, iv: iv, aad: otherAAD, text: whole.output, encrypt: false).tag != whole.tag)
        }
    }

    /// Text after the first `cs_gcm_crypt` cannot add authenticated data.
    @Test func aadAfterTextIsRefused() {
        var key = cs_gcm_key()
        var state = cs_gcm_state()
        _ = cs_gcm_set_key(&key, [UInt8](repeating: 1, count: 16), 16)
        cs_gcm_start(&state, &key, [UInt8](repeating: 2, count: 12))
        let input: [UInt8] = [0]
        var output: [UInt8] = [0]
        #expect(cs_gcm_crypt(&state, &key, input, &output, 1, 1) == 1)
        #expect(cs_gcm_add_aad(&state, &key, [1], 1) == 0)
    }

    /// A protocol version and AES-GCM key size to negotiate.
    enum Setup: CaseIterable {
        case tls13AES128, tls13AES256, tls12AES128, tls12AES256

        var version: String { self == .tls12AES128 || self == .tls12AES256 ? "TLS 1.2" : "TLS 1.3" }
    }

    /// An engine pair whose client and server each use the AES-GCM named, negotiating `setup`
    /// (TLS 1.2 runs the provider's TLS 1.2 record path).
    static func pair(client: TLSAESGCM, server: TLSAESGCM, setup: Setup) throws -> TLSEngineTests.Pair {
        var clientConfiguration = TLSClientConfiguration(
            additionalTrustRoots: [.file(TestPKI.path("test-ca.pem"))], trustsSystemRoots: false)
        clientConfiguration.aesGCM = client
        var serverConfiguration = TestPKI.server("localhost")
        serverConfiguration.aesGCM = server
        let clientContext = try TLSContext(client: clientConfiguration)
        let serverContext = try TLSContext(server: serverConfiguration)
        let api = OpenSSL.api
        switch setup {
        case .tls13AES128:
            break
        case .tls13AES256:
            #expect(api.SSL_CTX_set_ciphersuites!(clientContext.pointer, "TLS_AES_256_GCM_SHA384") == 1)
        case .tls12AES128, .tls12AES256:
            _ = api.SSL_CTX_ctrl!(serverContext.pointer, OpenSSL.ctrlSetMaxProtoVersion, Int(OpenSSL.tls12), nil)
            let bits = setup == .tls12AES128 ? "128-GCM-SHA256" : "256-GCM-SHA384"
            let suite = "ECDHE-ECDSA-AES\(bits):ECDHE-RSA-AES\(bits)"  // whichever the test key is
            #expect(api.SSL_CTX_set_cipher_list!(clientContext.pointer, suite) == 1)
        }
        return TLSEngineTests.Pair(
            client: try TLSEngine(client: clientContext, host: "localhost", port: 443),
            server: try TLSEngine(server: serverContext))
    }

    /// Records sealed by CAESGCM open with OpenSSL's AES-GCM and the other way round, in TLS
    /// 1.3 and 1.2 with either key size, whole and partial, in both directions; a forged record
    /// is refused.
    @Test(arguments: [
        (TLSAESGCM.accelerated, TLSAESGCM.openSSL), (.openSSL, .accelerated), (.accelerated, .accelerated),
    ])
    func recordsInteroperateWithOpenSSL(client: TLSAESGCM, server: TLSAESGCM) throws {
        for setup in Setup.allCases {
            let made = TLSAESGCM.contextsMade
            let pair = try Self.pair(client: client, server: server, setup: setup)
            try pair.handshake()
            #expect(pair.client.negotiatedProtocolVersion == setup.version)
            #expect(TLSAESGCM.contextsMade > made)
            for length in [0, 1, 15, 16, 17, 127, 128, 129, 16383, 16384, 16385, 300_001] {
                let up = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ length) }
                #expect(try TLSEngineTests.Pair.send(up, from: pair.client, to: pair.server) == up)
                let down = up.reversed().map { $0 ^ 0x5a }
                #expect(try TLSEngineTests.Pair.send(down, from: pair.server, to: pair.client) == down)
            }
            _ = try Array("secret".utf8).withUnsafeBytes { try pair.client.write($0) }
            var record = Array(pair.client.outbound)
            pair.client.didSend(record.count)
            record[record.count - 3] ^= 0x40  // inside the tag
            _ = record.withUnsafeBytes { pair.server.receive($0) }
            var buffer = [UInt8](repeating: 0, count: 64)
            #expect(throws: TLSError.self) { _ = try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) } }
        }
    }
}
