import Foundation
import Testing

@testable import CloudStorage
@testable import CloudStorageCLI

/// `cp --slices N --slice-threshold SIZE` and the setting they land in, checked where set.
@Suite("Sliced download settings")
struct SlicedDownloadOptionsTests {
    static let home = ["XDG_DATA_HOME": "/tmp/xdg-for-tests"]

    @Test func theOptionsSetTheDownloadSettings() throws {
        let command = try CopyCommand(
            ["--slices", "16", "--slice-threshold", "64M", "gs://bucket/o", "/tmp/o"], environment: Self.home)
        let downloads = try command.configuration().downloads
        #expect(downloads.sliceCount == 16)
        #expect(downloads.slicingThreshold == 64 * 1024 * 1024)
        let defaults = try CopyCommand(["gs://bucket/o", "/tmp/o"], environment: Self.home).configuration().downloads
        #expect(defaults == StorageConfiguration.Downloads())
        #expect(defaults.sliceCount == 16 && defaults.slicingThreshold == 150 * 1024 * 1024)
    }

    @Test(arguments: [["--slices", "0"], ["--slices", "65"], ["--slices", "x"], ["--slice-threshold", "1T"]])
    func badValuesAreUsageErrors(words: [String]) {
        #expect(throws: UsageError.self) {
            try CopyCommand(words + ["gs://bucket/o", "/tmp/o"], environment: Self.home)
        }
    }

    @Test func theSliceCountIsCheckedWhereSet() throws {
        var downloads = StorageConfiguration.Downloads()
        let error = #expect(throws: StorageError.self) { try downloads.setSliceCount(0) }
        #expect(error?.code == .invalidArgument)
        #expect(downloads.sliceCount == 16, "a refused count leaves the setting unchanged")
        try downloads.setSliceCount(StorageConfiguration.Downloads.maxSliceCount)
        #expect(downloads.sliceCount == 64)
    }

    @Test(arguments: [0.0, -1, .infinity, .nan])
    func aProbesLoadIsCheckedWhereSet(load: Double) {
        let error = #expect(throws: StorageError.self) {
            try StorageConfiguration.Downloads.SlicingProbe(duration: .zero, rate: 1, maximumClientLoad: load)
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("maximumClientLoad") == true)
    }
}
