/// Emulator features the SDK's integration suites test but the built-in emulator may not have
/// yet: each flag turns on the emulator's cases of those suites (the coordinator flips it when
/// the emulator side lands), while the same cases run against fake-gcs-server or a scripted
/// server meanwhile.
enum EmulatorFeatures {
    /// `rewriteTo` (with `maxBytesRewrittenPerCall`), `compose`, `moveTo` and their
    /// preconditions, for ``ServerSideCopyIntegrationTests``.
    static let serverSideCopies = false
}
