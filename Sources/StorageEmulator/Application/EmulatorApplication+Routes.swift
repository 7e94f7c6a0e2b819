import HTTP1

/// The emulator's whole API surface, by protocol: each route's methods, path, what a request
/// needs to reach it (checked in one place, ``EmulatorApplication/perform(_:_:)``) and the
/// handler it reaches. How a request is matched: ``RouteTable``; path patterns: ``RoutePattern``.
extension EmulatorApplication {
    static let routes = RouteTable(
        groups: [
            controlRoutes, retryTestRoutes, signedURLRoutes, xmlMultipartRoutes, googleAuthenticationRoutes,
            firebaseRoutes,
        ],
        otherwise: gcsRoutes)

    /// The emulator's own control endpoint, which fault plans never act on.
    private static let controlRoutes = RouteTable.Group(
        .pathPrefix("/_emulator/"), flavor: .gcs, injectsFaults: false,
        [
            // Installs a fault plan that requests select with `x-emulator-faults`.
            Route("POST", "/_emulator/v1/faults", .control) { try $0.postFaultPlan($1.request, $1.body) }
        ])

    /// Google storage-testbench's retry-test API, at the testbench's paths, so that a conformance
    /// runner written for the testbench works unchanged (see ``RetryTest``). Control routes:
    /// fault plans never act on them.
    private static let retryTestRoutes = RouteTable.Group(
        .routePaths, flavor: .gcs, injectsFaults: false,
        [
            // Creates a retry test: `{"instructions": {"storage.objects.get": ["return-503"]}}`.
            Route("POST", "/retry_test", .control) { try $0.postRetryTest($1.request, $1.body) },
            // Every retry test kept.
            Route("GET", "/retry_tests", .control) { app, _ in app.listRetryTests() },
            // One retry test: what is left of its instructions, and whether it is completed.
            Route("GET", "/retry_test/{id}", .control) { try $0.getRetryTest($1.parameters.id) },
            // Deletes a retry test.
            Route("DELETE", "/retry_test/{id}", .control) { try $0.deleteRetryTest($1.parameters.id) },
        ])

    /// Cloud Storage's XML API through V4 signed URLs (`X-Goog-Signature` in the query), on any
    /// path: `/<bucket>/<object>`, or `/<object>` on `<bucket>.localhost`. XML errors.
    private static let signedURLRoutes = RouteTable.Group(
        .signedQuery, flavor: .xml,
        [
            // A resumable upload a signed POST started (or any other, as its start requires).
            .session("PUT POST DELETE", "/{path...}", unknown: unknownGCSSession, api: "storage.objects.insert") {
                try $0.gcsSession($1.request, $1.body, $2)
            },
            // GET Object (HEAD too): the object's bytes.
            .signed("GET HEAD", "/{path...}", when: .noUploadID, api: "storage.objects.get") { app, call, _ in
                try app.signedGet(call.request)
            },
            // PUT Object.
            .signed("PUT", "/{path...}", when: .noUploadID, api: "storage.objects.insert") {
                try $0.signedPut($1.request, $1.body, payloadHash: $2)
            },
            // DELETE Object.
            .signed("DELETE", "/{path...}", when: .noUploadID, api: "storage.objects.delete") { app, call, _ in
                try app.signedDelete(call.request)
            },
            // POST Object with `x-goog-resumable: start`: a resumable upload.
            .signed("POST", "/{path...}", when: .noUploadID, api: "storage.objects.insert") { app, call, _ in
                try app.signedStartSession(call.request)
            },
        ])

