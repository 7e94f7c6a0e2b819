extension StoragePath {
    /// The object name an operation on this path sends, checked, and the generation it acts on.
    ///
    /// - Throws: What ``validatedObjectName()`` throws; ``StorageErrorCode/invalidArgument`` for a
    ///   generation below 1, or any generation on an endpoint whose protocol has none (Firebase v0).
    package func validatedObject(
        generation: Int64?, on endpoint: StorageEndpoint
    ) throws(StorageError) -> (name: String, generation: Int64?) {
        let name = try validatedObjectName()
        guard let generation else { return (name, nil) }
        guard generation > 0 else {
            throw .invalidArgument(
                "Generations are positive numbers; \(name) was pinned to generation \(generation), which names nothing."
            )
        }
        guard endpoint.wireProtocol == .gcsJSON else {
            // Acting on the live object instead would read, change or delete another version than the one named.
            throw .invalidArgument(
                "Firebase Storage has no object generations; gs://…/\(name)#\(generation) names one. "
                    + "Use a Google Cloud Storage endpoint, or atGeneration(nil) for the live object.")
        }
        return (name, generation)
    }

    /// The object name to write at this path, checked; a `generation` is refused, as an operation
    /// that writes makes a new generation and can never write an old one.
    ///
    /// - Parameter operation: What writes, for the message ("An upload").
    /// - Throws: What ``validatedObjectName()`` throws; ``StorageErrorCode/invalidArgument`` when
    ///   a generation is given.
    package func validatedWriteTarget(generation: Int64?, _ operation: String) throws(StorageError) -> String {
        let name = try validatedObjectName()
        if let generation {
            throw .invalidArgument(
                "\(operation) writes a new generation, so it cannot write to \(name)#\(generation), "
                    + "a reference pinned to generation \(generation). Write to atGeneration(nil) instead, "
                    + "with StoragePreconditions(ifGenerationMatch: \(generation)) to replace only that generation.")
        }
        return name
    }
}
