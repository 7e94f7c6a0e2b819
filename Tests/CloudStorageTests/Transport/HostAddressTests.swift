import Foundation
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Which hosts are this machine: the one check behind sending secrets over plain
/// HTTP only to loopback, and behind never sending a loopback request to a proxy.
@Suite("Host addresses")
struct HostAddressTests {
    @Test(arguments: [
        ("http://127.0.0.1:4443/o", false), ("http://127.9.9.9/o", false), ("http://localhost:9199/o", false),
        ("http://emulator.localhost/o", false), ("http://[::1]:4443/o", false),
        ("http://[0:0:0:0:0:0:0:1]:4443/o", false),
        // Names that merely look like loopback addresses are other machines.
        ("http://127.evil.example.com:4443/o", true), ("http://127.0.0.1.example.com/o", true),
        ("http://10.0.0.7:4443/o", true), ("http://storage.example.com/o", true),
        ("https://storage.example.com/o", false),
    ])
    func plainHTTPToAnotherMachine(url: String, expected: Bool) {
        #expect(URL(string: url)!.isPlainHTTPToAnotherMachine == expected)
    }

    @Test func addressBytes() {
        #expect(HostAddress.bytes("10.1.2.3") == [10, 1, 2, 3])
        #expect(HostAddress.bytes("::1") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(HostAddress.bytes("127.evil.example") == nil)
        #expect(HostAddress.isLoopback("[::1]"))
        #expect(HostAddress.isLoopback("LOCALHOST"))
        #expect(!HostAddress.isLoopback("127.evil.example"))
    }
}
