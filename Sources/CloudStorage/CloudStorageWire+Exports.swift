// The wire layer's value types (paths, metadata, preconditions, errors, queries…) are part of
// this module's API: whoever imports CloudStorage sees them.
@_exported public import CloudStorageWire
