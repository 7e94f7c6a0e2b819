import Foundation
import NativeTLS
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The grouped configuration: each default in one place, each value checked where it is set,
/// and the names of retry-time budgets in errors.
@Suite("Storage configuration")
struct StorageConfigurationTests {
    // MARK: - One source for each default

    @Test func theNativeTransportOfADefaultStorageRunsWithTheConfigurationsDefaults() throws {
        let defaults = StorageConfiguration()
        let storage = Storage(
            bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:1")!), configuration: defaults)
        let transport = try #require(ConnectionLimitTests.native(storage))
        #expect(transport.configuration.maxConnectionsPerHost == defaults.connectionPool.maxConnectionsPerHost)
        #expect(transport.configuration.maxIdleTime == defaults.connectionPool.idleTimeout)
        #expect(transport.configuration.connectTimeout == defaults.timeouts.connect)
        #expect(transport.configuration.additionalTrustRoots.isEmpty)
        #expect(transport.pool.maxConnectionsPerHost == defaults.connectionPool.maxConnectionsPerHost)
        #expect(transport.pool.maxIdleTime == defaults.connectionPool.idleTimeout)
        // A transport made without a Storage starts from the same values.
        let bare = NativeHTTPTransport.Configuration()
        #expect(bare.maxConnectionsPerHost == defaults.connectionPool.maxConnectionsPerHost)
        #expect(bare.maxIdleTime == defaults.connectionPool.idleTimeout)
        #expect(bare.connectTimeout == defaults.timeouts.connect)
    }

    @Test func theNativeTransportTakesEveryPoolTimeOutAndTLSSettingAStorageIsGiven() throws {
        var configuration = StorageConfiguration()
        configuration.transport = .native
        try configuration.connectionPool.setMaxConnectionsPerHost(3)
        try configuration.connectionPool.setIdleTimeout(.seconds(7))
        try configuration.timeouts.setConnect(.seconds(5))
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: "/etc/ca.pem"))]
        let transport = try #require(ConnectionLimitTests.native(Storage(bucket: "b", configuration: configuration)))
        #expect(transport.configuration.connectTimeout == .seconds(5))
        #expect(transport.configuration.additionalTrustRoots == [.file("/etc/ca.pem")])
        #expect(transport.pool.maxConnectionsPerHost == 3)
        #expect(transport.pool.maxIdleTime == .seconds(7))
    }

    @Test func theDocumentedDefaults() {
        let configuration = StorageConfiguration()
        #expect(configuration.uploads.multipartThreshold == 8 * 1024 * 1024)
        #expect(configuration.uploads.chunkSize == nil)
        #expect(configuration.retry.maxUploadTime == .seconds(600))
        #expect(configuration.retry.maxDownloadTime == .seconds(600))
        #expect(configuration.retry.maxOperationTime == .seconds(120))
        #expect(configuration.retry.initialDelay == .seconds(1))
        #expect(configuration.retry.maxDelay == .seconds(32))
        #expect(configuration.timeouts.request == .seconds(60))
        #expect(configuration.timeouts.connect == .seconds(30))
        #expect(configuration.connectionPool.maxConnectionsPerHost == 32)
        #expect(configuration.connectionPool.idleTimeout == .seconds(30))
        #expect(configuration.tls.additionalTrustRoots.isEmpty)
        #expect(configuration.verifiesChecksums)
        #expect(configuration.transport == .automatic)
    }

    // MARK: - Validation where each value is set

    /// One setter, a value it refuses, and how to read the setting back.
    struct Refusal: Sendable, CustomTestStringConvertible {
        let setting: String
        let set: @Sendable (inout StorageConfiguration) throws -> Void
        let read: @Sendable (StorageConfiguration) -> String
        var testDescription: String { setting }
    }

    static let refusals: [Refusal] = [
        Refusal(setting: "uploads.chunkSize", set: { try $0.uploads.setChunkSize(100) }, read: { "\($0.uploads)" }),
        Refusal(setting: "uploads.chunkSize", set: { try $0.uploads.setChunkSize(0) }, read: { "\($0.uploads)" }),
        Refusal(
            setting: "retry.maxUploadTime", set: { try $0.retry.setMaxUploadTime(.seconds(-1)) },
            read: { "\($0.retry)" }),
        Refusal(
            setting: "retry.maxDownloadTime", set: { try $0.retry.setMaxDownloadTime(.milliseconds(-1)) },
            read: { "\($0.retry)" }),
        Refusal(
            setting: "retry.maxOperationTime", set: { try $0.retry.setMaxOperationTime(.seconds(-5)) },
            read: { "\($0.retry)" }),
        Refusal(setting: "retry.initialDelay", set: { try $0.retry.setInitialDelay(.zero) }, read: { "\($0.retry)" }),
        Refusal(setting: "retry.maxDelay", set: { try $0.retry.setMaxDelay(.seconds(-1)) }, read: { "\($0.retry)" }),
        Refusal(setting: "timeouts.request", set: { try $0.timeouts.setRequest(.zero) }, read: { "\($0.timeouts)" }),
        Refusal(
            setting: "timeouts.connect", set: { try $0.timeouts.setConnect(.seconds(-1)) }, read: { "\($0.timeouts)" }),
        Refusal(
            setting: "connectionPool.maxConnectionsPerHost",
            set: { try $0.connectionPool.setMaxConnectionsPerHost(0) }, read: { "\($0.connectionPool)" }),
        Refusal(
            setting: "connectionPool.maxConnectionsPerHost",
            set: { try $0.connectionPool.setMaxConnectionsPerHost(1025) }, read: { "\($0.connectionPool)" }),
        Refusal(
            setting: "connectionPool.idleTimeout", set: { try $0.connectionPool.setIdleTimeout(.zero) },
            read: { "\($0.connectionPool)" }),
    ]

    @Test(arguments: refusals)
    func aValueOutOfRangeIsRefusedWhereItIsSetNamingTheSettingAndChangingNothing(_ refusal: Refusal) {
        var configuration = StorageConfiguration()
        let before = refusal.read(configuration)
        let error = #expect(throws: StorageError.self) { try refusal.set(&configuration) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasPrefix("\(refusal.setting) must be ") == true, "\(String(describing: error))")
        #expect(refusal.read(configuration) == before)
        #expect(configuration == StorageConfiguration())
    }

    @Test func theEdgesOfEachRangeAreAccepted() throws {
        var configuration = StorageConfiguration()
        try configuration.uploads.setChunkSize(StorageConfiguration.Uploads.chunkGranularity)
        try configuration.retry.setMaxUploadTime(.zero)
        try configuration.retry.setMaxDownloadTime(.zero)
        try configuration.retry.setMaxOperationTime(.zero)
        try configuration.retry.setInitialDelay(.nanoseconds(1))
        try configuration.retry.setMaxDelay(.nanoseconds(1))
        try configuration.timeouts.setRequest(.nanoseconds(1))
        try configuration.timeouts.setConnect(.nanoseconds(1))
        try configuration.connectionPool.setMaxConnectionsPerHost(1)
        try configuration.connectionPool.setMaxConnectionsPerHost(1024)
        try configuration.connectionPool.setIdleTimeout(.nanoseconds(1))
        #expect(configuration.uploads.chunkSize == Int64(256 * 1024))
        #expect(configuration.retry.maxOperationTime == .zero)
        #expect(configuration.connectionPool.maxConnectionsPerHost == 1024)
        #expect(configuration.connectionPool.idleTimeout == .nanoseconds(1))
    }

    @Test func aRetryTimeRunningOutNamesTheGroupedSetting() {
        let configuration = StorageConfiguration()
        #expect(RetryBackoff(configuration: configuration, operation: .upload).budgetName == "retry.maxUploadTime")
        #expect(RetryBackoff(configuration: configuration, operation: .download).budgetName == "retry.maxDownloadTime")
        #expect(RetryBackoff(configuration: configuration, operation: .other).budgetName == "retry.maxOperationTime")
    }
}
