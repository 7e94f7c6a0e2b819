import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

@Suite("RSA signing keys, PEM and PKCS #8")
struct RSASigningKeyTests {
    @Test("a service-account key signs RS256 exactly as openssl did")
    func knownAnswer() throws {
        let key = try RSASigningKey(pem: TestCredentials.text("service-account.key"))
        let message = Array(try Data(contentsOf: TestCredentials.url("known-answer.txt")))
        #expect(try key.sign(message) == Array(try Data(contentsOf: TestCredentials.url("known-answer.sig"))))
    }

    @Test(
        "unusable keys fail at construction with invalidArgument",
        arguments: ["encrypted.key", "rsa-1024.key", "service-account.pub"])
    func refused(name: String) throws {
        let pem = try TestCredentials.text(name)
        let error = try #require(throws: StorageError.self) { try RSASigningKey(pem: pem) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.hasPrefix("The private key cannot be used"))
    }

    @Test("PKCS #8 unwraps to the PKCS #1 key openssl wrote (the Security framework's input)")
    func pkcs8() throws {
        let pkcs8 = try #require(
            PEMBlock.derBytes(in: TestCredentials.text("service-account.key"), labels: ["PRIVATE KEY"]))
        let pkcs1 = try #require(
            PEMBlock.derBytes(in: TestCredentials.text("service-account-pkcs1.key"), labels: ["RSA PRIVATE KEY"]))
        #expect(PKCS8.rsaPrivateKey(in: pkcs8.bytes) == pkcs1.bytes)
        // Truncated or extended DER, and a non-RSA key (EC, from the TLS test PKI), are refused.
        #expect(PKCS8.rsaPrivateKey(in: Array(pkcs8.bytes.dropLast())) == nil)
        #expect(PKCS8.rsaPrivateKey(in: pkcs8.bytes + [0]) == nil)
        #expect(PKCS8.rsaPrivateKey(in: []) == nil)
        let ec = try String(
            contentsOf: TestCredentials.directory.deletingLastPathComponent()
                .appendingPathComponent("TLSTestCertificates/localhost.key"), encoding: .utf8)
        #expect(PKCS8.rsaPrivateKey(in: try #require(PEMBlock.derBytes(in: ec, labels: ["PRIVATE KEY"])).bytes) == nil)
    }

    @Test("SHA-256 in hex")
    func sha256() throws {
        #expect(
            try SHA256Digest.hex(of: Array("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
