import StorageEmulator
import Testing

@testable import CloudStorageCLI

/// `cloud-storage emulator --shape`: the option fills the configuration's network shape, and a
/// bad shape is a usage error that names the option and the bad part.
@Suite("emulator --shape")
struct EmulatorShapeOptionTests {
    @Test func aShapeFillsTheConfiguration() throws {
        let configuration = try EmulatorCommand(["--shape", "rate=50MB/s,latency=10ms"]).configuration
        #expect(configuration.networkShape == .init(rate: 50_000_000, latency: .milliseconds(10)))
        #expect(try EmulatorCommand([]).configuration.networkShape == nil)
    }

    @Test func aBadShapeIsAUsageErrorNamingThePart() {
        #expect {
            try EmulatorCommand(["--shape", "rate=50MB/s,latency=10"])
        } throws: { error in
            (error as? UsageError)?.description
                == "--shape: bad part \"latency=10\": not a latency; expected a number and one of us, ms, s "
                + "(e.g. latency=10ms)"
        }
    }
}
