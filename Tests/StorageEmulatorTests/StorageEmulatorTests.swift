import Testing

@testable import StorageEmulator
