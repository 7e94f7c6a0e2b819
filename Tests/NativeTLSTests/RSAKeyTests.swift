import Foundation
import Testing

@testable import NativeTLS

/// The TEST-ONLY keys of Tests/TestCredentials (see its README).
private enum TestKeys {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TestCredentials")

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

@Suite("RSA keys and SHA-256 through the run-time OpenSSL")
struct RSAKeyTests {
    @Test("a PKCS #8 key signs exactly as openssl dgst -sha256 -sign did (PKCS #1 v1.5 is deterministic)")
    func knownAnswer() throws {
        let key = try RSAKey(privateKeyPEM: TestKeys.bytes("service-account.key"))
        #expect(key.isPrivate)
        #expect(key.bitCount == 2048)
        let signature = try key.signSHA256(TestKeys.bytes("known-answer.txt"))
        #expect(signature == (try TestKeys.bytes("known-answer.sig")))
    }

    @Test("the PKCS #1 form of the same key signs the same")
    func pkcs1() throws {
        let key = try RSAKey(privateKeyPEM: TestKeys.bytes("service-account-pkcs1.key"))
        #expect(try key.signSHA256(TestKeys.bytes("known-answer.txt")) == (try TestKeys.bytes("known-answer.sig")))
    }

    @Test("the public key and the certificate verify the signature, and refuse a changed message or signature")
    func verify() throws {
        let message = try TestKeys.bytes("known-answer.txt")
        let signature = try TestKeys.bytes("known-answer.sig")
        for name in ["service-account.pub", "service-account.crt"] {
            let key = try RSAKey(publicKeyPEM: TestKeys.bytes(name))
            #expect(!key.isPrivate)
            #expect(key.isValidSHA256Signature(signature, of: message))
            #expect(!key.isValidSHA256Signature(signature, of: message + [0x0A]))
            var flipped = signature
            flipped[17] ^= 0x01
            #expect(!key.isValidSHA256Signature(flipped, of: message))
            #expect(!key.isValidSHA256Signature([], of: message))
            #expect(throws: TLSError.self) { try key.signSHA256(message) }
        }
    }

    @Test(
        "keys that cannot be used are refused at construction with a reason, never a prompt",
        arguments: [
            ("encrypted.key", "cannot read the RSA private key"),
            ("rsa-1024.key", "1024 bits"),
            ("service-account.pub", "cannot read the RSA private key"),
            ("../TLSTestCertificates/localhost.key", "not an RSA key"),
        ])
    func refused(name: String, reason: String) throws {
        let pem = try TestKeys.bytes(name)
        let error = try #require(throws: TLSError.self) { try RSAKey(privateKeyPEM: pem) }
        #expect(error.kind == .invalidConfiguration)
        #expect(error.message.contains(reason), "\(error.message)")
    }

    @Test("garbage and truncated PEM are refused")
    func malformed() throws {
        let pem = try TestKeys.bytes("service-account.key")
        for bad in [Array("not a key".utf8), Array(pem.prefix(pem.count / 2)), []] {
            #expect(throws: TLSError.self) { try RSAKey(privateKeyPEM: bad) }
            #expect(throws: TLSError.self) { try RSAKey(publicKeyPEM: bad) }
        }
    }

    @Test("SHA-256 matches the published test vectors")
    func sha256() throws {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(
            hex(try OpenSSLDigest.sha256([]))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            hex(try OpenSSLDigest.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(try OpenSSLDigest.sha256([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
