// PLACEHOLDER: replaced by the metadata work.
public struct StorageMetadata: Sendable {}
