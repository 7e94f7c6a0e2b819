import Testing

@testable import HTTPClient

/// Which hosts are this machine: the one check behind sending secrets over plain
/// HTTP only to loopback, and behind never sending a loopback request to a proxy.
/// (The SDK's use of it, `isPlainHTTPToAnotherMachine`, is tested in CloudStorageTests.)
@Suite("Host addresses")
struct HostAddressTests {
    @Test func addressBytes() {
        #expect(HostAddress.bytes("10.1.2.3") == [10, 1, 2, 3])
        #expect(HostAddress.bytes("::1") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(HostAddress.bytes("127.evil.example") == nil)
        #expect(HostAddress.isLoopback("[::1]"))
        #expect(HostAddress.isLoopback("LOCALHOST"))
        #expect(!HostAddress.isLoopback("127.evil.example"))
    }
}
