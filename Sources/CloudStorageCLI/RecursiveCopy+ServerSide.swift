import CloudStorage

extension RecursiveCopy {
    /// `cp -r gs://B/PREFIX gs://B2/DEST`: copies every object below the source on the server,
    /// one rewrite per object, `--jobs` at a time.
    ///
    /// The destination follows the rule of the other directions: the copies go under the
    /// source's last name inside DEST when DEST ends in `/`, is the bucket, or already holds
    /// objects under `DEST/`; otherwise DEST becomes the copy.
    func copy(_ source: ObjectAddress, to destination: ObjectAddress, output: OutputWriter) async -> ExitCode {
        await command.withConnection(bucket: source.bucket) { connection in
            let target = connection.storage(for: destination.bucket)
            let objects: [ListedObject]
            var prefix: String
            do throws(StorageError) {
                objects = try await Self.objects(
                    below: source.folder(in: connection.storage), pageSize: command.pageSize)
                let name = source.folderName?.split(separator: "/").last.map(String.init) ?? source.bucket
                prefix = destination.folderName.map { $0 + "/" + name } ?? name
                if !destination.path.isEmpty && !destination.endsInSlash {
                    let page = try await destination.folder(in: target).list(maxResults: 1)
                    if page.items.isEmpty && page.prefixes.isEmpty { prefix = destination.path }
                }
            } catch {
                if error.code == .cancelled { return .interrupted }
                CopyCommand.reportFailure(error)
                return ExitCode(error)
            }
            guard !objects.isEmpty else {
                report("No objects match \(source.url)")
                return .notFound
            }
            let prefixLength = source.folderName.map { $0.utf8.count + 1 } ?? 0
            let metadata = command.write.metadata
            var failures: [Failure] = []
            var items: [StorageTransferItem] = []
            for (object, size) in objects {
                let relative = String(decoding: object.fullPath.utf8.dropFirst(prefixLength), as: UTF8.self)
                let name = prefix + "/" + relative
                do throws(StorageError) {
                    try StorageReference.validateObjectName(name)
                } catch {
                    failures.append(Failure(name: "\(object)", reason: error.message, status: .usage))
                    continue
                }
                items.append(.copy(object, to: target.reference(objectName: name), size: size, metadata: metadata))
            }
            let sizes = items.compactMap(\.size)
            return await transfer(
                items, in: connection.storage, failures: failures,
                totalBytes: sizes.count == items.count ? sizes.reduce(0, +) : nil, output: output,
                destination: "gs://\(destination.bucket)/\(prefix)/")
        }
    }
}
