import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bad input and refused requests end in a specific error and store nothing, on
/// each route (the checks made before any request included: the transport
/// must not change which error wins). The case about plain HTTP itself runs on the
/// plain routes (``TestRoute/plain``).
@Suite("Upload errors", .timeLimit(.minutes(10)))
struct UploadErrorTests {
    static func failure(of task: StorageUploadTask) async -> StorageError? {
        do {
            _ = try await task.value
            return nil
        } catch {
            #expect(task.snapshot.status == .failure)
            #expect(task.snapshot.error?.code == error.code)
            return error
        }
    }

    @Test(arguments: TestRoute.all)
    func aMissingFileIsUnreadableAndNamed(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "err", route: route)
        let path = "/nonexistent-\(UUID().uuidString)/file.bin"
        let error = await Self.failure(of: storage.reference(withPath: "a").putFile(from: URL(fileURLWithPath: path)))
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("does not exist") == true)
    }

    @Test(arguments: TestRoute.all)
    func aDirectoryIsNotAFileToUpload(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "err", route: route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = await Self.failure(of: storage.reference(withPath: "a").putFile(from: directory))
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains("directory") == true)
    }

    @Test(.enabled(if: getuid() != 0, "root reads any file"), arguments: TestRoute.all)
    func anUnreadableFileIsReported(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "err", route: route)
        let file = try TestSupport.file(containing: Data("secret".utf8))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        chmod(file.path, 0)
        let error = await Self.failure(of: storage.reference(withPath: "a").putFile(from: file))
        #expect(error?.code == .unreadableFile)
    }

    @Test(arguments: TestRoute.all)
    func theRootReferenceCannotBeUploadedTo(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "err", route: route)
        let error = await Self.failure(of: storage.reference().putData(Data("x".utf8)))
        #expect(error?.code == .invalidArgument)
    }

    @Test(
        arguments: TestRoute.all,
        [String(repeating: "a", count: 1025), "line\nbreak", "carriage\rreturn", String(repeating: "é", count: 513)])
    func invalidObjectNamesFailWithPathError(route: TestRoute, path: String) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "err", route: route)
        let error = await Self.failure(of: storage.reference(withPath: path).putData(Data("x".utf8)))
        #expect(error?.code == .pathError)
        #expect(await TestSupport.isAbsent(path, in: storage, server: server))
    }

    @Test(arguments: [0, 1000, 256 * 1024 + 1, -262_144, .max] as [Int64])
    func anInvalidChunkSizeIsRejectedWhereItIsSet(chunkSize: Int64) throws {
        var configuration = StorageConfiguration()
        try configuration.uploads.setChunkSize(512 * 1024)
        let error = #expect(throws: StorageError.self) { try configuration.uploads.setChunkSize(chunkSize) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("256 KiB") == true)
        #expect(configuration.uploads.chunkSize == Int64(512 * 1024), "a refused size changes nothing")
        try configuration.uploads.setChunkSize(nil)
        #expect(configuration.uploads.chunkSize == nil)
    }

    @Test(arguments: TestRoute.all, [100, 20 * 1024 * 1024])
    func aMissingBucketIsReported(route: TestRoute, size: Int) async throws {
        let server = try await FakeGCSServer.shared()
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        let storage = Storage(
            bucket: TestSupport.bucketName("missing"), endpoint: .gcs(try TestSupport.fakeGCSBaseURL(server, route)),
            configuration: configuration)
        let error = await Self.failure(of: storage.reference(withPath: "a").putData(Data(count: size)))
        #expect(error?.code == .bucketNotFound)
        #expect(error?.httpStatus == 404)
    }

    @Test(arguments: TestRoute.plain)
    func credentialsAreNeverSentOverPlainHTTPToAnotherMachine(route: TestRoute) async throws {
        // `.invalid` never resolves, and the check runs before any connection is made.
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        let storage = Storage(
            bucket: "b",
            endpoint: .gcs(URL(string: "http://storage.example.invalid:4443")!),
            authorization: .bearerToken("secret-token"),
            configuration: configuration
        )
        let error = await Self.failure(of: storage.reference(withPath: "a").putData(Data("x".utf8)))
        #expect(error?.code == .invalidArgument)
        #expect(error?.description.contains("secret-token") == false)
        #expect(error?.message.contains("plain HTTP") == true)
    }

    @Test(arguments: TestRoute.all)
    func aFileTruncatedMidUploadFailsAndStoresNothing(route: TestRoute) async throws {
        try await UploadTaskControlTests.withHeldUpload(route: route) { storage, emulator in
            let file = try TestSupport.file(containing: TestSupport.payload(size: 4 * .mebibyte, seed: 21))
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "changed/truncated")
            let task = ref.putFile(from: file)
            // The emulator holds the second chunk, so the upload cannot end before the change;
            // a pause ends the held request and the resume reads the file again.
            try await UploadTaskControlTests.waitUntilHeld(emulator)
            #expect(truncate(file.path, 1024 * 1024) == 0)
            await task.pause()
            await task.resume()
            let error = await Self.failure(of: task)
            #expect(error?.code == .fileChanged)
            #expect(error?.message.contains(file.path) == true)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test(arguments: TestRoute.all)
    func aFileRewrittenMidUploadFailsAndStoresNothing(route: TestRoute) async throws {
        try await UploadTaskControlTests.withHeldUpload(route: route) { storage, emulator in
            let file = try TestSupport.file(containing: TestSupport.payload(size: 4 * .mebibyte, seed: 22))
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "changed/rewritten")
            let task = ref.putFile(from: file)
            // The emulator holds the second chunk, so the upload cannot end before the change;
            // a pause ends the held request and the resume reads the file again.
            try await UploadTaskControlTests.waitUntilHeld(emulator)
            let handle = try FileHandle(forWritingTo: file)
            try handle.write(contentsOf: Data(repeating: 0xAB, count: 4096))
            try handle.close()
            await task.pause()
            await task.resume()
            let error = await Self.failure(of: task)
            #expect(error?.code == .fileChanged)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test(arguments: TestRoute.all)
    func aFileDeletedMidUploadFails(route: TestRoute) async throws {
        try await UploadTaskControlTests.withHeldUpload(route: route) { storage, emulator in
            let file = try TestSupport.file(containing: TestSupport.payload(size: 4 * .mebibyte, seed: 23))
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let ref = storage.reference(withPath: "changed/deleted")
            let task = ref.putFile(from: file)
            // The emulator holds the second chunk, so the upload cannot end before the change;
            // a pause ends the held request and the resume reads the file again.
            try await UploadTaskControlTests.waitUntilHeld(emulator)
            try FileManager.default.removeItem(at: file)
            await task.pause()
            await task.resume()
            let error = await Self.failure(of: task)
            #expect(error?.code == .fileChanged)
            #expect(error?.message.contains("disappeared") == true)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }
}
