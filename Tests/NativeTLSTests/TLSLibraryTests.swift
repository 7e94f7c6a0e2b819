import Testing

@testable import NativeTLS

/// The run-time loader: available here, and a clear reason when it cannot load.
@Suite struct TLSLibraryTests {
    @Test func loadsTheSystemOpenSSL() {
        #expect(TLSLibrary.isAvailable)
        #expect(TLSLibrary.unavailableReason == nil)
    }

    @Test func aMissingLibraryIsNamed() throws {
        let reason = try #require(TLSLibrary.probe(libssl: "libssl-does-not-exist.so.3", libcrypto: "libcrypto.so.3"))
        #expect(reason.contains("cannot load libssl-does-not-exist.so.3"))
    }

    @Test func aMissingFunctionIsNamed() throws {
        // libcrypto has none of libssl's functions, so the first one looked up is missing.
        let reason = try #require(TLSLibrary.probe(libssl: "libcrypto.so.3", libcrypto: "libcrypto.so.3"))
        #expect(reason.contains("lacks the function OPENSSL_init_ssl"))
    }

    @Test func theRealLibrariesProbeClean() {
        #expect(TLSLibrary.probe(libssl: "libssl.so.3", libcrypto: "libcrypto.so.3") == nil)
    }

    @Test func anOpenSSLOlderThan3IsRefusedWithTheVersion() throws {
        let reason = try #require(TLSLibrary.versionRefusal(0x1010_117F))  // 1.1.1w
        #expect(reason == "OpenSSL 1.1.1 is too old: 3.0 or newer is required")
        #expect(TLSLibrary.versionRefusal(0x3000_0000) == nil)
        #expect(TLSLibrary.versionRefusal(0x3050_0010) == nil)
    }
}
