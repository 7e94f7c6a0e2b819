public import Foundation

extension StorageReference {
    /// Reads the metadata of this reference's object.
    ///
    /// Cancelling the calling Swift task cancels the request.
    ///
    /// ```swift
    /// let metadata = try await storage.reference(withPath: "images/space.jpg").getMetadata()
    /// print(metadata.contentType ?? "", metadata.size, metadata.customMetadata)
    /// ```
    ///
    /// On a reference pinned to a generation (``atGeneration(_:)``), the metadata of that
    /// generation, live or noncurrent.
    ///
    /// - Returns: The object's metadata as the server reports it.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when no
    ///   object (or no such generation) exists; ``StorageErrorCode/invalidArgument`` on the root
    ///   reference, or one pinned to a generation on a Firebase endpoint;
    ///   ``StorageErrorCode/protocolViolation`` when the server answers with another generation
    ///   than the one pinned; ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func getMetadata() async throws(StorageError) -> StorageMetadata {
        let (name, generation) = try validatedObject()
        var executor = CallExecutor(storage: storage, operation: .other)
        let request = storage.objectProtocol.getMetadata(
            bucket: storage.bucket, name: name, generation: generation)
        let response = try await executor.execute(
            request, idempotency: .idempotent, accepting: [200], about: .object(name))
        return try checkedGeneration(StorageMetadata(objectResource: response.body))
    }

    /// `metadata`, when it is of the generation this reference is pinned to (or the reference
    /// is not pinned).
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the server answered about another
    ///   generation than the one asked for: acting on it would act on another version.
    func checkedGeneration(_ metadata: StorageMetadata) throws(StorageError) -> StorageMetadata {
        if let generation, let answered = metadata.generation, answered != generation {
            throw .protocolViolation(
                "The server was asked about generation \(generation) of \(path.string) and answered about generation \(answered)."
            )
        }
        return metadata
    }

    /// Changes some of the object's metadata, leaving every field the update
    /// does not name as it is.
    ///
    /// Only the fields set in `update` are sent (a PATCH): a field set to
    /// ``StorageMetadataUpdate/Change/set(_:)`` takes that value, one set to
    /// ``StorageMetadataUpdate/Change/remove`` is removed, and custom keys the
    /// update does not mention keep their values. An update that names
    /// nothing reads the metadata without changing it.
    ///
    /// ```swift
    /// var update = StorageMetadataUpdate()
    /// update.contentType = .set("image/png")
    /// update.customMetadata["location"] = .set("Yosemite, CA, USA")
    /// update.customMetadata["draft"] = .remove
    /// let metadata = try await spaceRef.updateMetadata(update)
    /// print(metadata.customMetadata)  // "location" set, "draft" gone, others kept
    /// ```
    ///
    /// With `preconditions`, the change happens only if they hold: pass the
    /// ``StorageMetadata/metageneration`` read before to change metadata nobody
    /// changed since (a read-modify-write that cannot lose another writer's change).
    ///
    /// ```swift
    /// let current = try await spaceRef.getMetadata()
    /// var change = StorageMetadataUpdate()
    /// change.customMetadata["views"] = .set(String(Int(current.customMetadata["views"] ?? "0")! + 1))
    /// try await spaceRef.updateMetadata(
    ///     change, preconditions: StoragePreconditions(ifMetagenerationMatch: current.metageneration))
    /// ```
    ///
    /// - Parameters:
    ///   - update: The fields to set and to remove.
    ///   - preconditions: Conditions the object must meet (Google Cloud Storage endpoints only;
    ///     see ``StoragePreconditions``). An update that names nothing checks them against the
    ///     metadata it reads. On a reference pinned to a generation (``atGeneration(_:)``),
    ///     the update changes that generation, and the conditions are judged against it.
    /// - Returns: The object's metadata after the change.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when no
    ///   object exists; ``StorageErrorCode/preconditionFailed`` when a precondition
    ///   does not hold (nothing changed); ``StorageErrorCode/invalidArgument`` on the root
    ///   reference, and on a Firebase endpoint for a field only Google Cloud Storage has
    ///   (custom time, holds, retention); ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func updateMetadata(
        _ update: StorageMetadataUpdate, preconditions: StoragePreconditions = .none
    ) async throws(StorageError) -> StorageMetadata {
        let (name, generation) = try validatedObject()
        try preconditions.validate(for: storage.endpoint)
        try update.validate(for: storage.endpoint)
        if update.isEmpty {
            // Nothing to change: a PATCH naming nothing would still bump the metageneration.
            let current = try await getMetadata()
            if !preconditions.holds(for: current) {
                throw StorageError(
                    .preconditionFailed,
                    "A precondition of the update did not hold: the object is not in the state it required.")
            }
            return current
        }
        var executor = CallExecutor(storage: storage, operation: .other)
        let request = storage.objectProtocol.updateMetadata(
            bucket: storage.bucket, name: name, generation: generation, update, preconditions: preconditions)
        let response = try await executor.execute(
            request, idempotency: .metagenerationConditioned(preconditions), accepting: [200], about: .object(name))
        return try checkedGeneration(StorageMetadata(objectResource: response.body))
    }

    /// Sets the metadata fields that `metadata` gives a value, as the Firebase
    /// SDK's `updateMetadata(_:)` does, leaving every other field as it is.
    ///
    /// The same as ``updateMetadata(_:preconditions:)-(StorageMetadataUpdate,_)`` with
    /// ``StorageMetadataUpdate/init(setting:)``: nil fields and absent custom
    /// keys are not sent, so this never removes anything.
    ///
    /// ```swift
    /// var metadata = StorageMetadata()
    /// metadata.contentType = "image/png"
    /// metadata.customMetadata = ["location": "Yosemite, CA, USA"]
    /// let stored = try await spaceRef.updateMetadata(metadata)
    /// ```
    ///
    /// - Parameters:
    ///   - metadata: The values to set.
    ///   - preconditions: Conditions the object must meet (see ``StoragePreconditions``).
    /// - Returns: The object's metadata after the change.
    /// - Throws: As ``updateMetadata(_:preconditions:)-(StorageMetadataUpdate,_)``.
    public func updateMetadata(
        _ metadata: StorageMetadata, preconditions: StoragePreconditions = .none
    ) async throws(StorageError) -> StorageMetadata {
        try await updateMetadata(StorageMetadataUpdate(setting: metadata), preconditions: preconditions)
    }

    /// Deletes this reference's object.
    ///
    /// Cancelling the calling Swift task cancels the request (the object may
    /// or may not be deleted then).
    ///
    /// ```swift
    /// try await storage.reference(withPath: "images/old.jpg").delete()
    ///
    /// // Only the version read before, never a newer one someone uploaded since:
    /// let seen = try await ref.getMetadata()
    /// try await ref.delete(preconditions: StoragePreconditions(ifGenerationMatch: seen.generation))
    /// ```
    ///
    /// On a reference pinned to a generation (``atGeneration(_:)``), only that generation is
    /// deleted: deleting a noncurrent generation leaves the live object as it is.
    ///
    /// - Parameter preconditions: Conditions the object must meet (Google Cloud Storage
    ///   endpoints only; see ``StoragePreconditions``).
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when no
    ///   object (or no such generation) exists; ``StorageErrorCode/preconditionFailed`` when a
    ///   precondition does not hold (the object stays); ``StorageErrorCode/invalidArgument`` on
    ///   the root reference, or one pinned to a generation on a Firebase endpoint;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func delete(preconditions: StoragePreconditions = .none) async throws(StorageError) {
        let (name, generation) = try validatedObject()
        try preconditions.validate(for: storage.endpoint)
        var executor = CallExecutor(storage: storage, operation: .other)
        let request = storage.objectProtocol.delete(
            bucket: storage.bucket, name: name, generation: generation, preconditions: preconditions)
        _ = try await executor.execute(
            request, idempotency: .delete(preconditions, generation: generation), accepting: [200, 204],
            about: .object(name))
    }

    /// A URL from which the object can be downloaded with a plain HTTP GET.
    ///
    /// On a Firebase endpoint this is the token URL the Firebase SDKs hand
    /// out (`…/v0/b/{bucket}/o/{path}?alt=media&token=…`), which works for
    /// anyone who has it: share it with care. When the object has no download
    /// token yet, one is created first, as Firebase does. On a Google Cloud
    /// Storage endpoint it is the object's media URL
    /// (`…/storage/v1/b/{bucket}/o/{path}?alt=media`), which serves whoever
    /// the bucket's access rules allow; on a reference pinned to a generation
    /// (``atGeneration(_:)``), the media URL of that generation (`…&generation=N`).
    ///
    /// ```swift
    /// let url = try await storage.reference(withPath: "images/space.jpg").downloadURL()
    /// print(url)
    /// ```
    ///
    /// - Returns: The download URL.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when no
    ///   object (or no such generation) exists; ``StorageErrorCode/invalidArgument`` on the root
    ///   reference, or one pinned to a generation on a Firebase endpoint;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func downloadURL() async throws(StorageError) -> URL {
        let (name, generation) = try validatedObject()
        let wire = storage.objectProtocol
        var executor = CallExecutor(storage: storage, operation: .other)
        // Read first even where no token is needed, so a missing object fails here, not at download.
        let current = try checkedGeneration(
            StorageMetadata(
                objectResource: try await executor.execute(
                    wire.getMetadata(bucket: storage.bucket, name: name, generation: generation),
                    idempotency: .idempotent, accepting: [200], about: .object(name)
                ).body))
        if let url = wire.downloadURL(bucket: storage.bucket, name: name, generation: generation, metadata: current) {
            return url
        }
        let token = UUID().uuidString.lowercased()
        guard let request = wire.addDownloadToken(bucket: storage.bucket, name: name, token: token) else {
            throw .internalError("The endpoint's protocol needs download tokens but cannot create one.")
        }
        let updated = try StorageMetadata(
            // A metadata patch without a precondition (Firebase endpoints, which retry it anyway).
            objectResource: try await executor.execute(
                request, idempotency: .conditional(precondition: nil), accepting: [200], about: .object(name)
            ).body)
        guard let url = wire.downloadURL(bucket: storage.bucket, name: name, generation: nil, metadata: updated) else {
            throw .internalError("The server did not keep the download token it was given.")
        }
        return url
    }
}
