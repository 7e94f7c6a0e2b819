import CloudStorageWire
import Testing

@Suite("Protocol limits")
struct ProtocolLimitsTests {
    @Test func theChunkGranularityIsCloudStorages256KiB() {
        #expect(ProtocolLimits.chunkGranularity == 262_144)
        #expect(ProtocolLimits.chunkGranularityText == "256 KiB (262144 bytes)")
    }

    static let validSizes: [Int64] = [262_144, 2 * 262_144, 16 << 20]
    static let invalidSizes: [Int64] = [0, -262_144, 1, 262_143, 262_145, 3 * 262_144 / 2]

    @Test(arguments: validSizes)
    func aPositiveMultipleOfTheGranularityIsAChunkSize(size: Int64) {
        #expect(ProtocolLimits.isChunkSize(size))
    }

    @Test(arguments: invalidSizes)
    func anythingElseIsNot(size: Int64) {
        #expect(!ProtocolLimits.isChunkSize(size))
    }

    static let roundings: [(limit: Int64, chunk: Int64)] = [
        (1, 262_144), (262_143, 262_144), (262_144, 262_144), (524_287, 262_144),
        (524_288, 524_288), (8 << 20, 8 << 20), ((8 << 20) + 1, 8 << 20),
    ]

    @Test(arguments: roundings)
    func aLimitRoundsDownToWholeGranulesAndNeverBelowOne(limit: Int64, chunk: Int64) {
        #expect(ProtocolLimits.chunkSize(atMost: limit) == chunk)
        #expect(ProtocolLimits.isChunkSize(ProtocolLimits.chunkSize(atMost: limit)))
    }

    @Test func composeTakesAtMost32Sources() {
        #expect(ProtocolLimits.maximumComposeSources == 32)
    }
}
