import Foundation
import Testing

@testable import CloudStorage

/// Which URLs the SDK counts as plain HTTP to another machine, where it never sends a secret:
/// `HostAddress` (tested in HTTPClientTests) decides what is loopback, the SDK adds the scheme.
@Suite("Plain HTTP to another machine")
struct PlainHTTPToAnotherMachineTests {
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
}