    /// Cloud Storage's XML API multipart uploads, with the JSON API's credentials, at
    /// `/<bucket>/<object>` (see ``EmulatorApplication/xmlInitiateMultipart(_:bucket:name:)``). XML errors.
    private static let xmlMultipartRoutes = RouteTable.Group(
        .multipartQuery, flavor: .xml,
        [
            // Initiate: `POST ?uploads`.
            Route("POST", "/{bucket}/{name...}", .gcs, when: .multipartUploads) {
                try $0.xmlInitiateMultipart($1.request, bucket: $1.bucket, name: $1.name)
            },
            // The bucket's uploads in progress: `GET /<bucket>?uploads`.
            Route("GET", "/{bucket}/?", .gcs, when: .multipartUploads) {
                try $0.xmlListMultipartUploads($1.request, bucket: $1.bucket)
            },
            // Upload part: `PUT ?partNumber=&uploadId=`.
            Route("PUT", "/{bucket}/{name...}", .gcs, when: .multipartUploadID) {
                try $0.xmlUploadPart($1.request, $1.body, bucket: $1.bucket, name: $1.name)
            },
            // Complete: `POST ?uploadId=` with a CompleteMultipartUpload document.
            Route("POST", "/{bucket}/{name...}", .gcs, when: .multipartUploadID) {
                try $0.xmlCompleteMultipart($1.request, $1.body, bucket: $1.bucket, name: $1.name)
            },
            // Abort: `DELETE ?uploadId=`.
            Route("DELETE", "/{bucket}/{name...}", .gcs, when: .multipartUploadID) {
                try $0.xmlAbortMultipart($1.request, bucket: $1.bucket, name: $1.name)
            },
            // List parts: `GET ?uploadId=`.
            Route("GET", "/{bucket}/{name...}", .gcs, when: .multipartUploadID) {
                try $0.xmlListParts($1.request, bucket: $1.bucket, name: $1.name)
            },
        ])

    /// Google's authentication servers, on the emulator's port (see
    /// ``StorageEmulator/Configuration/authentication``); each checks its callers itself.
    private static let googleAuthenticationRoutes = RouteTable.Group(
        .routePaths, flavor: .gcs,
        [
            // OAuth 2.0 token endpoint: jwt-bearer and refresh-token grants.
            Route("POST", "/token", .open, when: .authenticationService) { try $0.tokenEndpoint($1.request, $1.body) },
            // Compute Engine metadata server (its own answers to other paths and methods).
            Route("*", "/computeMetadata/{path...}", .open) { try $0.metadataServer($1.request) },
            // The metadata server's root, where Google's clients probe for it.
            Route("*", "/", .open) { try $0.metadataServer($1.request) },
            // IAM Credentials projects.serviceAccounts.signBlob (its own answers to other paths and methods).
            Route("*", "/v1/projects/{path...}", .open) { try $0.signBlob($1.request, $1.body) },
        ])

    /// Firebase Storage v0, as the Firebase client SDKs speak it.
    private static let firebaseRoutes = RouteTable.Group(
        .pathPrefix("/v0/"), flavor: .firebase,
        [
            // A resumable upload's command (upload, finalize, query, cancel).
            .session("POST", "/v0/b/{bucket}/o", unknown: unknownFirebaseSession) {
                try $0.firebaseSessionCommand($1.request, $1.body, $2)
            },
            // Upload: resumable start, multipart or raw.
            Route("POST", "/v0/b/{bucket}/o", .firebase) {
                try $0.firebaseUpload($1.request, $1.body, bucket: $1.bucket)
            },
            // List: prefixes and items under a prefix.
            Route("GET", "/v0/b/{bucket}/o", .firebase) { try $0.firebaseList($1.request, bucket: $1.bucket) },
            // Get metadata, or with `alt=media` download (a download token stands in for credentials).
            Route("GET HEAD", "/v0/b/{bucket}/o/{name...}", .firebaseOrDownloadToken, media: .withAltMedia) {
                try $0.firebaseGetObject($1.request, bucket: $1.bucket, name: $1.name)
            },
            // Update metadata.
            Route("PATCH PUT", "/v0/b/{bucket}/o/{name...}", .firebase) {
                try $0.firebaseUpdateObject($1.request, $1.body, bucket: $1.bucket, name: $1.name)
            },
            // Delete.
            Route("DELETE", "/v0/b/{bucket}/o/{name...}", .firebase) {
                try $0.firebaseDeleteObject(bucket: $1.bucket, name: $1.name)
            },
        ])

    /// The Cloud Storage JSON API: every request that no other group claims.
    private static let gcsRoutes = RouteTable.Group(
        .routePaths, flavor: .gcs,
        [
            // A resumable upload session's requests (Content-Range), its status, or its cancellation.
            // They count as objects.insert, as the testbench counts them.
            .session(
                "PUT POST DELETE", "/upload/storage/v1/b/{bucket}/o", unknown: unknownGCSSession,
                api: "storage.objects.insert"
            ) {
                try $0.gcsSession($1.request, $1.body, $2)
            },
            // objects.insert: media, multipart, or a resumable session's start.
            Route("POST", "/upload/storage/v1/b/{bucket}/o", .gcs, api: "storage.objects.insert") {
                try $0.gcsUpload($1.request, $1.body, bucket: $1.bucket)
            },
            // The same two where gcloud starts resumable uploads; Cloud Storage serves both paths.
            .session(
                "PUT POST DELETE", "/resumable/upload/storage/v1/b/{bucket}/o", unknown: unknownGCSSession,
                api: "storage.objects.insert"
            ) {
                try $0.gcsSession($1.request, $1.body, $2)
            },
            Route("POST", "/resumable/upload/storage/v1/b/{bucket}/o", .gcs, api: "storage.objects.insert") {
                try $0.gcsUpload($1.request, $1.body, bucket: $1.bucket)
            },
            // buckets.list.
            Route("GET", "/storage/v1/b/?", .gcs, api: "storage.buckets.list") { try $0.gcsListBuckets($1.request) },
            // buckets.insert.
            Route("POST", "/storage/v1/b/?", .gcs, api: "storage.buckets.insert") {
                try $0.gcsCreateBucket($1.request, $1.body)
            },
            // buckets.get.
            Route("GET HEAD", "/storage/v1/b/{bucket}", .gcs, api: "storage.buckets.get") {
                try $0.gcsGetBucket($1.request, bucket: $1.bucket)
            },
            // buckets.patch (versioning).
            Route("PATCH", "/storage/v1/b/{bucket}", .gcs, api: "storage.buckets.patch") {
                try $0.gcsUpdateBucket($1.request, $1.body, bucket: $1.bucket)
            },
            // buckets.update: the settings the body leaves out are reset.
            Route("PUT", "/storage/v1/b/{bucket}", .gcs, api: "storage.buckets.update") {
                try $0.gcsUpdateBucket($1.request, $1.body, bucket: $1.bucket)
            },
            // buckets.delete.
            Route("DELETE", "/storage/v1/b/{bucket}", .gcs, api: "storage.buckets.delete") {
                try $0.gcsDeleteBucket($1.request, bucket: $1.bucket)
            },
            // buckets.getStorageLayout, which gcloud reads before `mv` and `rm -r`.
            Route("GET", "/storage/v1/b/{bucket}/storageLayout", .gcs, api: "storage.buckets.getStorageLayout") {
                try $0.gcsBucketListing($1.bucket, .storageLayout)
            },
            // managedFolders.list, which gcloud reads before `rm -r`.
            Route("GET", "/storage/v1/b/{bucket}/managedFolders", .gcs, api: "storage.managedFolders.list") {
                try $0.gcsBucketListing($1.bucket, .managedFolders)
            },
            // objects.list.
            Route("GET", "/storage/v1/b/{bucket}/o", .gcs, api: "storage.objects.list") {
                try $0.gcsList($1.request, bucket: $1.bucket)
            },
            // objects.copy, objects.rewrite, objects.compose and objects.move: POSTs under an object's path.
            Route("POST", "/storage/v1/b/{bucket}/o/{operation...}", .gcs, api: .objectOperation) {
                try $0.gcsObjectOperation($1.request, $1.body, bucket: $1.bucket, try $1.operation())
            },
            // objects.get: the resource, or with `alt=media` the bytes.
            Route(
                "GET HEAD", "/storage/v1/b/{bucket}/o/{name...}", .gcs, media: .withAltMedia, api: "storage.objects.get"
            ) {
                try $0.gcsGetObject($1.request, bucket: $1.bucket, name: $1.name)
            },
            // objects.patch.
            Route("PATCH", "/storage/v1/b/{bucket}/o/{name...}", .gcs, api: "storage.objects.patch") {
                try $0.gcsUpdateObject($1.request, $1.body, bucket: $1.bucket, name: $1.name)
            },
            // objects.update: the metadata the body leaves out is removed.
            Route("PUT", "/storage/v1/b/{bucket}/o/{name...}", .gcs, api: "storage.objects.update") {
                try $0.gcsUpdateObject($1.request, $1.body, bucket: $1.bucket, name: $1.name)
            },
            // objects.delete.
            Route("DELETE", "/storage/v1/b/{bucket}/o/{name...}", .gcs, api: "storage.objects.delete") {
                try $0.gcsDeleteObject($1.request, bucket: $1.bucket, name: $1.name)
            },
            // objects.get with alt=media at the download host's path.
            Route(
                "GET", "/download/storage/v1/b/{bucket}/o/{name...}", .gcs, media: .always, api: "storage.objects.get"
            ) {
                try $0.gcsDownload($1.request, bucket: $1.bucket, name: $1.name)
            },
        ])
}
